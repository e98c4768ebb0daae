"""Reading user files: CSV, TSV, JSONL, JSON and xlsx, in UTF-8 (BOM or not), UTF-16 or GB18030/GBK.

Every record comes with the place a user would look for it ("line 3", "row 7").

Limits: a file, or an archive, is refused the moment it passes one, so that memory stays bounded
whatever the file or its compression ratio; each can be changed with an environment variable, read when an
import runs:

- EVALCORE_MAX_COLUMNS (1,000): columns of a header.
- EVALCORE_MAX_CELL (100,000): characters of a cell or text field, list elements included.
- EVALCORE_MAX_ROWS (1,000,000): records of one import, all the files of a .zip or folder together. An import
  holds every row in memory until all are checked (about 0.5 KB per short row, more for long texts): the
  default keeps the largest real submissions (MSDE: 39,190 rows; bench/import_memory.py: 416,000) and refuses
  a 4-million-row bomb at row 1,000,001, near 600 MB.
- EVALCORE_MAX_EXPANDED (1 GiB): bytes a .zip (or an .xlsx, itself a zip) may expand to, summed over its
  members: the declared sizes are checked before anything is unpacked, then the unpacked bytes are counted as
  they are written (zipfile never yields more than a member declares). 1 GiB is five times Streamlit's
  200 MB upload limit and twenty times the largest release we import; 10x (2 GiB) would let one upload fill
  the temp folder with what a 4 GB machine cannot read back.
- EVALCORE_MAX_MEMBERS (1,000): files in a .zip.
- EVALCORE_MAX_LINE (10,000,000): characters of one physical line of a CSV, TSV or JSONL file (at most
  40 MB of text; a header of a million columns is still refused by its column count), read with a
  bounded readline (a file without newlines is not read whole into memory).
- EVALCORE_MAX_DEPTH (100): nesting of JSON arrays and objects (checked before parsing: no RecursionError).
- Numbers: finite and at most 1e100 in magnitude (MAX_MAGNITUDE), so that sums, means and squares of any
  realistic number of them stay finite (ten values of 1.7e308 would sum to inf).
"""
from __future__ import annotations

import contextlib
import contextvars
import csv
import json
import math
import os
import re
import shutil
import tempfile
import time
import zipfile
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import openpyxl

from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.core.processes import alive
from evalcore.core.text import CONTROL, SURROGATE, bad_character, normalise_id  # noqa: F401 (importers read them from here)
from evalcore.ingest import strictjson
from evalcore.ingest.encodings import ENCODINGS_EXPECTED, sniff_encoding  # noqa: F401 (read from here too)

# Limits a user would accept; a file over them is refused with the row and the limit. Module values are the
# defaults (tests may set them); the environment variable, when set, wins at the time of the import.
MAX_COLUMNS = int(os.environ.get("EVALCORE_MAX_COLUMNS", 1000))
MAX_CELL = int(os.environ.get("EVALCORE_MAX_CELL", 100_000))   # characters per cell
MAX_ROWS = 1_000_000
MAX_EXPANDED = 1 << 30
MAX_MEMBERS = 1000
MAX_LINE = 10_000_000
MAX_DEPTH = 100
MAX_MAGNITUDE = strictjson.MAX_MAGNITUDE
ENV = {"MAX_ROWS": "EVALCORE_MAX_ROWS", "MAX_EXPANDED": "EVALCORE_MAX_EXPANDED", "MAX_MEMBERS": "EVALCORE_MAX_MEMBERS",
       "MAX_LINE": "EVALCORE_MAX_LINE", "MAX_DEPTH": "EVALCORE_MAX_DEPTH"}
NORMALISED = ("normalised {n} identifier(s): surrounding whitespace removed and full-width or other "
              "compatibility forms folded (Unicode NFKC)")
TEMP_PREFIX = "evalcore-upload-"   # the temporary folders of uploads and unpacked archives (sweep_temp)


def limit(name: str) -> int:
    """The limit `name` (MAX_ROWS, ...): its environment variable when set, else the module's value."""
    var = ENV[name]
    text = os.environ.get(var, "").strip()
    if not text:
        return globals()[name]
    try:
        value = int(float(text))
    except ValueError:
        raise ValueError(f"{var} must be a whole number, got {text!r}") from None
    if value < 1:
        raise ValueError(f"{var} must be at least 1, got {text!r}")
    return value


