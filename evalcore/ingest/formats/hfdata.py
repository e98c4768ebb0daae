"""`import hf`: a Hugging Face dataset saved with `save_to_disk` (a folder: state.json naming its Arrow files,
dataset_info.json; or a DatasetDict's folder: dataset_dict.json and one such folder per split), a Parquet file or a
JSONL file, its columns mapped to evalcore's by --columns (item_id=id,response=output,model=system).

The mapped rows are written as a responses file (response mapped) or a ratings file (annotator, dimension and score
mapped, no response) and imported by import_responses or import_ratings, so their rules are the one set: one
transaction, the whole file refused on any problem. Problems name the source file, its row (the dataset's rows
counted from 1, their index beside) or line (JSONL), and the source column. A dataset that holds responses and
ratings is imported twice: the responses first, then the ratings, each time mapping only the columns it needs.
The Arrow files are read with pyarrow (the `datasets` package is not needed).
"""
from __future__ import annotations

import json
import math
import re
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.ingest.batch import ImportReport
from evalcore.ingest.formats.ratings import import_ratings, scales
from evalcore.ingest.formats.responses import import_responses
from evalcore.ingest.limits import limit
from evalcore.ingest.readers import read_table

TARGETS = ("item_id", "response", "model", "track", "dialogue_id", "annotator", "dimension", "score")
RATING = ("annotator", "dimension", "score")
LAYOUT = ("a save_to_disk folder (state.json and its .arrow files, or dataset_dict.json and a folder per split), a "
          ".parquet or a .jsonl file")
_LINE = re.compile(r"line ([\d,]+)")


def parse_columns(file: str, text: str) -> dict[str, str]:
    """--columns 'item_id=id,response=output' as {evalcore column: source column}."""
    out: dict[str, str] = {}
    for part in text.split(","):
        target, eq, source = part.partition("=")
        target, source = target.strip(), source.strip()
        if not eq or target not in TARGETS or not source or target in out:
            raise ImportRefused([Problem(file, "", "--columns", "TARGET=COLUMN pairs, each target once, targets "
                                         "among " + ", ".join(TARGETS), short(part))])
        out[target] = source
    return out


def import_hf(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str | None, columns: str,
              model: str | None = None, split: str | None = None, scales: dict | None = None,
              missing: list[str] | None = None) -> ImportReport:
    path = Path(path)
    file = str(path)
    mapping = parse_columns(file, columns)
    ratings = any(t in mapping for t in RATING)
    if ratings and ("response" in mapping or not all(t in mapping for t in RATING)):
        raise ImportRefused([Problem(file, "", "--columns", "either response (a responses import) or annotator, "
                                     "dimension and score (a ratings import, once the responses are stored)",
                                     ", ".join(sorted(mapping)))])
    if not ratings and "response" not in mapping:
        raise ImportRefused([Problem(file, "", "--columns", "response=COLUMN, or annotator, dimension and score",
                                     ", ".join(sorted(mapping)))])
    if ratings and model and "model" in mapping:
        raise ImportRefused([Problem(file, "", "--model", "either --model or a model column", "both")])
    records, places, shown, names, lines = _records(path, split)
    missing_columns = [c for c in dict.fromkeys(mapping.values()) if c not in names]
    if missing_columns:
        found = ", ".join(repr(c) for c in names) or "none"
        raise ImportRefused([Problem(shown, "header", c, "a column named by --columns", f"no such column (columns "
                                     f"found: {found})") for c in missing_columns])
    problems, rows = [], []
    for rec, where in zip(records, places):
        row = {}
        for target, source in mapping.items():
            value = rec.get(source)
            if isinstance(value, float) and not math.isfinite(value):
                problems.append(Problem(shown, where, source, "a finite number", short(value)))
            elif value is not None and not isinstance(value, (str, int, float)):
                problems.append(Problem(shown, where, source, "a text or a number", type(value).__name__))
            row[target] = value
        if ratings and model:
            row["model"] = model
        rows.append(row)
    if problems:
        raise ImportRefused(problems)
    if ratings:
        report = imported_as(con, import_ratings, rows, shown, places, mapping, lines, dataset=dataset, track=track,
                             scales=scales, missing=missing)
    else:
        report = imported_as(con, import_responses, rows, shown, places, mapping, lines, dataset=dataset,
                             track=track, model=model)
    report.notes.insert(0, f"{len(rows):,} rows, columns " + ", ".join(f"{s} as {t}" for t, s in mapping.items()))
    return report


def imported_as(con: duckdb.DuckDBPyConnection, importer, rows: list[dict], shown: str, places: list[str],
                fields: dict[str, str], lines: list[int] | None = None, **options) -> ImportReport:
    """`rows` imported by `importer` (import_responses or import_ratings) as a JSONL file of theirs, so that their
    rules hold; its problems and report name `shown`, the place of each row in it (places) and its fields (fields:
    evalcore column -> the source's name for it). The stored rows' origin is '<file> line K': with `lines` (a JSONL
    source: each row's line) the row's own line in `shown`, else K is the row's number among `rows`, the file then
    named '<shown's name>.jsonl'."""
    text: list[str] = []
    for k, row in enumerate(rows):
        text += [""] * ((lines[k] - 1 - len(text)) if lines else 0)   # blank lines, so the row keeps its line
        text.append(json.dumps(row, ensure_ascii=False))
    with tempfile.TemporaryDirectory(prefix="evalcore-rows-") as tmp:
        temp = Path(tmp) / (Path(shown).name if lines else f"{Path(shown).name}.jsonl")
        temp.write_text("\n".join(text) + "\n", encoding="utf-8")
        try:
            report = importer(con, temp, shown=shown, **options)
        except ImportRefused as exc:
            at = {(lines[k] if lines else k + 1): place for k, place in enumerate(places)}   # written line -> place
            raise ImportRefused([_named(p, str(temp), shown, at, fields) for p in exc.problems]) from None
    report.file = shown
    report.notes = [n for n in report.notes if not n.startswith("read as")]
    return report


