"""`import dstc11`: a DSTC11 Track 4 (robust and multilingual dialogue evaluation metrics) turn-level file, as the
track's baseline builds it from a DSTC10 turn-level file and its translations (DSTC11-Benchmark,
add_trans-paraphrase_data.py: <name>_eval_zh_es_pa.json): a JSON list of DSTC10 entries (dialogue_id, model,
context with its turns joined by "\\n", response, reference, annotations {dimension: [one score per annotator]}),
each with context_zh / response_zh (machine-translated Chinese), context_es / response_es (Spanish) and
context_pa / response_pa (an English paraphrase, Task 2).

--text picks the texts: zh (the default), es, pa, or en (the original context and response). The entries are then
imported as a DSTC10 file by import_dstc10, whose rules hold (one transaction; items per dialogue context; human
ratings by annotator position a1, a2, ...; --scale for dimensions the dataset lacks). The references are English:
they are kept with en and pa, and left out with zh and es (a reference in another language than the response is
not one). An entry without dialogue_id is numbered by its position (e1, e2, ...); one without a model takes
--model. Problems name the file, the entry's line and position, and the field as the file spells it.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import duckdb

from evalcore.core.errors import ImportRefused, Problem
from evalcore.ingest.batch import ImportReport
from evalcore.ingest.formats.dstc10 import import_dstc10, read_json_list
from evalcore.ingest.formats.ratings import scales

SHAPE = ("a JSON list of DSTC10 entries with translations (DSTC11 Track 4: context, response, context_zh, "
         "response_zh, ..., annotations)")
TEXTS = {"zh": ("context_zh", "response_zh"), "es": ("context_es", "response_es"),
         "pa": ("context_pa", "response_pa"), "en": ("context", "response")}
LANGUAGES = {"zh": "zh", "es": "es", "pa": "en", "en": "en"}


def import_dstc11(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str, text: str = "zh",
                  model: str | None = None, scales: dict[str, tuple[float, float]] | None = None,
                  missing: list[str] | None = None) -> ImportReport:
    path = Path(path)
    file = str(path)
    if text not in TEXTS:
        raise ImportRefused([Problem(file, "", "--text", "one of " + ", ".join(TEXTS), repr(text))])
    context_key, response_key = TEXTS[text]
    entries, _, lines = read_json_list(path, SHAPE)
    converted = []
    numbered = dropped = 0
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            converted.append(entry)   # import_dstc10 names it
            continue
        out = {"dialogue_id": entry.get("dialogue_id"), "model": entry.get("model", model),
               "context": entry.get(context_key), "response": entry.get(response_key),
               "annotations": entry.get("annotations")}
        if out["dialogue_id"] is None:
            out["dialogue_id"] = f"e{i + 1}"
            numbered += 1
        reference = entry.get("reference")
        if isinstance(reference, str):   # some DSTC10 files give one reference as a string
            reference = [reference]
        if text in ("en", "pa"):
            out["reference"] = reference
        elif reference:
            dropped += 1
        converted.append(out)
    fields = {"context": context_key, "response": response_key, "model": "model" if model is None else "model (or --model)"}
    with tempfile.TemporaryDirectory(prefix="evalcore-dstc11-") as tmp:
        temp = Path(tmp) / path.name
        temp.write_text(_aligned(converted, lines), encoding="utf-8")
        try:
            report = import_dstc10(con, temp, dataset=dataset, track=track, language=LANGUAGES[text],
                                   scales=scales, missing=missing, shown=file)
        except ImportRefused as exc:
            raise ImportRefused([_named(p, str(temp), file, fields) for p in exc.problems]) from None
    report.file = file
    report.notes = [n for n in report.notes if not n.startswith("read as")]
    report.notes.insert(0, f"texts {context_key} and {response_key} ({LANGUAGES[text]})")
    if numbered:
        report.notes.append(f"{numbered:,} entries without dialogue_id numbered by position (e1, e2, ...)")
    if dropped:
        report.notes.append(f"{dropped:,} entries' English references left out (the texts are {text})")
    return report


def _aligned(entries: list, lines: list[int]) -> str:
    """The entries as a JSON list in which each begins on the line its source entry began on, so that the places
    import_dstc10 names and stores (line and position) are the source's."""
    text: list[list[str]] = [["["]]   # each line's parts, joined once at the end (a compact file is one long line)
    for k, (entry, line) in enumerate(zip(entries, lines)):
        part = ("," if k else "") + json.dumps(entry, ensure_ascii=False)
        if len(text) < line:
            text += [[] for _ in range(line - 1 - len(text))]
            text.append([part])
        else:   # entries that began on one line (a compact file) stay on it
            text[-1].append(part)
    return "\n".join("".join(parts) for parts in text) + "\n]\n"


def _named(problem: Problem, temp: str, file: str, fields: dict[str, str]) -> Problem:
    """A problem of the converted file, told in the source's terms: its name and the field as it spells it."""
    if problem.file != temp:
        return problem
    head, dot, rest = problem.field.partition(".")
    return Problem(file, problem.where, fields.get(head, head) + dot + rest, problem.expected, problem.got)


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_dstc11(con, args.file, dataset=args.dataset, track=args.track, text=args.text, model=args.model,
                         scales=scales(args.scale), missing=args.missing)
