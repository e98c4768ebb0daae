"""Reading user files: CSV, TSV, JSONL and xlsx, in UTF-8 (BOM or not), UTF-16 or GB18030/GBK.

Every record comes with the place a user would look for it ("line 3", "row 7").
"""
from __future__ import annotations

import csv
import json
import math
import os
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from evalcore.errors import ImportRefused, Problem, short

ENCODINGS_EXPECTED = "text in UTF-8 (with or without BOM), UTF-16 with BOM, or GB18030/GBK"
# Limits a user would accept; a file over them is refused with the row and the limit.
MAX_COLUMNS = int(os.environ.get("EVALCORE_MAX_COLUMNS", 1000))
MAX_CELL = int(os.environ.get("EVALCORE_MAX_CELL", 100_000))   # characters per cell
# C0 controls and DEL, except tab, newline and carriage return (which texts may hold); NUL and the
# like are never what a user meant, and some tools truncate at them.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
NORMALISED = ("normalised {n} identifier(s): surrounding whitespace removed and full-width or other "
              "compatibility forms folded (Unicode NFKC)")


def normalise_id(value: str) -> str:
    """The one way identifiers (item, dialogue, model, track, annotator, dimension names) are read:
    Unicode NFKC (full-width '１２' is '12'), then surrounding whitespace removed."""
    return unicodedata.normalize("NFKC", value).strip()


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


def _candidates(head: bytes) -> list[str]:
    if head.startswith(b"\xef\xbb\xbf"):
        return ["utf-8-sig"]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return ["utf-16"]
    return ["utf-8", "gb18030"]


def _unreadable(file: str, error: UnicodeDecodeError | None, offset: int = 0) -> ImportRefused:
    at = offset + (error.start if error else 0)
    return ImportRefused([Problem(file, "", "", ENCODINGS_EXPECTED,
                                  f"bytes none of them can read (first bad byte at offset {at})")])


def sniff_encoding(path: Path, file: str, block: int = 1 << 20) -> str:
    """The encoding that reads the whole file, found by decoding it block by block (never the whole
    file in memory at once: a large upload costs its parsed rows, not three copies of itself)."""
    import codecs

    with path.open("rb") as fh:
        head = fh.read(4)
    first = None
    for enc in _candidates(head):
        decoder, offset = codecs.getincrementaldecoder(enc)(), 0
        try:
            with path.open("rb") as fh:
                while chunk := fh.read(block):
                    decoder.decode(chunk)
                    offset += len(chunk)
                decoder.decode(b"", final=True)
            return enc
        except UnicodeDecodeError as exc:
            first = first or (exc, offset)
    raise _unreadable(file, *first) if first else _unreadable(file, None)


def read_table(path: str | Path, *, kinds: tuple[str, ...] = ("csv", "tsv", "jsonl", "xlsx")) -> Table:
    """Read a file by its extension into records; refuse unreadable files whole. The file is read as
    a stream: what stays in memory is its records, not the file's bytes or text."""
    path = Path(path)
    name = str(path)
    suffix = path.suffix.lower().lstrip(".")
    if suffix == "json":
        suffix = "jsonl"
    if suffix not in kinds:
        raise ImportRefused([Problem(
            name, "", "", "a file ending in " + ", ".join("." + k for k in kinds), f".{suffix or '(none)'}"
        )])
    if not path.is_file():
        raise ImportRefused([Problem(name, "", "", "an existing file", "no such file")])
    if suffix == "xlsx":
        return _read_xlsx(path)
    enc = sniff_encoding(path, name)
    with path.open(encoding=enc, newline="") as fh:
        if suffix == "jsonl":
            table = _read_jsonl(fh, name)
        else:
            table = _read_csv(fh, name, "\t" if suffix == "tsv" else ",")
    table.encoding = enc
    return table


