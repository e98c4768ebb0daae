"""The README's tour and the sharing guide export datasets that the store `evalcore init` builds holds: run as written
on that store, each command finds its dataset (they exported `--dataset msde`, which it does not hold)."""
from __future__ import annotations

import re

from evalcore.services.defaults import DEFAULT_DATASETS
from support import ROOT

EXPORTS = re.compile(r"evalcore (?:record export|export eee|report)\b[^`\n]*?--dataset\s+(\S+)")


def test_exports_name_a_dataset_of_the_default_store():
    named = []
    for path in (ROOT / "README.md", ROOT / "docs" / "guide" / "sharing.md"):
        text = re.sub(r"\n\s+", " ", path.read_text(encoding="utf-8"))   # a command wrapped over two lines
        named += [(path.name, d) for d in EXPORTS.findall(text)]
    assert named and {p for p, _ in named} == {"README.md", "sharing.md"}
    placeholders = {"D", "DATASET"}   # a command's synopsis, not a command to run
    assert [(p, d) for p, d in named if d not in DEFAULT_DATASETS and d not in placeholders] == []
