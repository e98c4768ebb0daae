"""Reading user files into records: CSV, TSV, JSONL (or .json) and xlsx, in UTF-8 (BOM or not), UTF-16 or
GB18030/GBK, each within the limits of an import (evalcore.ingest.limits).

Every record comes with the place a user would look for it ("line 3", "row 7").
"""
from __future__ import annotations

import contextlib
import csv
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evalcore.core import lazy
from evalcore.core import i18n
from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.core.i18n import _
from evalcore.ingest import archives, limits, strictjson
from evalcore.ingest.encodings import sniff_encoding
from evalcore.ingest.jsonread import parse_json
from evalcore.ingest.limits import Lines, Rows

# imported when a workbook is read (xlsx files only): the Upload page and every import command import this module,
# and openpyxl took 0.13 CPU-s of each
openpyxl = lazy.module("openpyxl")


def _check_header(name: str, header: list[str], where: str = "row 1") -> None:
    if len(header) > limits.MAX_COLUMNS:
        raise ImportRefused([Problem(name, where, "", _("at most {n} columns (EVALCORE_MAX_COLUMNS)").format(
            n=i18n.number(limits.MAX_COLUMNS)), _("{n} columns").format(n=i18n.number(len(header))))])


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
            str(path), "", "", _("a file ending in {suffixes}").format(suffixes=", ".join("." + k for k in kinds)),
            f".{suffix}" if suffix else _(".(none)")
        )])
    if not path.is_file():
        raise ImportRefused([Problem(str(path), "", "", _("an existing file"), _("no such file"))])
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
            obj = parse_json(line, name, _("one JSON object per line"), f"line {lineno}", lineno, decoder)
        except ImportRefused as exc:
            problems += exc.problems
            continue
        if not isinstance(obj, dict):
            problems.append(Problem(name, f"line {lineno}", "", _("a JSON object"), type(obj).__name__))
            continue
        rows.add(f"line {lineno:,}")
        if not problems:   # once a line is refused, the rest are only checked
            yield obj, lineno
    if problems:
        raise ImportRefused(problems)
    if not rows.n:
        raise ImportRefused([Problem(name, "", "", _("at least one JSON object"), _("an empty file"))])


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
    csv.field_size_limit(max(limits.MAX_CELL * 4, 131072))  # a longer cell is refused by name below, not by csv
    if not isinstance(lines, Lines):
        lines = Lines(iter(lines), name) if hasattr(lines, "readline") else _ListLines(lines, name)
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    problems, records, places = [], [], []
    rows = Rows(name)
    start = 1
    try:
        first = next(reader, None)
        if first is None:
            raise ImportRefused([Problem(name, "", "", _("a header row and data rows"), _("an empty file"))])
        _check_header(name, first)   # before reading the rest: a million-column file is refused at once
        header = [h.strip() for h in first]
        counts = Counter(header)
        dupes = sorted(h for h, n in counts.items() if n > 1 and h)
        if dupes:
            problems.append(Problem(name, "row 1", dupes[0], _("each column name once"), _("it appears more than once")))
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
                problems.append(Problem(name, f"row {index}", "", _("{n} columns as in the header").format(n=width),
                                        _("{n} columns").format(n=len(row))))
                continue
            if len(row) < width:
                row = row + [""] * (width - len(row))
            rows.add(f"row {index:,}")
            records.append(dict(zip(header, row)))
            places.append(index)
    except csv.Error as exc:
        opened = _open_quote(lines.kept, start, delimiter)
        if opened is not None:
            got = (_("a quote opened on line {line} that is never closed (the file ends inside it)")
                   if "end of data" in str(exc) else
                   _("a quote opened on line {line} that is never closed (the cell grew past {n} characters)"))
            raise ImportRefused([Problem(name, f"line {opened:,}", "", _("a quoted cell that ends with a closing quote"),
                                         got.format(line=f"{opened:,}", n=i18n.number(csv.field_size_limit())))]) from None
        raise ImportRefused([Problem(name, f"line {lines.number:,}", "", _(
            "well-formed CSV (cells of at most {n} characters; a quoted cell closed by a quote followed by the "
            "delimiter or the line's end)").format(n=i18n.number(limits.MAX_CELL)), str(exc))]) from None
    if problems:
        raise ImportRefused(problems)
    if not records:
        raise ImportRefused([Problem(name, "", "", _("at least one data row"), _("only a header"))])
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


def _read_xlsx(path: Path) -> Table:
    """The first sheet, row by row (read-only: the sheet is streamed, rows counted against MAX_ROWS). A formula
    cell is read by its value as Excel last saved it; one with no saved value is refused naming the cell."""
    name = str(path)
    archives.check_archive(path, name)
    try:
        wb = openpyxl.load_workbook(path, read_only=True, data_only=False)
    except Exception as exc:  # openpyxl raises many types for a broken file
        raise ImportRefused([Problem(name, "", "", _("an .xlsx workbook"), _("unreadable ({error})").format(
            error=f"{type(exc).__name__}: {exc}"))]) from exc
    header: list[str] | None = None
    records, places, formulas = [], [], []
    rows = Rows(name)
    try:
        if not wb.worksheets:
            raise ImportRefused([Problem(name, "", "", _("a workbook with a sheet"), _("none"))])
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
        raise ImportRefused([Problem(name, "", "", _("a header row and data rows"), _("an empty first sheet"))])
    if any(f[2] == 1 for f in formulas):
        f = next(f for f in formulas if f[2] == 1)
        raise ImportRefused([Problem(name, "row 1", "", _("column names, not formulas"),
                                     _("a formula in cell {cell}").format(cell=f[3]))])
    if formulas:
        _formula_values(path, name, header, records, places, formulas)
    records = [dict(zip(header, ["" if v is None else v for v in values])) for values in records]
    if not records:
        raise ImportRefused([Problem(name, "", "", _("at least one data row"), _("only a header"))])
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
            for record, column, __, coordinate, formula in wanted.get(index, []):
                value = values[column] if column < len(values) else None
                if value is None:
                    col = header[column] if column < len(header) else ""
                    problems.append(Problem(name, f"row {index}", col, _(
                        "a value (a formula's value as last saved by a spreadsheet program: open the file in Excel or "
                        "LibreOffice and save it)"), _("cell {cell} holds the formula {formula} with no saved value").format(
                            cell=coordinate, formula=short(formula))))
                else:
                    records[record][column] = value
    finally:
        wb.close()
    if problems:
        raise ImportRefused(problems)
