"""Names without invisible characters, and names that look alike (issue 61, C15): the one normal form of names
(core/text.py) removes format and other default-ignorable characters, so every caller gets it; `skeleton` (a
subset of UTS #39's confusables: Cyrillic and Greek letters drawn like Latin ones) makes look-alikes one name."""
from __future__ import annotations

import pytest

from evalcore.core.text import identity_key, invisible, lookalike_letters, normalise_id, skeleton

INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u00ad", "\ufeff", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",
             "\u2066", "\u2067", "\u2068", "\u2069", "\u2060", "\u200e", "\u200f", "\u061c", "\ufe0f", "\u034f",
             "\u3164", "\U000e0041"]


@pytest.mark.parametrize("char", INVISIBLE, ids=lambda c: f"U+{ord(c):04X}")
def test_invisible_characters_are_no_part_of_a_name(char):
    for name in (f"ali{char}ce", f"{char}alice", f"alice{char}", f"al{char}{char}ice"):
        assert invisible(name) and normalise_id(name) == "alice" and identity_key(name) == "alice"
        assert skeleton(name) == skeleton("alice")
    assert normalise_id(char * 3) == ""   # a name of nothing but them is no name


# (a look-alike of 'alice' or 'Carol', the letter that differs)
LOOKALIKES = [("\u0430lice", "CYRILLIC SMALL LETTER A"), ("al\u0456ce", "CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I"),
              ("ali\u0441e", "CYRILLIC SMALL LETTER ES"), ("alic\u0435", "CYRILLIC SMALL LETTER IE"),
              ("\u0391LICE", "GREEK CAPITAL LETTER ALPHA"), ("C\u0430r\u03bfl", "GREEK SMALL LETTER OMICRON"),
              ("\u0421arol", "CYRILLIC CAPITAL LETTER ES")]


@pytest.mark.parametrize("name, letter", LOOKALIKES)
def test_lookalikes_share_a_skeleton_but_not_an_identity(name, letter):
    latin = "alice" if skeleton(name) == "alice" else "carol"
    assert skeleton(name) == skeleton(latin) and identity_key(name) != identity_key(latin)
    assert any(letter in said for said in lookalike_letters(name))


def test_names_people_tell_apart_stay_apart():
    # confusables within Latin (1/l, 0/O) are left out of the table on purpose; other scripts stay themselves
    for a, b in [("qwen-v1", "qwen-vl"), ("model-0", "model-O"), ("rn", "m"), ("张三", "李四"), ("Борис", "Bopuc")]:
        assert skeleton(a) != skeleton(b)
    assert skeleton("ＣＡＲＯＬ") == skeleton(" carol ") == "carol"