def _named(problem: Problem, temp: str, shown: str, at: dict[int, str], reverse: dict[str, str]) -> Problem:
    """A problem of the written file, told in the source's terms: its file, row and column."""
    if problem.file != temp:
        return problem
    where = problem.where
    line = _LINE.fullmatch(where)
    if line:
        where = at[int(line.group(1).replace(",", ""))]
    elif where.startswith("header"):
        where = "header"
    field = reverse.get(problem.field, problem.field)
    field = f"{field} (as {problem.field})" if field != problem.field else field
    return Problem(shown, where, field, problem.expected, problem.got)


def _records(path: Path, split: str | None) -> tuple[list[dict], list[str], str, list[str], list[int] | None]:
    """(records, their places, the file problems name, the columns, each record's line in a JSONL file) of any of
    the three layouts."""
    file = str(path)
    if path.is_dir():
        folder = _split_folder(path, split)
        table = _arrow_folder(folder)
        shown = str(folder)
    elif path.suffix.lower() == ".parquet" and path.is_file():
        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError) as exc:
            raise ImportRefused([Problem(file, "", "", "a Parquet file", short(str(exc)))]) from None
        shown = file
    elif path.suffix.lower() in (".jsonl", ".json"):
        table = read_table(path, kinds=("jsonl",))
        return table.records, list(table.places), file, table.columns, list(table.places.numbers)
    else:
        raise ImportRefused([Problem(file, "", "", LAYOUT, "no such file or folder" if not path.exists()
                                     else path.name)])
    most = limit("MAX_ROWS")
    if table.num_rows > most:
        raise ImportRefused([Problem(shown, "", "", f"at most {most:,} rows (EVALCORE_MAX_ROWS)",
                                     f"{table.num_rows:,} rows")])
    if not table.num_rows:
        raise ImportRefused([Problem(shown, "", "", "at least one row", "none")])
    places = [f"row {i + 1:,} (index {i:,})" for i in range(table.num_rows)]
    return table.to_pylist(), places, shown, table.column_names, None


def _split_folder(path: Path, split: str | None) -> Path:
    """The folder of one dataset: `path` itself, or a DatasetDict's split (--split; the only one by default)."""
    listing = path / "dataset_dict.json"
    if not listing.is_file():
        if split is not None:
            raise ImportRefused([Problem(str(path), "", "--split", "a DatasetDict folder (dataset_dict.json)",
                                         "a single dataset's folder")])
        return path
    try:
        splits = json.loads(listing.read_text("utf-8"))["splits"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise ImportRefused([Problem(str(listing), "", "splits", "a JSON object with a list 'splits'",
                                     "something else")]) from None
    if not isinstance(splits, list) or not all(isinstance(s, str) and re.fullmatch(r"[\w.-]+", s) for s in splits):
        raise ImportRefused([Problem(str(listing), "", "splits", "a list of split names", short(splits))])
    if split is None and len(splits) == 1:
        split = splits[0]
    if split not in splits:
        raise ImportRefused([Problem(str(path), "", "--split", "one of the splits: " + ", ".join(splits),
                                     repr(split) if split else "none given")])
    return path / split


def _arrow_folder(folder: Path) -> pa.Table:
    """The rows of a save_to_disk folder: the Arrow stream files state.json lists, in order."""
    state = folder / "state.json"
    try:
        names = [f["filename"] for f in json.loads(state.read_text("utf-8"))["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise ImportRefused([Problem(str(state), "", "_data_files", "a save_to_disk state.json listing the Arrow "
                                     "files ({\"_data_files\": [{\"filename\": ...}]})", "something else")]) from None
    tables = []
    for k, name in enumerate(names):
        # a name is a file in this folder: nothing outside it is read
        if not isinstance(name, str) or not re.fullmatch(r"[\w.-]+\.arrow", name) or not (folder / name).is_file():
            raise ImportRefused([Problem(str(state), "", f"_data_files[{k}].filename",
                                         "an .arrow file in this folder", short(name))])
        try:
            with pa.memory_map(str(folder / name)) as source:
                tables.append(pa.ipc.open_stream(source).read_all())
        except (pa.ArrowException, OSError) as exc:
            raise ImportRefused([Problem(str(folder / name), "", "", "an Arrow stream file (save_to_disk)",
                                         short(str(exc)))]) from None
    if not tables:
        raise ImportRefused([Problem(str(state), "", "_data_files", "at least one Arrow file", "none")])
    try:
        return pa.concat_tables(tables)
    except pa.ArrowException as exc:
        raise ImportRefused([Problem(str(state), "", "_data_files", "Arrow files of one schema",
                                     short(str(exc)))]) from None


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_hf(con, args.file, dataset=args.dataset, track=args.track, columns=args.columns, model=args.model,
                     split=args.split, scales=scales(args.scale), missing=args.missing)