def _check_header(name: str, header: list[str], where: str = "row 1") -> None:
    if len(header) > MAX_COLUMNS:
        raise ImportRefused([Problem(name, where, "", f"at most {MAX_COLUMNS:,} columns (EVALCORE_MAX_COLUMNS)",
                                     f"{len(header):,} columns")])


@dataclass
class Table:
    """Records read from one file, with the location of each."""

    file: str
    columns: list[str]
    records: list[dict]
    places: list[str]
    encoding: str = ""


def read_table(path: str | Path, *, kinds: tuple[str, ...] = ("csv", "tsv", "jsonl", "xlsx")) -> Table:
    """Read a file by its extension into records; refuse unreadable files whole. The file is read as
    a stream: what stays in memory is its records, not the file's bytes or text (lines are read with a
    bounded readline, rows counted against MAX_ROWS as they come)."""
    path = Path(path)
    name = str(path)
    suffix = _suffix(path, kinds)
    if suffix == "xlsx":
        return _read_xlsx(path)
    enc = sniff_encoding(path, name, kind=suffix)
    with path.open(encoding=enc, newline="") as fh:
        lines = Lines(fh, name)
        if suffix == "jsonl":
            table = _read_jsonl(lines, name)
        else:
            table = _read_csv(lines, name, "\t" if suffix == "tsv" else ",")
    table.encoding = enc
    return table


def _suffix(path: Path, kinds: tuple[str, ...]) -> str:
    """The file's kind by its extension ('.json' reads as JSONL); refused when not one of `kinds` or absent."""
    suffix = path.suffix.lower().lstrip(".")
    if suffix == "json":
        suffix = "jsonl"
    if suffix not in kinds:
        raise ImportRefused([Problem(
            str(path), "", "", "a file ending in " + ", ".join("." + k for k in kinds), f".{suffix or '(none)'}"
        )])
    if not path.is_file():
        raise ImportRefused([Problem(str(path), "", "", "an existing file", "no such file")])
    return suffix


@contextlib.contextmanager
def stream_jsonl(path: str | Path) -> Iterator[tuple[str, Iterator[tuple[dict, int]]]]:
    """(encoding, records): a JSONL file's records with their line numbers, yielded as they are read, for
    an import that writes as it goes (no record is held after it is used). The problems of unreadable lines
    are raised together once the last line is read: the caller's transaction must be open until then."""
    path = Path(path)
    _suffix(path, ("jsonl",))
    enc = sniff_encoding(path, str(path), kind="jsonl")
    with path.open(encoding=enc, newline="") as fh:
        yield enc, _jsonl_records(Lines(fh, str(path)), str(path))


class Lines:
    """The lines of an open text stream, each read with a bounded readline: a line longer than MAX_LINE
    characters is refused (its number named) before it is held whole. Keeps the lines since the last mark()
    (one CSV row's), so that a refusal can say where an unclosed quote opened."""

    def __init__(self, stream, name: str):
        self.stream, self.name, self.number, self.kept = stream, name, 0, []
        self.most = limit("MAX_LINE")

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = self.stream.readline(self.most + 1)
        if not line:
            raise StopIteration
        self.number += 1
        if len(line) > self.most:
            raise ImportRefused([Problem(self.name, f"line {self.number:,}", "", f"lines of at most {self.most:,} "
                                         "characters (EVALCORE_MAX_LINE)", "a longer line")])
        self.kept.append(line)
        return line

    def mark(self) -> None:
        self.kept = []


class Rows:
    """Counts the records read, per file and per import (the budget of an archive or folder, see
    row_budget): the record after the limit is refused at once, before more are read."""

    def __init__(self, name: str):
        self.name, self.n, self.most = name, 0, limit("MAX_ROWS")
        self.budget = _BUDGET.get()

    def add(self, where: str) -> None:
        self.n += 1
        if self.n > self.most:
            raise ImportRefused([Problem(self.name, where, "", f"at most {self.most:,} rows (EVALCORE_MAX_ROWS)",
                                         "more")])
        if self.budget is not None:
            self.budget[0] += 1
            if self.budget[0] > self.budget[1]:
                raise ImportRefused([Problem(self.name, where, "", f"at most {self.budget[1]:,} rows in all the "
                                             "files of the archive or folder together (EVALCORE_MAX_ROWS)",
                                             f"more: this is row {self.budget[0]:,} of them")])


