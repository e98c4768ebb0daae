"""The one normal form of a name (model, metric, track, dimension, annotator, task) and the one rule for
characters nobody means, shared by the importers, the CLI and the rating tasks.

- A name is read in Unicode NFKC (full-width 'ＢＬＥＵ４' is 'BLEU4'), surrounding whitespace removed.
- Two people's names are the same person when their keys are equal: the normal form, casefolded, with
  inner runs of whitespace made one space ('Carol', ' carol ' and 'ＣＡＲＯＬ' are one annotator).
- Control characters are refused in names and in text people write (comments, guidelines): C0 controls
  except tab, newline and carriage return, DEL and the C1 controls (U+0080-U+009F, e.g. U+009B, a
  terminal's CSI). No user means them, terminals act on them and some tools cut text at NUL.
- Lone surrogates (U+D800-U+DFFF on their own) are not text: no encoding can write them.
"""
from __future__ import annotations

import re
import unicodedata

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
SURROGATE = re.compile(r"[\ud800-\udfff]")


def normalise_id(value: str) -> str:
    """Unicode NFKC, then surrounding whitespace removed."""
    return unicodedata.normalize("NFKC", value).strip()


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
