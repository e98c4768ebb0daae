"""The limits of an import: a file, or an archive, is refused the moment it passes one, so that memory stays
bounded whatever the file or its compression ratio; each can be changed with an environment variable, read when
an import runs:

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
- EVALCORE_MAX_MANIFEST (16 MiB): bytes of an evaluation record's manifest.json, checked from the zip's directory
  before it is read (an exported manifest is tens of KB: the templates' text and a line per table).
- EVALCORE_MAX_LINE (10,000,000): characters of one physical line of a CSV, TSV or JSONL file (at most
  40 MB of text; a header of a million columns is still refused by its column count), read with a
  bounded readline (a file without newlines is not read whole into memory).
- EVALCORE_MAX_DEPTH (100): nesting of JSON arrays and objects (checked before parsing: no RecursionError).
- Numbers: finite and at most 1e100 in magnitude (MAX_MAGNITUDE), so that sums, means and squares of any
  realistic number of them stay finite (ten values of 1.7e308 would sum to inf).

Lines and Rows count what is read against them as it is read.
"""
from __future__ import annotations

import contextlib
import contextvars
import os

from evalcore.core import i18n
from evalcore.core.errors import ImportRefused, Problem
from evalcore.core.i18n import _
from evalcore.ingest import strictjson

# Limits a user would accept; a file over them is refused with the row and the limit. Module values are the
# defaults (tests may set them); the environment variable, when set, wins at the time of the import.
MAX_COLUMNS = int(os.environ.get("EVALCORE_MAX_COLUMNS", 1000))
MAX_CELL = int(os.environ.get("EVALCORE_MAX_CELL", 100_000))   # characters per cell
MAX_ROWS = 1_000_000
MAX_EXPANDED = 1 << 30
MAX_MEMBERS = 1000
MAX_LINE = 10_000_000
MAX_DEPTH = 100
MAX_MANIFEST = 16 << 20
MAX_MAGNITUDE = strictjson.MAX_MAGNITUDE
ENV = {"MAX_ROWS": "EVALCORE_MAX_ROWS", "MAX_EXPANDED": "EVALCORE_MAX_EXPANDED", "MAX_MEMBERS": "EVALCORE_MAX_MEMBERS",
       "MAX_LINE": "EVALCORE_MAX_LINE", "MAX_DEPTH": "EVALCORE_MAX_DEPTH",
       "MAX_MANIFEST": "EVALCORE_MAX_MANIFEST"}


def limit(name: str) -> int:
    """The limit `name` (MAX_ROWS, ...): its environment variable when set, else the module's value."""
    var = ENV[name]
    text = os.environ.get(var, "").strip()
    if not text:
        return globals()[name]
    try:
        value = int(float(text))
    except ValueError:
        raise ValueError(_("{var} must be a whole number, got {text}").format(var=var, text=repr(text))) from None
    if value < 1:
        raise ValueError(_("{var} must be at least 1, got {text}").format(var=var, text=repr(text)))
    return value


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
            raise ImportRefused([Problem(self.name, f"line {self.number:,}", "", _(
                "lines of at most {n} characters (EVALCORE_MAX_LINE)").format(n=i18n.number(self.most)),
                _("a longer line"))])
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
            raise ImportRefused([Problem(self.name, where, "", _("at most {n} rows (EVALCORE_MAX_ROWS)").format(
                n=i18n.number(self.most)), _("more"))])
        if self.budget is not None:
            self.budget[0] += 1
            if self.budget[0] > self.budget[1]:
                raise ImportRefused([Problem(self.name, where, "", _(
                    "at most {n} rows in all the files of the archive or folder together (EVALCORE_MAX_ROWS)").format(
                        n=i18n.number(self.budget[1])), _("more: this is row {row} of them").format(
                            row=f"{self.budget[0]:,}"))])


_BUDGET: contextvars.ContextVar[list | None] = contextvars.ContextVar("evalcore_row_budget", default=None)


@contextlib.contextmanager
def row_budget():
    """Within it, every file read shares one count of rows (MAX_ROWS for all the files of a .zip or folder)."""
    token = _BUDGET.set([0, limit("MAX_ROWS")])
    try:
        yield
    finally:
        _BUDGET.reset(token)
