"""Counts as people write them: "1 model", "2 models", never "1 models" or "2 model(s)"."""
from __future__ import annotations

from evalcore.core import i18n


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and the noun in the number it takes ("1 model", "0 models", "2,000 responses"); `plural` for
    a noun that does not take an -s ("1 unit of analysis" is not one)."""
    if i18n.current() != i18n.EN:   # a page in another language: the noun from the catalog (mark it with N_ where
        return f"{i18n.number(n)} {i18n._(noun)}"   # count() is called); Chinese nouns have one form
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
