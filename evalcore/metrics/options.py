"""The option every metric family may read: the language of the texts (`lang`), which the scorer sets from the
dataset's own (METEOR 1.5's mode, the judge's prompt language, BERTScore's baseline file)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LanguageOptions:
    lang: str = "zh"
