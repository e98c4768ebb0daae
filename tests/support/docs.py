"""The code blocks of README.md and docs/: which are examples to run, which evalcore lines they hold, and those
lines as argv (tests/project/test_docs.py checks them; tests/generation/test_generate.py runs its own)."""
from __future__ import annotations

import argparse
import re
import shlex

from support import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"(?m)^( *)```(\w+)\n(.*?)^\1```", re.S)
MARK = re.compile(r"<!-- example: ([\w-]+) -->\s*$")
RUN_ELSEWHERE = {"api": "tests/cli/test_api.py", "human-evaluation": "tests/cli/test_readme_human_eval.py",
                 "endpoints-add": "tests/generation/test_generate.py", "endpoints-generate": "tests/generation/test_generate.py"}


DATA = {"json", "text", "nginx", "toml"}


# lines a bash block may hold that are not evalcore commands: what CI itself runs (installing, the tests, the site)
NOT_EVALCORE = re.compile(r"^(pip install |python -m pytest|mkdocs |python app\.py|python bench/|pybabel )")
PLACEHOLDER = re.compile(r"[\[\]|]|\.\.\.|^[A-Z]+$")


def blocks():
    """(file, language, body, example name or None) of every fenced block."""
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            before = text[:m.start()].rstrip().split("\n")[-1]
            mark = MARK.search(before)
            yield path.relative_to(ROOT), m.group(2), m.group(3), mark.group(1) if mark else None


def command_lines(body: str) -> list[str]:
    """A bash block's commands: continuation lines joined, comments and environment assignments dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    out = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            out += [part.strip() for part in line.split("&&")]
    return out


def evalcore_args(line: str) -> list[str] | None:
    words = shlex.split(line)
    while words and re.match(r"^[A-Z_]+=", words[0]):
        words = words[1:]
    if words[:1] == ["evalcore"]:
        return words[1:]
    if words[:3] == ["python", "-m", "evalcore"]:
        return words[3:]
    return None


def subparser(parser: argparse.ArgumentParser, args: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser of the command `args` names, and the words after the command."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or not args or args[0] not in subs[0].choices:
            return parser, args
        parser, args = subs[0].choices[args[0]], args[1:]
