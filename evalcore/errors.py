"""Errors that reach users: every refusal names file, place, field and expectation."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file."""

    file: str
    where: str  # "line 3", "row 5", "sheet 人工评估结果 row 7", "" for the whole file
    field: str  # column or key; "" when the problem is not about one field
    expected: str
    got: str = ""

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
        if more > 0:
            shown.append(f"  ... and {more} more problem(s)")
        n = len(self.problems)
        head = f"refused {self.problems[0].file}: {n} problem(s); nothing was written"
        return "\n".join([head, *shown])


class StoreError(Exception):
    """The store cannot be used as asked (too new, missing, locked)."""


def short(value: object, limit: int = 60) -> str:
    """A value as it appears in a message: repr, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
