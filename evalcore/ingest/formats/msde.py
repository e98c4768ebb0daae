"""`import msde`: the MSDE release (github IRIP-LLM/MSDE), one folder per competition and corpus.

Each `<model>.xlsx` has a generation sheet (History, response), a human-score sheet (30 rated
rows and a last row of column means) and a one-row automatic-metrics sheet. Sheets are found
by what they hold, not by name: one release file names its generation sheet 大模型生成解雇.

Known quirks, all handled: the LCCC human sheet's score columns are unnamed (they are Info
and Coh); the Know header is misspelt 'Konw.'; some generation rows are empty (an empty
response) or have no History (the system speaks first); a rated row may have a response
that is not in the generation sheet (kept as its own item); the automatic sheet's f1 is x100.
"""
from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
from tqdm import tqdm

from evalcore.core import lazy
from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.ingest import lookup, strictjson
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.checker import decimal
from evalcore.ingest.encodings import sniff_encoding
from evalcore.ingest.jsonread import parse_json

# imported when a workbook is read (xlsx files only): the Upload page and every import command import this module,
# and openpyxl took 0.13 CPU-s of each
openpyxl = lazy.module("openpyxl")

DATASET = "msde"
ANNOTATOR = "msde-release"
SCALE = (0.0, 2.0)
COMPETITIONS = {"lic2021": "lic2021", "ccfluge": "luge", "luge": "luge"}
CORPUS_SKILL = {"cpc": "persona", "duconv": "knowledge", "durecdial": "recommendation", "lccc": "chitchat"}
DIMENSIONS = {  # name -> (header fragments, description)
    "Info": (("info", "丰富"), "丰富度 informativeness"),
    "Coh": (("coh", "连贯"), "连贯性 coherence"),
    "Know": (("know", "konw", "知识"), "知识准确性 knowledge accuracy"),
    "Rec": (("rec", "推荐"), "推荐成功率 recommendation success"),
}
UNNAMED_DIMENSIONS = ("Info", "Coh")  # the LCCC sheet leaves its two score headers empty
# Automatic-sheet header -> (stored name, factor). Names follow the paper's Tables 4-9; columns the
# paper does not show keep the release's own name under 'release.'.
AUTO_COLUMNS = {
    "f1": ("F1", 0.01), "bleu1(略)": ("BLEU1", 1), "bleu2(略)": ("BLEU2", 1),
    "distinct1": ("DIST1", 1), "distinct2": ("DIST2", 1), "meteor": ("METEOR", 1),
    "rouge1": ("ROUGE", 1), "cider": ("CIDEr", 1), "st": ("ST", 1), "bleurt": ("BLEURT", 1),
    "ea(embeddingaveragecosinesimilarity)": ("EV", 1), "ve(vectorextremacosinesimilarity)": ("VE", 1),
    "gm(greedymatchingscore)": ("GM", 1), "bert-score: p": ("BS-P", 1), "bert-score: r": ("BS-R", 1),
    "bert-score: f1": ("BS-F1", 1), "score": ("release.score", 1),
    "bleu1": ("release.bleu1", 1), "bleu2": ("release.bleu2", 1),
    "bleu3": ("release.bleu3", 1), "bleu4": ("release.bleu4", 1),
}
MODEL_NAMES = {
    "baichuan": "Baichuan2-7B-chat (MSDE paper model 11)",
    "qianwen": "Qwen-7B-chat (MSDE paper model 12)",
    "llama": "Llama3-8B-chinese-chat (MSDE paper model 13)",
    "chatglm": "Chatglm4-9B (MSDE paper model 14)",
}


@dataclass
class Workbook:
    file: str
    model: str
    generation: list[tuple]          # (history, response) per data row
    human: list[tuple]               # (excel row, history, response, {dim: score})
    automatic: dict[str, float]      # stored name -> value
    problems: list[Problem] = field(default_factory=list)


