"""Where a problem is in a file ("row 3", "line 7", "sheet 人工评估结果 row 2"), in the viewer's language on a page.

The readers name each record's place in English ("row 3"): that text is also stored (a rating's origin, a
response's origin) and printed by the CLI, so it stays as it is; a page shows it through `place`, which keeps the
number, the sheet's name and the file's name exactly as they are and words the rest in the run's language."""
from __future__ import annotations

import re

from evalcore.core.i18n import EN, N_, _, current

_SHEET_ROW = re.compile(r"sheet (?P<sheet>.+) row (?P<n>[\d,]+)")
_FORMS = (   # (pattern over the whole place, its message); the first that matches
    (re.compile(r"header \(row 1\)"), N_("header (row 1)")),
    (re.compile(r"row (?P<n>[\d,]+)"), N_("row {n}")),
    (re.compile(r"line (?P<n>[\d,]+)"), N_("line {n}")),
    (re.compile(r"line (?P<n>[\d,]+), item (?P<item>[\d,]+) \(index (?P<index>[\d,]+)\)"),
     N_("line {n}, item {item} (index {index})")),
    (_SHEET_ROW, N_("sheet {sheet} row {n}")),
    (re.compile(r"sheet (?P<sheet>.+)"), N_("sheet {sheet}")),
    (re.compile(r"the store"), N_("the store")),
    (re.compile(r"already in the store"), N_("already in the store")),
)
_IN_FILE = re.compile(r"(?P<file>\S.*?) (?P<place>(?:row|line) [\d,]+|sheet .+)")


def place(where: str) -> str:
    """`where` in this run's language: the same text in English (the CLI, a job), a translated form with its
    numbers and names kept on a page in another language; a place of no known form as it is."""
    if not where or current() == EN:
        return where
    for pattern, message in _FORMS:
        m = pattern.fullmatch(where)
        if m:
            return _(message).format(**m.groupdict())
    m = _IN_FILE.fullmatch(where)   # "other.csv row 3": a place in another file of the same upload
    if m and m["place"] != where:
        return _("{file} {place}").format(file=m["file"], place=place(m["place"]))
    return where