_BUDGET: contextvars.ContextVar[list | None] = contextvars.ContextVar("evalcore_row_budget", default=None)


@contextlib.contextmanager
def row_budget():
    """Within it, every file read shares one count of rows (MAX_ROWS for all the files of a .zip or folder)."""
    token = _BUDGET.set([0, limit("MAX_ROWS")])
    try:
        yield
    finally:
        _BUDGET.reset(token)


def _json_depth_at(text: str) -> int | None:
    """The index in `text` where JSON arrays and objects nest deeper than MAX_DEPTH, or None. Brackets inside
    strings do not count. A cheap count first: text with fewer brackets than the limit cannot be too deep."""
    most = limit("MAX_DEPTH")
    if text.count("[") + text.count("{") <= most:
        return None
    depth = 0
    for m in _JSON_TOKEN.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > most:
                return m.start()
        elif c in "]}":
            depth -= 1
    return None


_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def parse_json(text: str, name: str, shape: str, where: str = "", first_line: int = 1,
               decoder: strictjson.Decoder | None = None):
    """json.loads, refusing instead of crashing or guessing: nesting deeper than MAX_DEPTH (named by line),
    invalid JSON, and what strictjson refuses (a key twice, a number over MAX_MAGNITUDE, NaN, a lone surrogate),
    named by line and field. `where` names a JSONL line; a whole file's problems are named by line (and, in a
    top-level list, by item). `decoder`: one per file (a new one per call otherwise)."""
    at = _json_depth_at(text)
    if at is not None:
        line = first_line + text.count("\n", 0, at)
        raise ImportRefused([Problem(name, where or f"line {line:,}", "", f"JSON nested at most {limit('MAX_DEPTH')} "
                                     "levels deep (EVALCORE_MAX_DEPTH)",
                                     f"deeper nesting at column {at - text.rfind(chr(10), 0, at):,}")])
    decoder = decoder or strictjson.Decoder()
    try:
        value, suspect = decoder.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportRefused([Problem(name, where or f"line {exc.lineno + first_line - 1:,}", "", shape,
                                     f"invalid JSON ({exc.msg} at column {exc.colno})")]) from None
    except (ValueError, RecursionError) as exc:
        raise ImportRefused([Problem(name, where, "", shape, f"JSON Python cannot read ({short(str(exc), 80)})")]) from None
    if suspect:
        problems = strictjson.locate(text, name, lambda line, top: where or _json_place(line, top), first_line)
        if problems:
            raise ImportRefused(problems)
    return value


def _json_place(line: int, top: int | None) -> str:
    return f"line {line:,}" + ("" if top is None else f", item {top + 1:,} (index {top:,})")


def read_json(path: Path, shape: str) -> tuple[object, str, list[int]]:
    """A whole JSON file (a list or an object), the encoding it was read in, and for a list the line each of its
    elements begins on (so that a problem in one can name its line); unreadable JSON refused."""
    file = str(path)
    if not path.is_file():
        raise ImportRefused([Problem(file, "", "", "an existing file", "no such file")])
    encoding = sniff_encoding(path, file, kind="json")
    text = path.read_text(encoding=encoding)
    data = parse_json(text, file, shape)
    return data, encoding, _element_lines(text) if isinstance(data, list) else []


_SPACE = re.compile(r"[ \t\n\r]*")


def _element_lines(text: str) -> list[int]:
    """The line each element of a JSON list (already read whole, so valid) begins on, read element by element
    with json's own scanner (no second copy of the data is kept)."""
    scan = json.JSONDecoder().raw_decode
    at = _SPACE.match(text, 0).end() + 1   # past '['
    out, line, counted = [], 1, 0
    while True:
        at = _SPACE.match(text, at).end()
        if text.startswith("]", at):
            return out
        line += text.count("\n", counted, at)
        counted = at
        out.append(line)
        _, at = scan(text, at)
        at = _SPACE.match(text, at).end() + 1   # past ',' (or ']', then the loop ends)
        if text.startswith("]", at - 1):
            return out


