"""Errors that reach users: every refusal names file, place, field and expectation."""
from __future__ import annotations

import re
from dataclasses import dataclass, fields

from evalcore.core.text import CONTROL, SURROGATE

# What a message may not carry as it is: a terminal acts on control characters (ESC starts a sequence that can
# rewrite the screen), newlines would break the one-line-per-problem list, and a lone surrogate cannot be
# encoded at all (printing it, or sending it to a page, raises UnicodeEncodeError).
_UNSHOWABLE = re.compile(f"{CONTROL.pattern}|{SURROGATE.pattern}|[\n\r\t]")


def showable(text: str) -> str:
    """`text` with control characters, line breaks and lone surrogates written as escapes ('\\x1b', '\\ud800')."""
    if not _UNSHOWABLE.search(text):
        return text
    return _UNSHOWABLE.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii"), text)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file. Its texts name what the file holds (keys, names, values), so they are
    made showable (see `showable`) when the problem is made."""

    file: str
    where: str  # "line 3", "row 5", "sheet 人工评估结果 row 7", "" for the whole file
    field: str  # column or key; "" when the problem is not about one field
    expected: str
    got: str = ""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, str) and _UNSHOWABLE.search(value):
                object.__setattr__(self, f.name, showable(value))

    def __str__(self) -> str:
        parts = [self.file]
        if self.where:
            parts.append(self.where)
        if self.field:
            parts.append(f"field '{self.field}'")
        text = ", ".join(parts) + f": expected {self.expected}"
        if self.got:
            text += f", got {self.got}"
        return text


class ImportRefused(Exception):
    """A whole file refused; nothing was written."""

    MAX_SHOWN = 20

    def __init__(self, problems: list[Problem]):
        if not problems:
            raise ValueError("ImportRefused needs at least one problem")
        self.problems = list(problems)
        super().__init__(self.render())

    def render(self) -> str:
        shown = [f"  - {p}" for p in self.problems[: self.MAX_SHOWN]]
        more = len(self.problems) - self.MAX_SHOWN
        n = len(self.problems)
        head = f"refused {self.problems[0].file}: {n:,} problem(s); nothing was written"
        if more <= 0:
            return "\n".join([head, *shown])
        kinds = [f"  {count:,} x {kind}" for kind, count in self.kinds()]
        return "\n".join([head, "by kind:", *kinds, f"the first {self.MAX_SHOWN}:", *shown,
                          f"  ... and {more:,} more problem(s)"])

    def kinds(self) -> list[tuple[str, int]]:
        """(field and expectation, count), most frequent first: thousands of rows wrong in one way read as one line."""
        counts: dict[str, int] = {}
        for p in self.problems:
            kind = (f"field '{p.field}': " if p.field else "") + f"expected {p.expected}"
            counts[kind] = counts.get(kind, 0) + 1
        return sorted(counts.items(), key=lambda kv: -kv[1])


class StoreError(Exception):
    """The store cannot be used as asked (too new, missing, locked)."""


# What the store layer raises for the failures a write can meet (evalcore.store: transaction, Lease, _open), each
# with one sentence that says what became of the write; a caller that shows StoreError's text shows the truth.
class StoreBusy(StoreError):
    """Another process held the store's file longer than this one waits; nothing was done."""


class ReadOnlyStore(StoreError):
    """The store's file system (or its permissions) lets it be read, not written; nothing was written."""


class DiskFull(StoreError):
    """The disk holding the store filled up during a write. `stored`: the write is in the store all the same
    (DuckDB committed it to the store's write-ahead log, fsynced, before the checkpoint that failed)."""

    def __init__(self, message: str, stored: bool = False):
        super().__init__(message)
        self.stored = stored


def short(value: object, limit: int = 60) -> str:
    """A value as it appears in a message: repr, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
