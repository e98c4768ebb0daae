"""A dataset's language, detected from its texts when its importer was not told one.

The language picks the default tokenizer (`en` for English, `char` for any other) and METEOR 1.5's mode
(`-l en -norm` for English, the language-independent `-l other` for any other), so a dataset imported
without one would be scored as Chinese. `detect` decides from the texts of the dataset's items (their
contexts and references), by script:

- count the letters (characters Python's `str.isalpha` accepts: Unicode categories L*, as RE2's `\\p{L}`),
  the CJK characters among them (Han ideographs, kana, hangul: the ranges in CJK below) and the Latin
  letters (LATIN below);
- CJK share = CJK characters / letters. At CJK_SHARE (3/10) or more the texts are CJK: `ko` when hangul is
  more than half of the CJK characters, `ja` when kana is at least KANA_SHARE (1/5) of them, else `zh`.
  The threshold is below one half because a CJK character carries about a word while a Latin word takes
  four to five letters: at 0.3 CJK characters per letter, CJK words already outnumber Latin ones, so a
  Chinese corpus with English names and titles stays Chinese, and an English one with a few Chinese names
  stays English;
- otherwise, when Latin letters are at least LATIN_SHARE (1/2) of the letters, `en`. Script cannot tell
  English from French or German: a dataset in another Latin-script language must say its `language`;
- otherwise (no letters at all, or mostly another script such as Cyrillic) no language: the dataset keeps
  none, and the import report says so.

The same rule runs in SQL in migration 10 (datasets stored without a language are detected when a store is
first opened by this version), from the same ranges and thresholds (`sql_counts`, `sql_decision`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Iterable

import numpy as np

# thresholds as (numerator, denominator): compared in integers, so Python and SQL agree exactly
CJK_SHARE = (3, 10)
KANA_SHARE = (1, 5)
LATIN_SHARE = (1, 2)

# (low, high) code points, inclusive
HAN = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F))
KANA = ((0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F))
HANGUL = ((0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7AF))
LATIN = ((0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x24F), (0x1E00, 0x1EFF))

NOTE = '{language} (detected from the texts; set "language" to override)'


def _sql_class(ranges, negate: bool = True) -> str:
    """An RE2 character class of the ranges (negated: what regexp_replace removes)."""
    return "[" + ("^" if negate else "") + "".join(f"\\x{{{lo:X}}}-\\x{{{hi:X}}}" for lo, hi in ranges) + "]"


@dataclass(frozen=True)
class Counts:
    letters: int = 0
    han: int = 0
    kana: int = 0
    hangul: int = 0
    latin: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(a + b for a, b in zip(self.astuple(), other.astuple())))

    def astuple(self) -> tuple[int, ...]:
        return (self.letters, self.han, self.kana, self.hangul, self.latin)


@cache
def _alpha_bmp() -> np.ndarray:
    """str.isalpha of every code point below U+10000."""
    return np.array([chr(c).isalpha() for c in range(0x10000)], dtype=bool)


def _in(cp: np.ndarray, ranges) -> int:
    out = np.zeros(len(cp), dtype=bool)
    for lo, hi in ranges:
        out |= (cp >= lo) & (cp <= hi)
    return int(out.sum())


def count(texts: Iterable[str]) -> Counts:
    """Letters, Han, kana, hangul and Latin characters over all the texts (vectorised over code points:
    the same counts as str.isalpha and the regular expressions of the ranges, character by character)."""
    joined = "".join(t for t in texts if t)
    if not joined:
        return Counts()
    cp = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    bmp = cp < 0x10000
    letters = int(_alpha_bmp()[cp[bmp]].sum()) + sum(chr(c).isalpha() for c in cp[~bmp].tolist())
    return Counts(letters, _in(cp, HAN), _in(cp, KANA), _in(cp, HANGUL), _in(cp, LATIN))


def decide(c: Counts) -> str | None:
    """The language the counts say (module docstring), or None."""
    if c.letters == 0:
        return None
    cjk = c.han + c.kana + c.hangul
    if CJK_SHARE[1] * cjk >= CJK_SHARE[0] * c.letters:
        if 2 * c.hangul > cjk:
            return "ko"
        if KANA_SHARE[1] * c.kana >= KANA_SHARE[0] * cjk:
            return "ja"
        return "zh"
    if LATIN_SHARE[1] * c.latin >= LATIN_SHARE[0] * c.letters:
        return "en"
    return None


def detect(texts: Iterable[str]) -> str | None:
    """The language of these texts (contexts and references of a dataset's items), or None."""
    return decide(count(texts))


def note(language: str | None) -> str:
    """The import report's line about a detected language (or about none)."""
    if language is None:
        return ('language not detected from the texts (no letters, or mostly a script other than CJK or Latin): '
                'the dataset has none and is scored as a non-English one (char tokens, METEOR -l other); '
                'set "language" to say it')
    return "language " + NOTE.format(language=language)


def sql_counts(text: str) -> str:
    """SQL summing the five counts of `text` (an SQL expression) as letters, han, kana, hangul, latin."""
    def n(cls: str) -> str:
        return f"sum(length(regexp_replace({text}, '{cls}', '', 'g')))"
    letters = "[^\\p{L}]"
    return ", ".join((f"{n(letters)} AS letters", f"{n(_sql_class(HAN))} AS han", f"{n(_sql_class(KANA))} AS kana",
                      f"{n(_sql_class(HANGUL))} AS hangul", f"{n(_sql_class(LATIN))} AS latin"))


def sql_decision() -> str:
    """SQL, over the columns of sql_counts, giving the language `decide` gives (NULL for none)."""
    cjk = "(han + kana + hangul)"
    return (f"CASE WHEN coalesce(letters, 0) = 0 THEN NULL "
            f"WHEN {CJK_SHARE[1]} * {cjk} >= {CJK_SHARE[0]} * letters THEN "
            f"(CASE WHEN 2 * hangul > {cjk} THEN 'ko' WHEN {KANA_SHARE[1]} * kana >= {KANA_SHARE[0]} * {cjk} THEN 'ja' "
            f"ELSE 'zh' END) "
            f"WHEN {LATIN_SHARE[1]} * latin >= {LATIN_SHARE[0]} * letters THEN 'en' ELSE NULL END")