def _read_jsonl(lines, name: str) -> Table:
    """Records from an iterable of lines (an open file's Lines, or text.splitlines())."""
    records, places = [], []
    columns: dict[str, None] = {}
    for obj, lineno in _jsonl_records(lines, name):
        columns.update(dict.fromkeys(obj))
        records.append(obj)
        places.append(lineno)
    return Table(name, list(columns), records, Places("line", places))


def _jsonl_records(lines, name: str) -> Iterator[tuple[dict, int]]:
    """(record, line number) of each JSON object line as it is read; after the last line, every line that
    is not one (or a file without any) is refused together."""
    problems = []
    rows = Rows(name)
    decoder = strictjson.Decoder()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = parse_json(line, name, "one JSON object per line", f"line {lineno}", lineno, decoder)
        except ImportRefused as exc:
            problems += exc.problems
            continue
        if not isinstance(obj, dict):
            problems.append(Problem(name, f"line {lineno}", "", "a JSON object", type(obj).__name__))
            continue
        rows.add(f"line {lineno:,}")
        if not problems:   # once a line is refused, the rest are only checked
            yield obj, lineno
    if problems:
        raise ImportRefused(problems)
    if not rows.n:
        raise ImportRefused([Problem(name, "", "", "at least one JSON object", "an empty file")])


def _open_quote(lines: list[str], first: int, delimiter: str) -> int | None:
    """The line (numbered from `first`) where the quote that is still open at the end of `lines` opened."""
    opened, quoted, at_start = None, False, True
    for n, line in enumerate(lines, start=first):
        i, size = 0, len(line)
        while i < size:
            c = line[i]
            if quoted:
                if c == '"':
                    if i + 1 < size and line[i + 1] == '"':
                        i += 1
                    else:
                        quoted = False
            elif c == '"' and at_start:
                quoted, opened = True, n
            at_start = not quoted and c in (delimiter, "\n", "\r")
            i += 1
    return opened if quoted else None


def _read_csv(lines, name: str, delimiter: str) -> Table:
    """Records from a Lines stream (or any iterable of lines read with newline=''), row by row. Quoting is
    strict: a quote never closed (the file ends inside it, or a cell grows past the limit) is refused naming
    the line where it opened, and so is text right after a closing quote."""
    csv.field_size_limit(max(MAX_CELL * 4, 131072))  # a longer cell is refused by name below, not by csv
    if not isinstance(lines, Lines):
        lines = Lines(iter(lines), name) if hasattr(lines, "readline") else _ListLines(lines, name)
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    problems, records, places = [], [], []
    rows = Rows(name)
    start = 1
    try:
        first = next(reader, None)
        if first is None:
            raise ImportRefused([Problem(name, "", "", "a header row and data rows", "an empty file")])
        _check_header(name, first)   # before reading the rest: a million-column file is refused at once
        header = [h.strip() for h in first]
        counts = Counter(header)
        dupes = sorted(h for h, n in counts.items() if n > 1 and h)
        if dupes:
            problems.append(Problem(name, "row 1", dupes[0], "each column name once", "it appears more than once"))
        width = len(header)
        index = 1
        while True:
            start = lines.number + 1
            lines.mark()
            row = next(reader, None)
            if row is None:
                break
            index += 1
            if not any(cell.strip() for cell in row):
                continue
            if len(row) > width:
                problems.append(Problem(name, f"row {index}", "", f"{width} columns as in the header", f"{len(row)} columns"))
                continue
            if len(row) < width:
                row = row + [""] * (width - len(row))
            rows.add(f"row {index:,}")
            records.append(dict(zip(header, row)))
            places.append(index)
    except csv.Error as exc:
        opened = _open_quote(lines.kept, start, delimiter)
        if opened is not None:
            ends = ("the file ends inside it" if "end of data" in str(exc)
                    else f"the cell grew past {csv.field_size_limit():,} characters")
            raise ImportRefused([Problem(name, f"line {opened:,}", "", "a quoted cell that ends with a closing quote",
                                         f"a quote opened on line {opened:,} that is never closed ({ends})")]) from None
        raise ImportRefused([Problem(name, f"line {lines.number:,}", "", "well-formed CSV "
                                     f"(cells of at most {MAX_CELL:,} characters; a quoted cell closed by a quote "
                                     "followed by the delimiter or the line's end)", str(exc))]) from None
    if problems:
        raise ImportRefused(problems)
    if not records:
        raise ImportRefused([Problem(name, "", "", "at least one data row", "only a header")])
    return Table(name, header, records, Places("row", places))


