"""Named tokenizers. Each has a signature string recorded with every score it feeds.

char:  every CJK character is a token; runs of Latin letters or digits stay whole; whitespace
       is dropped; any other character (punctuation, emoji) is a token of its own.
space: the text as stored, split on whitespace (the LIC 2019 DuConv script's convention).
jieba: jieba word segmentation (its default dictionary, HMM on), whitespace dropped.
en:    lower-cased; runs of letters/digits/underscore are words, each punctuation mark a token.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.metadata import version
from typing import Callable

import jieba
import numpy as np

from evalcore.core.options import TOKENIZER_NAMES

# CJK ideographs (basic, extension A, compatibility), kana and hangul count one per character.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
# Letters and digits that form runs (one token per run); char_encode uses the same ranges.
_RUN_RANGES = [(0x41, 0x5A), (0x61, 0x7A), (0x30, 0x39), (0xC0, 0x24F)]
_RUN = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _RUN_RANGES)
_CHAR_TOKEN = re.compile(rf"[{_CJK}]|[{_RUN}]+|[^\s{_CJK}{_RUN}]")


def char_tokens(text: str) -> list[str]:
    return _CHAR_TOKEN.findall(text)


def _in_ranges(cp: np.ndarray, ranges: list[tuple[int, int]]) -> np.ndarray:
    out = np.zeros(len(cp), dtype=bool)
    for lo, hi in ranges:
        out |= (cp >= lo) & (cp <= hi)
    return out


MULTI_BASE = 0x110000  # ids of multi-character tokens start after the last code point


def _space_table() -> np.ndarray:
    """Code points Python's str.isspace accepts; all of them lie below U+3001."""
    table = np.zeros(0x3001, dtype=bool)
    table[[c for c in range(0x3001) if chr(c).isspace()]] = True
    return table


SPACE_TABLE = _space_table()


def char_encode(texts: list[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """`char` tokenization of many texts at once, as integer ids: the same tokens as char_tokens.

    Returns (ids, tokens per text, multi): a one-character token's id is its code point; a longer
    run's id is MULTI_BASE + its index in `multi`. Vectorised over code points (few temporaries:
    fresh memory is what costs most here), no per-text regex.
    """
    joined = "".join(texts)
    cp = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if len(cp) == 0:
        return np.empty(0, np.int64), np.zeros(len(texts), np.int64), []
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), out=offsets[1:])
    boundary = np.zeros(len(cp) + 1, dtype=bool)
    boundary[offsets] = True  # a text starts here (and one past the end)
    space = SPACE_TABLE[np.minimum(cp, 0x3000)] & (cp <= 0x3000)
    run = _in_ranges(cp, _RUN_RANGES)
    cont = np.zeros(len(cp), dtype=bool)  # a run character continuing the run before it
    cont[1:] = run[1:] & run[:-1] & ~boundary[1:-1]
    starts = np.flatnonzero(~space & ~cont)
    ids = cp[starts].astype(np.int64)
    run_starts = np.flatnonzero(run & ~cont)
    if len(run_starts):
        ends = np.flatnonzero(run & ~np.append(cont[1:], False))  # last character of each run
        long = np.flatnonzero(ends > run_starts)
        if len(long):
            table: dict[str, int] = {}
            at = np.searchsorted(starts, run_starts[long])
            for k, a, b in zip(at.tolist(), run_starts[long].tolist(), ends[long].tolist()):
                ids[k] = MULTI_BASE + table.setdefault(joined[a:b + 1], len(table))
            multi = list(table)
        else:
            multi = []
    else:
        multi = []
    per_text = np.diff(np.searchsorted(starts, offsets))
    return ids, per_text, multi


def space_tokens(text: str) -> list[str]:
    return text.split()


_EN_TOKEN = re.compile(r"\w+|[^\w\s]")


def en_tokens(text: str) -> list[str]:
    return _EN_TOKEN.findall(text.lower())


def jieba_tokens(text: str) -> list[str]:
    return [t for t in _jieba().lcut(text) if t.strip()]


def _jieba():
    jieba.setLogLevel(60)
    return jieba


def _jieba_version() -> str:
    try:
        return version("jieba")
    except Exception:  # not installed: the tokenizer fails when used, with its own error
        return "missing"


@dataclass(frozen=True)
class Tokenizer:
    name: str
    version: str
    fn: Callable[[str], list[str]]
    # Optional fast path: many texts -> (ids, tokens per text, multi-character words); see char_encode.
    encode: Callable[[list[str]], tuple[np.ndarray, np.ndarray, list[str]]] | None = None

    @property
    def signature(self) -> str:
        return f"tok:{self.name}-{self.version}"

    def __call__(self, text: str) -> list[str]:
        return self.fn(text)


TOKENIZERS: dict[str, Tokenizer] = {
    "char": Tokenizer("char", "1", char_tokens, char_encode),
    "space": Tokenizer("space", "1", space_tokens),
    "jieba": Tokenizer("jieba", _jieba_version(), jieba_tokens),
    "en": Tokenizer("en", "1", en_tokens),
}
assert tuple(TOKENIZERS) == TOKENIZER_NAMES, "core.options names the tokenizers for the CLI's help"


def get_tokenizer(name: str) -> Tokenizer:
    try:
        return TOKENIZERS[name]
    except KeyError:
        raise ValueError(f"unknown tokenizer {name!r}; known: {', '.join(TOKENIZERS)}") from None