def _read_jsonl(lines, name: str) -> Table:
    """Records from an iterable of lines (an open file, or text.splitlines())."""
    records, places, problems = [], [], []
    columns: dict[str, None] = {}
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(name, f"line {lineno}", "", "one JSON object per line",
                                    f"invalid JSON ({exc.msg} at column {exc.colno})"))
            continue
        if not isinstance(obj, dict):
            problems.append(Problem(name, f"line {lineno}", "", "a JSON object", type(obj).__name__))
            continue
        columns.update(dict.fromkeys(obj))
        records.append(obj)
        places.append(lineno)
    if problems:
        raise ImportRefused(problems)
    if not records:
        raise ImportRefused([Problem(name, "", "", "at least one JSON object", "an empty file")])
    return Table(name, list(columns), records, Places("line", places))


def _read_csv(stream, name: str, delimiter: str) -> Table:
    """Records from an open text stream (newline=''), row by row."""
    csv.field_size_limit(max(MAX_CELL * 4, 131072))  # a longer cell is refused by name below, not by csv
    reader = csv.reader(stream, delimiter=delimiter)
    problems, records, places = [], [], []
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
        for index, row in enumerate(reader, start=2):
            if not any(cell.strip() for cell in row):
                continue
            if len(row) > width:
                problems.append(Problem(name, f"row {index}", "", f"{width} columns as in the header", f"{len(row)} columns"))
                continue
            if len(row) < width:
                row = row + [""] * (width - len(row))
            records.append(dict(zip(header, row)))
            places.append(index)
    except csv.Error as exc:
        raise ImportRefused([Problem(name, f"line {reader.line_num}", "", "well-formed CSV "
                                     f"(cells of at most {MAX_CELL:,} characters)", str(exc))]) from exc
    if problems:
        raise ImportRefused(problems)
    if not records:
        raise ImportRefused([Problem(name, "", "", "at least one data row", "only a header")])
    return Table(name, header, records, Places("row", places))


class Places:
    """Where each record was: 'row 7' or 'line 3', made when asked for (a million rows keep a
    million small integers, not a million strings)."""

    def __init__(self, unit: str, numbers):
        from array import array

        self.unit, self.numbers = unit, array("q", numbers)

    def __len__(self) -> int:
        return len(self.numbers)

    def __getitem__(self, i: int) -> str:
        return f"{self.unit} {self.numbers[i]}"

    def __iter__(self):
        return (f"{self.unit} {n}" for n in self.numbers)

    def __eq__(self, other) -> bool:
        return list(self) == list(other)


def _read_xlsx(path: Path) -> Table:
    import openpyxl

    name = str(path)
    try:
        wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many types for a broken file
        raise ImportRefused([Problem(name, "", "", "an .xlsx workbook", f"unreadable ({type(exc).__name__}: {exc})")]) from exc
    try:
        rows = list(wb.worksheets[0].iter_rows(values_only=True))
    finally:
        wb.close()
    if not rows:
        raise ImportRefused([Problem(name, "", "", "a header row and data rows", "an empty first sheet")])
    header = ["" if h is None else str(h).strip() for h in rows[0]]
    _check_header(name, header)
    records, places = [], []
    for index, row in enumerate(rows[1:], start=2):
        if all(cell is None or (isinstance(cell, str) and not cell.strip()) for cell in row):
            continue
        values = ["" if cell is None else cell for cell in row]
        records.append(dict(zip(header, values)))
        places.append(f"row {index}")
    if not records:
        raise ImportRefused([Problem(name, "", "", "at least one data row", "only a header")])
    return Table(name, header, records, places, encoding="xlsx")


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

    def number(self, rec: dict, where: str, key: str) -> float | None:
        value = rec.get(key)
        if isinstance(value, bool):
            self.add(where, key, "a number", short(value))
            return None
        if isinstance(value, (int, float)):
            number = float(value)
        elif isinstance(value, str) and value.strip():
            try:
                number = float(value.strip())
            except ValueError:
                self.add(where, key, "a number", short(value))
                return None
        else:
            self.add(where, key, "a number", "nothing" if value in (None, "") else short(value))
            return None
        if math.isnan(number) or math.isinf(number):
            self.add(where, key, "a finite number", short(value))
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
        return value

    def refuse_if_any(self) -> None:
        if self.problems:
            raise ImportRefused(self.problems)
