"""The simulated-users guide shows the shipped user templates and persona styles in full: its TOML blocks are those
files as they are (a block for every file, each byte for byte), so an edited template cannot leave the page behind.
test_docs.py counts TOML blocks as data and checks nothing more of them."""
from __future__ import annotations

from support import ROOT
from support.docs import blocks

SIMULATION = ROOT / "evalcore" / "simulation"


def test_the_guide_shows_every_user_template_and_the_styles_as_shipped():
    shown = sorted(body for path, language, body, _ in blocks()
                   if path.as_posix() == "docs/guide/simulated-users.md" and language == "toml")
    files = [*sorted((SIMULATION / "templates").glob("user-*.toml")), SIMULATION / "styles.toml"]
    assert len(files) == 9
    assert shown == sorted(f.read_text(encoding="utf-8") for f in files)
