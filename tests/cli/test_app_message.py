"""`evalcore app`'s start message points at the page and section that say how to run more processes: the file it
names exists and holds the section it quotes (it named the README, where that section no longer is)."""
from __future__ import annotations

import re

from evalcore.cli import serve
from support import ROOT


def test_the_capacity_note_names_a_page_and_a_section_that_exist():
    note = serve.capacity_note(1, available=4)
    page, section = re.search(r'\(([\w/.-]+\.md), "([^"]+)"\)', note).groups()
    headings = [line.lstrip("#").strip() for line in (ROOT / page).read_text(encoding="utf-8").splitlines()
                if line.startswith("#")]
    assert section in headings, (page, section, headings)
    assert "README" not in note
