"""The docs say what a command that sets data aside does without `--yes`: `evalcore delete-model M` alone only says
what it would set aside (exit 1, nothing written; tests/cli/test_cli.py), so a sentence naming it without `--yes`
says "would" (docs/guide/endpoints.md said it set the responses aside)."""
from __future__ import annotations

import re

from support import ROOT


def test_delete_model_without_yes_is_described_as_a_dry_run():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    wrong = []
    for path in files:
        text = re.sub(r"\s+", " ", path.read_text(encoding="utf-8"))
        for sentence in re.split(r"(?<=[.;])\s", text):
            for command in re.findall(r"`(evalcore delete-model [^`]*)`", sentence):
                if "--yes" not in command and "would" not in sentence:
                    wrong.append((path.name, sentence))
    assert not wrong, wrong