def track_of(folder: str) -> tuple[str, str, str]:
    """'Lic 2021_CPC' -> ('lic2021/persona', 'lic2021', 'CPC')."""
    comp, _, corpus = folder.rpartition("_")
    competition = COMPETITIONS.get(re.sub(r"\s+", "", comp).lower())
    skill = CORPUS_SKILL.get(corpus.lower())
    if not competition or not skill:
        raise ImportRefused([Problem(folder, "", "", "a folder named <competition>_<corpus> with competition "
                                     "'Lic 2021' or 'CCF LUGE' and corpus CPC, DuConv, DuRecDial or LCCC", repr(folder))])
    return f"{competition}/{skill}", competition, corpus


def _number(value) -> float | None:
    """A cell's number: a spreadsheet number, or text in plain decimal (checker.decimal: not '1_0', not 'nan')."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return decimal(value) if isinstance(value, str) else None


def _text(value) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def read_workbook(path: Path) -> Workbook:
    name = str(path)
    try:
        wb = openpyxl.load_workbook(path, read_only=True)
    except Exception as exc:  # openpyxl raises many types for a broken file
        raise ImportRefused([Problem(name, "", "", "an .xlsx workbook", f"unreadable ({type(exc).__name__})")]) from exc
    try:
        sheets = [(ws.title, list(ws.iter_rows(values_only=True))) for ws in wb.worksheets]
    finally:
        wb.close()
    book = Workbook(name, path.stem.lower(), [], [], {})
    roles: dict[str, tuple[str, list]] = {}
    for title, rows in sheets:
        role = _role(rows)
        if role and role not in roles:
            roles[role] = (title, rows)
    missing = [r for r in ("generation", "human", "automatic") if r not in roles]
    if missing:
        found = ", ".join(repr(t) for t, _ in sheets)
        raise ImportRefused([Problem(name, "", "", f"a {missing[0]} sheet (sheets found: {found})", "none")])
    _read_generation(book, *roles["generation"])
    _read_human(book, *roles["human"])
    _read_automatic(book, *roles["automatic"])
    if book.problems:
        raise ImportRefused(book.problems)
    return book


def _role(rows: list[tuple]) -> str | None:
    if not rows:
        return None
    header = [str(h).strip().lower() if h is not None else "" for h in rows[0]]
    if header[:2] != ["history", "response"]:
        return "automatic" if "f1" in header else None
    return "human" if len(header) > 2 else "generation"


def _read_generation(book: Workbook, title: str, rows: list[tuple]) -> None:
    body = list(rows[1:])
    while body and all(c is None for c in body[-1]):
        body.pop()  # trailing blank rows are formatting, not responses
    for i, row in enumerate(body, start=2):
        history, response = (_text(row[0]), _text(row[1])) if len(row) >= 2 else (None, None)
        book.generation.append((history, response if response is not None else ""))


def _read_human(book: Workbook, title: str, rows: list[tuple]) -> None:
    header = rows[0]
    dims, unnamed = [], iter(UNNAMED_DIMENSIONS)
    for col, h in enumerate(header[2:], start=2):
        text = str(h).strip().lower() if h is not None else ""
        if not text:
            dim = next(unnamed, None)
        else:
            dim = next((d for d, (frags, _) in DIMENSIONS.items() if any(f in text for f in frags)), None)
        if dim is None:
            book.problems.append(Problem(book.file, f"sheet {title} row 1", str(h),
                                         "a score column for " + ", ".join(DIMENSIONS), "an unknown header"))
            continue
        dims.append((col, dim))
    body = list(rows[1:])
    while body and all(c is None for c in body[-1]):
        body.pop()
    if not body or body[-1][0] is not None or body[-1][1] is not None:
        book.problems.append(Problem(book.file, f"sheet {title} row {len(body) + 1}", "History",
                                     "a last row of column means with empty History and response", "a rated row"))
        return
    for excel_row, row in enumerate(body[:-1], start=2):
        scores = {}
        for col, dim in dims:
            value = row[col] if col < len(row) else None
            if value is None or (isinstance(value, str) and not value.strip()):
                continue
            score = _number(value)
            if score is None or not SCALE[0] <= score <= SCALE[1]:
                book.problems.append(Problem(book.file, f"sheet {title} row {excel_row}", dim,
                                             f"a score from {SCALE[0]:g} to {SCALE[1]:g} or an empty cell", short(value)))
                continue
            scores[dim] = score
        book.human.append((excel_row, _text(row[0]), _text(row[1]) or "", scores))


def _read_automatic(book: Workbook, title: str, rows: list[tuple]) -> None:
    header = [str(h).strip().lower() if h is not None else "" for h in rows[0]]
    data = [r for r in rows[1:] if any(c is not None for c in r)]
    if len(data) != 1:
        book.problems.append(Problem(book.file, f"sheet {title}", "", "one row of corpus-level metrics", f"{len(data)} rows"))
        return
    for col, h in enumerate(header):
        if h not in AUTO_COLUMNS:
            book.problems.append(Problem(book.file, f"sheet {title} row 1", h,
                                         "a known metric column: " + ", ".join(AUTO_COLUMNS), "an unknown header"))
            continue
        value = data[0][col]
        number = _number(value)
        if number is None or not math.isfinite(number):
            book.problems.append(Problem(book.file, f"sheet {title} row 2", h, "a number", short(value)))
            continue
        stored, factor = AUTO_COLUMNS[h]
        book.automatic[stored] = round(number * factor, 10)


def import_msde(con: duckdb.DuckDBPyConnection, root: str | Path, *, progress: bool = True) -> ImportReport:
    root = Path(root)
    data = root / "data" if (root / "data").is_dir() else root
    folders = sorted(p for p in data.iterdir() if p.is_dir()) if data.is_dir() else []
    if not folders:
        raise ImportRefused([Problem(str(root), "", "", "the MSDE release: folders like 'Lic 2021_CPC' holding "
                                     "<model>.xlsx", "no folders")])
    if lookup.tracks_of(con, DATASET):
        raise ImportRefused([Problem(str(root), "", "--db", f"a store without dataset {DATASET!r}", "it is already imported")])
    files = [(folder, x) for folder in folders for x in sorted(folder.glob("*.xlsx")) if not x.name.startswith("~$")]
    books: dict[Path, list[Workbook]] = defaultdict(list)
    problems: list[Problem] = []
    for folder, path in tqdm(files, desc="reading MSDE workbooks", unit="file", disable=not progress):
        try:
            track_of(folder.name)
            books[folder].append(read_workbook(path))
        except ImportRefused as exc:
            problems += exc.problems
    if problems:
        raise ImportRefused(problems)
    batch = Batch()
    batch.dataset(DATASET, language="zh", licence="none stated",
                  source="github.com/IRIP-LLM/MSDE",
                  description="MSDE release: LLM responses, 30 human-rated rows per model and track, published metrics")
    for dim, (_, desc) in DIMENSIONS.items():
        batch.add("dimensions", dataset=DATASET, dimension=dim, scale_min=SCALE[0], scale_max=SCALE[1], description=desc)
    stats = defaultdict(int)
    for folder, track_books in books.items():
        _add_track(batch, folder, track_books, stats, problems)
    if problems:
        raise ImportRefused(problems)
    report = ImportReport(str(root), batch.write(con, source=str(root)))
    report.notes.append(
        f"{len(files)} workbooks; {stats['rated']} human-rated rows: {stats['linked']} linked to generation items "
        f"({stats['ambiguous']} of them to one of several identical rows), {stats['own']} kept as their own items"
    )
    if stats["cpc_mismatch"]:
        report.notes.append(f"{stats['cpc_mismatch']} CPC rows whose JSONL history differs from the sheet's History")
    return report


def _add_track(batch: Batch, folder: Path, books: list[Workbook], stats: dict, problems: list[Problem]) -> None:
    track, competition, corpus = track_of(folder.name)
    batch.track(DATASET, track, corpus=corpus)
    first = books[0]
    for book in books[1:]:
        if len(book.generation) != len(first.generation):
            problems.append(Problem(book.file, "", "History",
                                    f"{len(first.generation)} generation rows like {Path(first.file).name}",
                                    f"{len(book.generation)}"))
            return
        for i, ((h1, _), (h2, _)) in enumerate(zip(first.generation, book.generation)):
            if h1 != h2:
                problems.append(Problem(book.file, f"generation row {i + 2}", "History",
                                        f"the same History as {Path(first.file).name}", short(h2)))
                return
    source = _source_rows(folder, len(first.generation), problems)
    prefix = f"{competition}-{corpus}"
    for n, (history, _) in enumerate(first.generation, start=1):
        item_id = f"{prefix}-{n:05d}"
        context, grounding, refs = ([history] if history else []), None, []
        if source is not None:
            src = source[n - 1]
            if " ".join(src.get("history", [])) != (history or ""):
                stats["cpc_mismatch"] += 1
            context = list(src.get("history", [])) or context
            refs = [src["response"]] if src.get("response") else []
            grounding = {k: v for k, v in (("persona", list((src.get("profile") or {}).values())),
                                           ("knowledge", src.get("knowledge") or []),
                                           ("goal", src.get("goal") or [])) if v} or None
        batch.add("items", dataset=DATASET, item_id=item_id, track=track, dialogue_id=None, turn_index=None,
                  context=json.dumps(context, ensure_ascii=False),
                  grounding=json.dumps(grounding, ensure_ascii=False) if grounding else None,
                  skill=CORPUS_SKILL[corpus.lower()], origin=f"{folder.name} generation row {n + 1}")
        for i, ref in enumerate(refs):
            batch.add("item_references", dataset=DATASET, item_id=item_id, ref_index=i, text=ref)
    for book in books:
        batch.model(book.model, MODEL_NAMES.get(book.model))
        name = Path(book.file).name
        free = defaultdict(list)  # (history, response) -> unused generation rows, in order
        for n, (history, response) in enumerate(book.generation, start=1):
            batch.add("responses", dataset=DATASET, item_id=f"{prefix}-{n:05d}", model=book.model, text=response,
                      origin=f"{folder.name}/{name} row {n + 1}")
            free[(history, response)].append(n)
        for excel_row, history, response, scores in book.human:
            stats["rated"] += 1
            rows = free.get((history, response))
            rated_text = None
            if rows:
                stats["ambiguous"] += len(rows) > 1
                stats["linked"] += 1
                item_id = f"{prefix}-{rows.pop(0):05d}"
            else:
                stats["own"] += 1
                item_id = f"{prefix}-{book.model}-rated-{excel_row:02d}"
                rated_text = response
                batch.add("items", dataset=DATASET, item_id=item_id, track=track, dialogue_id=None, turn_index=None,
                          context=json.dumps([history] if history else [], ensure_ascii=False), grounding=None,
                          skill=CORPUS_SKILL[corpus.lower()], origin=f"{folder.name}/{name} human sheet row {excel_row}")
            for dim, score in scores.items():
                batch.add("human_ratings", dataset=DATASET, track=track, target="response", item_id=item_id,
                          dialogue_id=None, model=book.model, annotator=ANNOTATOR, dimension=dim, score=score,
                          rated_response=rated_text, origin=f"{folder.name}/{name} human sheet row {excel_row}")
        for metric, value in book.automatic.items():
            batch.add("system_scores", dataset=DATASET, track=track, model=book.model, name=metric, value=value,
                      origin="published", signature="", source=f"{folder.name}/{name} automatic sheet")


def _source_rows(folder: Path, n_rows: int, problems: list[Problem]) -> list[dict] | None:
    """The corpus JSONL released beside the workbooks (only CPC has one), aligned row by row."""
    path = folder / f"{folder.name}.txt"
    if not path.is_file():
        return None
    rows = []
    decoder = strictjson.Decoder()
    for lineno, line in enumerate(path.read_text(encoding=sniff_encoding(path, str(path), kind="jsonl")).splitlines(), start=1):
        if not line.strip():
            continue
        try:   # as every JSONL file is read: a key twice, a number too large, a lone surrogate are refused
            rows.append(parse_json(line, str(path), "one JSON object per line", f"line {lineno}", lineno, decoder))
        except ImportRefused as exc:
            problems += exc.problems
            return None
    if len(rows) != n_rows:
        problems.append(Problem(str(path), "", "", f"{n_rows} lines, one per generation row", f"{len(rows)}"))
        return None
    return rows


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_msde(con, args.dir)