class _ListLines(Lines):
    """Lines over a list or iterator of strings (text.splitlines(keepends=True))."""

    def __init__(self, lines, name: str):
        super().__init__(None, name)
        self.source = iter(lines)

    def __next__(self) -> str:
        line = next(self.source)
        self.number += 1
        self.kept.append(line)
        return line


class Places:
    """Where each record was: 'row 7' or 'line 3', made when asked for (a million rows keep a
    million small integers, not a million strings)."""

    def __init__(self, unit: str, numbers):
        self.unit, self.numbers = unit, array("q", numbers)

    def __len__(self) -> int:
        return len(self.numbers)

    def __getitem__(self, i: int) -> str:
        return f"{self.unit} {self.numbers[i]}"

    def __iter__(self):
        return (f"{self.unit} {n}" for n in self.numbers)

    def __eq__(self, other) -> bool:
        return list(self) == list(other)


def check_archive(path: Path, name: str) -> None:
    """Refuse a zip (a .zip, or an .xlsx workbook, which is one) whose members declare more than
    MAX_EXPANDED bytes or more than MAX_MEMBERS files, before anything is unpacked or parsed. zipfile never
    yields more bytes than a member declares (a member that holds more fails its CRC check), so the declared
    sizes bound what reading it can cost."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        kind = "an .xlsx workbook" if path.suffix.lower() == ".xlsx" else "a .zip archive"
        raise ImportRefused([Problem(name, "", "", kind, f"unreadable ({exc})")]) from None
    most, members = limit("MAX_EXPANDED"), limit("MAX_MEMBERS")
    files = [i for i in infos if not i.is_dir()]
    if len(files) > members:
        raise ImportRefused([Problem(name, "", "", f"at most {members:,} files in an archive (EVALCORE_MAX_MEMBERS)",
                                     f"{len(files):,} files")])
    total = sum(i.file_size for i in files)
    if total > most:
        big = max(files, key=lambda i: i.file_size)
        raise ImportRefused([Problem(name, "", "", f"an archive that expands to at most {most:,} bytes "
                                     "(EVALCORE_MAX_EXPANDED)", f"{total:,} bytes unpacked, {big.file_size:,} of them "
                                     f"in {big.filename!r}, from {path.stat().st_size:,} packed")])


def unpack_zip(path: Path, tmp: Path, skip=lambda rel: False) -> list[tuple[Path, str]]:
    """Members of a .zip copied out to `tmp` under names of our own (no path from the archive is trusted), as
    streams, counting the bytes unpacked: refused before unpacking when the declared sizes pass MAX_EXPANDED,
    and the moment the running count does. `skip(rel)` leaves a member out. (path, name in the archive)."""
    name = str(path)
    if not path.is_file():
        raise ImportRefused([Problem(name, "", "", "an existing file", "no such file")])
    check_archive(path, name)
    most = limit("MAX_EXPANDED")
    archive = zipfile.ZipFile(path)
    out, problems, total = [], [], 0
    with archive:
        for index, info in enumerate(archive.infolist()):
            rel = info.filename.replace("\\", "/")
            if info.is_dir() or skip(rel):
                continue
            target = tmp / str(index) / PurePosixPath(rel).name
            target.parent.mkdir(parents=True)
            try:
                with archive.open(info) as src, target.open("wb") as dst:
                    while chunk := src.read(1 << 20):
                        total += len(chunk)
                        if total > most:
                            raise ImportRefused([Problem(f"{path}/{rel}", "", "", f"an archive that expands to at "
                                                         f"most {most:,} bytes (EVALCORE_MAX_EXPANDED)",
                                                         "more (passed while unpacking this member)")])
                        dst.write(chunk)
            except (zipfile.BadZipFile, RuntimeError, OSError, EOFError, NotImplementedError) as exc:
                # corrupt, encrypted or of an unsupported compression
                problems.append(Problem(f"{path}/{rel}", "", "", "a readable member", f"unreadable ({exc})"))
                continue
            out.append((target, rel))
    if problems:
        raise ImportRefused(problems)
    return sorted(out, key=lambda f: f[1])


def temp_dir() -> Path:
    """A new temporary folder for an upload or an unpacked archive, named with this process's id, so that
    sweep_temp can tell a crashed process's leftovers from a running one's."""
    return Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-"))


def sweep_temp(max_age_s: float = 3600, root: str | Path | None = None) -> list[Path]:
    """Remove the leftovers of uploads and archives whose process was killed (SIGKILL, OOM, a power cut: no
    `finally` ran): folders `evalcore-upload-<pid>-*` whose process is gone, and folders `evalcore-upload-*`
    without a process id last changed more than `max_age_s` seconds ago. Call it when the dashboard (or any
    long-lived process) starts. Returns the folders removed; never raises."""
    root = Path(root or tempfile.gettempdir())
    removed, now = [], time.time()
    for folder in root.glob(f"{TEMP_PREFIX}*"):
        try:
            if not folder.is_dir() or folder.is_symlink():
                continue
            rest = folder.name[len(TEMP_PREFIX):]
            pid = rest.split("-", 1)[0]
            if pid.isdigit() and "-" in rest:
                stale = int(pid) != os.getpid() and not alive(int(pid))
            else:
                stale = now - folder.stat().st_mtime > max_age_s
            if stale:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
        except OSError:
            continue
    return removed


def _read_xlsx(path: Path) -> Table:
    """The first sheet, row by row (read-only: the sheet is streamed, rows counted against MAX_ROWS). A formula
    cell is read by its value as Excel last saved it; one with no saved value is refused naming the cell."""
    name = str(path)
    check_archive(path, name)
    try:
        wb = openpyxl.load_workbook(path, read_only=True, data_only=False)
    except Exception as exc:  # openpyxl raises many types for a broken file
        raise ImportRefused([Problem(name, "", "", "an .xlsx workbook", f"unreadable ({type(exc).__name__}: {exc})")]) from exc
    header: list[str] | None = None
    records, places, formulas = [], [], []
    rows = Rows(name)
    try:
        if not wb.worksheets:
            raise ImportRefused([Problem(name, "", "", "a workbook with a sheet", "none")])
        for index, cells in enumerate(wb.worksheets[0].iter_rows(), start=1):
            values = []
            for cell in cells:
                if getattr(cell, "data_type", None) == "f":
                    formulas.append((len(records), len(values), index, cell.coordinate, cell.value))
                    values.append(None)
                else:
                    values.append(cell.value)
            if header is None:
                header = ["" if h is None else str(h).strip() for h in values]
                _check_header(name, header)
                continue
            if all(v is None or (isinstance(v, str) and not v.strip()) for v in values) and not (
                    formulas and formulas[-1][2] == index):
                continue
            rows.add(f"row {index:,}")
            records.append(values)
            places.append(index)
    finally:
        wb.close()
    if header is None:
        raise ImportRefused([Problem(name, "", "", "a header row and data rows", "an empty first sheet")])
    if any(f[2] == 1 for f in formulas):
        f = next(f for f in formulas if f[2] == 1)
        raise ImportRefused([Problem(name, "row 1", "", "column names, not formulas", f"a formula in cell {f[3]}")])
    if formulas:
        _formula_values(path, name, header, records, places, formulas)
    records = [dict(zip(header, ["" if v is None else v for v in values])) for values in records]
    if not records:
        raise ImportRefused([Problem(name, "", "", "at least one data row", "only a header")])
    return Table(name, header, records, Places("row", places), encoding="xlsx")


def _formula_values(path: Path, name: str, header: list[str], records: list[list], places: list[int],
                    formulas: list[tuple]) -> None:
    """Put each formula cell's saved value in place; refuse the cells that have none (a file written by a
    program that does not compute formulas: openpyxl, some exporters), naming each cell."""
    wanted = {f[2]: [] for f in formulas}
    for f in formulas:
        wanted[f[2]].append(f)
    wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    problems = []
    try:
        for index, values in enumerate(wb.worksheets[0].iter_rows(values_only=True), start=1):
            for record, column, _, coordinate, formula in wanted.get(index, []):
                value = values[column] if column < len(values) else None
                if value is None:
                    col = header[column] if column < len(header) else ""
                    problems.append(Problem(name, f"row {index}", col, "a value (a formula's value as last saved by a "
                                            "spreadsheet program: open the file in Excel or LibreOffice and save it)",
                                            f"cell {coordinate} holds the formula {short(formula)} with no saved value"))
                else:
                    records[record][column] = value
    finally:
        wb.close()
    if problems:
        raise ImportRefused(problems)


# A number in a text cell: optional sign, ASCII digits, optional point and fraction, optional exponent.
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_NON_FINITE = {"nan", "inf", "infinity"}


def decimal(text: str) -> float | None:
    """The number a text cell writes, or None. Plain decimal only: digits with an optional sign, point and
    exponent ('2', ' -0.5 ', '1e-3', '.5'); surrounding whitespace is allowed and full-width digits are read
    through NFKC like every name ('１.５' is 1.5). What Python's float() also takes is refused: '1_0' (which it
    reads as 10), 'nan', 'inf', 'infinity', and digits of other scripts ('١', Arabic-Indic one), which no
    spreadsheet or statistics package reads as numbers. A decimal too large for a float reads as inf (refused by
    magnitude by the caller)."""
    text = text.strip()
    if not text.isascii():
        text = normalise_id(text)
    if not _DECIMAL.fullmatch(text):
        return None
    return float(text)


def _not_decimal(value: str) -> tuple[str, str]:
    """(expected, got) for a text cell that is not a plain decimal number."""
    word = value.strip().lstrip("+-").lower()
    if word in _NON_FINITE:
        return "a finite number", short(value)
    try:
        float(value)
    except ValueError:
        return "a number", short(value)
    return ("a number in plain decimal (digits with an optional sign, point and exponent: 10, -0.5, 1e-3)",
            f"{short(value)}, which only Python reads as a number")


@dataclass
class Checker:
    """Collects problems across a whole file so a user sees all of them at once."""

    file: str
    problems: list[Problem] = field(default_factory=list)
    normalised: int = 0   # identifiers changed by normalise_id (reported in the import's notes)

    def add(self, where: str, field_: str, expected: str, got: object = None) -> None:
        self.problems.append(Problem(self.file, where, field_, expected, "" if got is None else str(got)))

    def require_columns(self, columns: list[str], required: list[str], where: str = "header (row 1)") -> bool:
        missing = [c for c in required if c not in columns]
        found = ", ".join(repr(x) for x in columns if x) or "none"
        for c in missing:
            self.add(where, c, f"a column named '{c}'", f"no such column (columns found: {found})")
        return not missing

    def text(self, rec: dict, where: str, key: str, *, required: bool = True, allow_empty: bool = False) -> str | None:
        """A string field. CSV gives strings; JSON may give numbers for ids, which we accept."""
        value = rec.get(key)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            if required:
                self.add(where, key, "a value", "nothing")
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            self.add(where, key, "a string", f"{type(value).__name__} {short(value)}")
            return None
        value = str(value)
        if len(value) > MAX_CELL:
            self.add(where, key, f"at most {MAX_CELL:,} characters (EVALCORE_MAX_CELL)", f"{len(value):,} characters")
            return None
        bad = CONTROL.search(value)
        if bad:
            self.add(where, key, "text without control characters (tab and newline are fine)",
                     f"U+{ord(bad.group()):04X} at character {bad.start() + 1}")
            return None
        bad = SURROGATE.search(value)   # from a JSON escape (parse_json names it first): no encoding can store it
        if bad:
            self.add(where, key, "text without lone surrogates (U+D800-U+DFFF not half of a pair)",
                     f"U+{ord(bad.group()):04X} at character {bad.start() + 1}")
            return None
        if not value.strip() and not allow_empty:
            if required:
                self.add(where, key, "a non-empty string", "an empty string")
            return None
        return value

    def ident(self, rec: dict, where: str, key: str, *, required: bool = True) -> str | None:
        """An identifier field, normalised the one way (normalise_id); counts what changed."""
        value = self.text(rec, where, key, required=required)
        if value is None:
            return None
        out = normalise_id(value)
        self.normalised += out != value
        return out

    def notes(self) -> list[str]:
        return [NORMALISED.format(n=self.normalised)] if self.normalised else []

    def option(self, option: str, value: str | None, *, what: str = "name") -> str | None:
        """A name given beside the file (--dataset, --track, --model, --metric; the upload page's controls) in the
        one normal form of names (NFKC, surrounding whitespace removed: '--metric ＢＬＥＵ４' is BLEU4). Refused at
        once, naming the option, when it holds a control character or a lone surrogate (a terminal acts on
        the first; the second, from a command line's undecodable bytes, cannot be stored) or nothing. None (not
        given) stays None."""
        if value is None:
            return None
        bad = bad_character(value)
        if bad:
            raise ImportRefused([Problem(self.file, "", option, f"a {what} without control characters or lone "
                                         "surrogates", bad)])
        out = normalise_id(value)
        if not out:
            raise ImportRefused([Problem(self.file, "", option, f"a non-empty {what}", short(value))])
        return out

    def number(self, rec: dict, where: str, key: str) -> float | None:
        """A number: a JSON or spreadsheet number, or a cell in plain decimal (see `decimal`), finite and at most
        MAX_MAGNITUDE in magnitude."""
        value = rec.get(key)
        if isinstance(value, bool):
            self.add(where, key, "a number", short(value))
            return None
        if isinstance(value, (int, float)):
            try:
                number = float(value)
            except OverflowError:   # an int no float holds (JSON is refused before: strictjson)
                number = math.inf
        elif isinstance(value, str) and value.strip():
            number = decimal(value)
            if number is None:
                self.add(where, key, *_not_decimal(value))
                return None
        else:
            self.add(where, key, "a number", "nothing" if value in (None, "") else short(value))
            return None
        if math.isnan(number) or (math.isinf(number) and not isinstance(value, (int, str))):
            self.add(where, key, "a finite number", short(value))
            return None
        if abs(number) > MAX_MAGNITUDE:
            self.add(where, key, f"a number of magnitude at most {MAX_MAGNITUDE:g} (larger ones make sums, means and "
                     "squares overflow to infinity)", short(value))
            return None
        return number

    def string_list(self, rec: dict, where: str, key: str, *, required: bool = True) -> list[str] | None:
        value = rec.get(key)
        if value is None:
            if required:
                self.add(where, key, "a list of strings", "nothing")
            return None if required else []
        if not isinstance(value, list):
            self.add(where, key, "a list of strings", f"{type(value).__name__} {short(value)}")
            return None
        bad = [i for i, v in enumerate(value) if not isinstance(v, str)]
        if bad:
            self.add(where, f"{key}[{bad[0]}]", "a string", f"{type(value[bad[0]]).__name__} {short(value[bad[0]])}")
            return None
        # each element under the same limits as any text field (length, control characters)
        ok = [self.text({f"{key}[{i}]": v}, where, f"{key}[{i}]", allow_empty=True) for i, v in enumerate(value)]
        return None if None in ok else value

    def texts_within(self, value: object, where: str, key: str) -> bool:
        """Every string anywhere inside a JSON value (grounding: lists of lists, objects) under the text limits;
        keys included. False (with the problems added) when one is not."""
        ok = True
        if isinstance(value, str):
            return self.text({key: value}, where, key, allow_empty=True) is not None
        if isinstance(value, list):
            for i, v in enumerate(value):
                ok = self.texts_within(v, where, f"{key}[{i}]") and ok
        elif isinstance(value, dict):
            for k, v in value.items():
                ok = self.texts_within(k, where, f"{key} (a key)") and ok
                ok = self.texts_within(v, where, f"{key}.{k}") and ok
        return ok

    def refuse_if_any(self) -> None:
        if self.problems:
            raise ImportRefused(self.problems)
