"""The one normal form of a name (model, metric, track, dimension, annotator, task) and the one rule for
characters nobody means, shared by the importers, the CLI and the rating tasks.

- A name is read in Unicode NFKC (full-width 'ＢＬＥＵ４' is 'BLEU4'), surrounding whitespace removed.
- Two people's names are the same person when their keys are equal: the normal form, casefolded, with
  inner runs of whitespace made one space ('Carol', ' carol ' and 'ＣＡＲＯＬ' are one annotator).
- Control characters are refused in names and in text people write (comments, guidelines): C0 controls
  except tab, newline and carriage return, DEL and the C1 controls (U+0080-U+009F, e.g. U+009B, a
  terminal's CSI). No user means them, terminals act on them and some tools cut text at NUL.
- Lone surrogates (U+D800-U+DFFF on their own) are not text: no encoding can write them.
- Invisible characters are removed from names (INVISIBLE): format characters (Unicode category Cf: zero-width
  space and joiners, soft hyphen, BOM, the bidirectional marks, embeddings, overrides and isolates, word joiner,
  tags) and the other default-ignorable ones (variation selectors, combining grapheme joiner, Hangul fillers).
  'alice' with a zero-width space in it would otherwise be a second 'alice', shown exactly like the first.
- Names that look alike are one name where a new one is registered (`skeleton`, UTS #39's confusable
  skeleton on a subset of its table: the Cyrillic and Greek letters drawn like Latin ones), so a Cyrillic
  'а' in 'аlice' does not make a second person shown as 'alice'.
"""
from __future__ import annotations

import re
import unicodedata

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
SURROGATE = re.compile(r"[\ud800-\udfff]")


# Default-ignorable characters that are not of category Cf (Unicode's DerivedCoreProperties.txt,
# Default_Ignorable_Code_Point): combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian
# variation selectors and vowel separator, variation selectors (and their supplement).
_IGNORABLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0"
                        "\U000e0100-\U000e01ef]")


def invisible(value: str) -> list[str]:
    """The invisible characters of `value` (INVISIBLE above), in order."""
    return [c for c in value if unicodedata.category(c) == "Cf" or _IGNORABLE.match(c)]


def _visible(value: str) -> str:
    if value.isascii():   # the common case, without a look at every character
        return value
    return "".join(c for c in value if unicodedata.category(c) != "Cf" and not _IGNORABLE.match(c))


def normalise_id(value: str) -> str:
    """Unicode NFKC, invisible characters removed (format characters and the other default-ignorable ones),
    then surrounding whitespace removed."""
    return _visible(unicodedata.normalize("NFKC", value)).strip()


def identity_key(value: str) -> str:
    """What two names are compared by: the normal form, casefolded, inner whitespace one space."""
    return " ".join(normalise_id(value).casefold().split())


def bad_character(value: str) -> str | None:
    """The first character a name or comment may not hold, described ('control character U+001B at
    position 4'); None when there is none."""
    for pattern, what in ((CONTROL, "control character"), (SURROGATE, "lone surrogate")):
        found = pattern.search(value)
        if found:
            return f"{what} U+{ord(found.group()):04X} at position {found.start() + 1}"
    return None


# Letters of other scripts drawn like Latin ones, each with the Latin letter it is confused with: a subset of
# Unicode's confusables.txt (UTS #39, Unicode Security Mechanisms), the Cyrillic and Greek letters
# whose prototype there is one Latin letter. Confusables within Latin itself (1/l/I, 0/O, rn/m) are left out on
# purpose: 'qwen-v1' and 'qwen-vl' are different models people tell apart.
_CONFUSABLE = str.maketrans({
    # Cyrillic
    "\u0430": "a", "\u0410": "A", "\u0412": "B", "\u0441": "c", "\u0421": "C", "\u0501": "d", "\u0435": "e",
    "\u0415": "E", "\u04bb": "h", "\u041d": "H", "\u0456": "i", "\u0406": "I", "\u04c0": "l", "\u04cf": "l",
    "\u0458": "j", "\u0408": "J", "\u041a": "K", "\u041c": "M", "\u043e": "o", "\u041e": "O", "\u0440": "p",
    "\u0420": "P", "\u051b": "q", "\u051a": "Q", "\u0455": "s", "\u0405": "S", "\u0422": "T", "\u051d": "w",
    "\u051c": "W", "\u0445": "x", "\u0425": "X", "\u0443": "y", "\u04af": "y", "\u0423": "Y", "\u04ae": "Y",
    "\u0417": "3", "\u04e0": "3", "\u0474": "V", "\u0475": "v",
    # Greek
    "\u03b1": "a", "\u0391": "A", "\u0392": "B", "\u0395": "E", "\u0396": "Z", "\u0397": "H", "\u03b9": "i",
    "\u0399": "I", "\u039a": "K", "\u039c": "M", "\u039d": "N", "\u03bf": "o", "\u039f": "O", "\u03c1": "p",
    "\u03a1": "P", "\u03a4": "T", "\u03c5": "u", "\u03a5": "Y", "\u03bd": "v", "\u03a7": "X", "\u03f2": "c",
    "\u03f9": "C", "\u03f3": "j", "\u037f": "J",
})


def skeleton(value: str) -> str:
    """What two names that look alike have in common: the identity key's normal form with each confusable letter
    replaced by the Latin one it looks like (the subset above of UTS #39's table), then casefolded with inner
    whitespace one space. Two names with equal skeletons are shown alike: where a new one is registered, it is
    the same name (taken), even when their identity keys differ."""
    mapped = unicodedata.normalize("NFD", normalise_id(value)).translate(_CONFUSABLE)
    return " ".join(unicodedata.normalize("NFKC", mapped).casefold().split())


def lookalike_letters(value: str) -> list[str]:
    """The letters of `value` that `skeleton` replaces, described ('U+0430 CYRILLIC SMALL LETTER A'), in order and
    once each: what makes two names that look alike different."""
    out: list[str] = []
    for c in unicodedata.normalize("NFD", normalise_id(value)):
        if c.translate(_CONFUSABLE) != c:
            said = f"U+{ord(c):04X} {unicodedata.name(c, 'UNNAMED')}"
            if said not in out:
                out.append(said)
    return out


# A blank response: empty or nothing but whitespace, of every kind str.isspace accepts (the ideographic space
# U+3000 too): what str.strip() removes. Every such code point lies below U+3001. BLANK_PATTERN is the same test
# for SQL, regexp_full_match(text, ?), so the importers, the Upload page and the leaderboard's coverage count the
# same responses as blank (RE2 stops at the first other character: ten times faster than trim(text, WHITESPACE),
# which rewrites every text, on a million responses).
WHITESPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace())
BLANK_PATTERN = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in WHITESPACE) + "]*"


def blank(text: str) -> bool:
    """Whether a response says nothing: empty or only whitespace (WHITESPACE)."""
    return not text.strip()
