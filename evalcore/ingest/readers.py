"""Reading user files: CSV, TSV, JSONL and xlsx, in UTF-8 (BOM or not), UTF-16 or GB18030/GBK.

Every record comes with the place a user would look for it ("line 3", "row 7").
"""
from __future__ import annotations

import csv
import io
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


def decode(data: bytes, file: str) -> tuple[str, str]:
    """Text and the encoding that read it. GB18030 is a superset of GBK and GB2312."""
    if data.startswith(b"\xef\xbb\xbf"):
        candidates = ["utf-8-sig"]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        candidates = ["utf-16"]
    else:
        candidates = ["utf-8", "gb18030"]
    first_error = None
    for enc in candidates:
        try:
            return data.decode(enc), enc
        except UnicodeDecodeError as exc:
            first_error = first_error or exc
    raise ImportRefused([Problem(
        file, "", "", ENCODINGS_EXPECTED,
        f"bytes none of them can read (first bad byte at offset {first_error.start})",
    )])


def read_table(path: str | Path, *, kinds: tuple[str, ...] = ("csv", "tsv", "jsonl", "xlsx")) -> Table:
    """Read a file by its extension into records; refuse unreadable files whole."""
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
    text, enc = decode(path.read_bytes(), name)
    if suffix == "jsonl":
        table = _read_jsonl(text, name)
    else:
        table = _read_csv(text, name, "\t" if suffix == "tsv" else ",")
    table.encoding = enc
    return table


def _read_jsonl(text: str, name: str) -> Table:
    records, places, problems = [], [], []
    columns: dict[str, None] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(name, f"line {lineno}", "", "one JSON object per line", f"invalid JSON ({exc.msg} at column {exc.colno})"))
            continue
        if not isinstance(obj, dict):
            problems.append(Problem(name, f"line {lineno}", "", "a JSON object", type(obj).__name__))
            continue
        columns.update(dict.fromkeys(obj))
        records.append(obj)
        places.append(f"line {lineno}")
    if problems:
        raise ImportRefused(problems)
    if not records:
        raise ImportRefused([Problem(name, "", "", "at least one JSON object", "an empty file")])
    return Table(name, list(columns), records, places)


def _read_csv(text: str, name: str, delimiter: str) -> Table:
    csv.field_size_limit(max(MAX_CELL * 4, 131072))  # a longer cell is refused by name below, not by csv
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        first = next(reader, None)
        if first is not None:
            _check_header(name, first)   # before reading the rest: a million-column file is refused at once
        rows = [first] + list(reader) if first is not None else []
    except csv.Error as exc:
        raise ImportRefused([Problem(name, f"line {reader.line_num}", "", "well-formed CSV "
                                     f"(cells of at most {MAX_CELL:,} characters)", str(exc))]) from exc
    if not rows:
        raise ImportRefused([Problem(name, "", "", "a header row and data rows", "an empty file")])
    header = [h.strip() for h in rows[0]]
    problems = []
    counts = Counter(header)
    dupes = sorted(h for h, n in counts.items() if n > 1 and h)
    if dupes:
        problems.append(Problem(name, "row 1", dupes[0], "each column name once", "it appears more than once"))
    records, places = [], []
    for index, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            problems.append(Problem(name, f"row {index}", "", f"{len(header)} columns as in the header", f"{len(row)} columns"))
            continue
        row = row + [""] * (len(header) - len(row))
        records.append(dict(zip(header, row)))
        places.append(f"row {index}")
    if problems:
        raise ImportRefused(problems)
    if not records:
        raise ImportRefused([Problem(name, "", "", "at least one data row", "only a header")])
    return Table(name, header, records, places)


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
