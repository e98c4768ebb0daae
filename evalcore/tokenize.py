"""Named tokenizers. Each has a signature string recorded with every score it feeds.

char:  every CJK character is a token; runs of Latin letters or digits stay whole;
       whitespace and punctuation-free splitting otherwise (punctuation marks are tokens).
space: the text as stored, split on whitespace (the LIC 2019 DuConv script's convention).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

# CJK ideographs (basic, extension A, compatibility), kana and hangul count one per character.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CHAR_TOKEN = re.compile(rf"[{_CJK}]|[A-Za-z0-9\u00c0-\u024f]+|[^\s{_CJK}A-Za-z0-9\u00c0-\u024f]")


def char_tokens(text: str) -> list[str]:
    return _CHAR_TOKEN.findall(text)


def space_tokens(text: str) -> list[str]:
    return text.split()


@dataclass(frozen=True)
class Tokenizer:
    name: str
    version: str
    fn: Callable[[str], list[str]]

    @property
    def signature(self) -> str:
        return f"tok:{self.name}-{self.version}"

    def __call__(self, text: str) -> list[str]:
        return self.fn(text)


TOKENIZERS: dict[str, Tokenizer] = {
    "char": Tokenizer("char", "1", char_tokens),
    "space": Tokenizer("space", "1", space_tokens),
}


def get_tokenizer(name: str) -> Tokenizer:
    try:
        return TOKENIZERS[name]
    except KeyError:
        raise ValueError(f"unknown tokenizer {name!r}; known: {', '.join(TOKENIZERS)}") from None
