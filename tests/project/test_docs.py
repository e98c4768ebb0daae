"""The documentation: the site builds with `mkdocs build --strict` (a broken link fails), every metric of the registry
has a card, and every code block of README.md and docs/ is run by a test or checked against the real parser.

Blocks marked `<!-- example: NAME -->` run: the tour here (in a fresh folder, on a copy of the store `evalcore init`
builds), `api` in tests/cli/test_api.py, `human-evaluation` in tests/cli/test_readme_human_eval.py, the "Adding a metric" code
in tests/metrics/test_metric_plugins.py. Every other `evalcore` line names a command that exists and only flags that command
has (a synopsis such as `[--track T]` included); one without placeholders must parse as written. Blocks in other
languages are files or configuration shown as data (json, text, nginx).

And the claims the code can answer, both ways: every command, import format, page and metric the docs name exists,
and every command (so every import format) and every page is named somewhere in the docs."""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import re
import shutil
import subprocess
import sys
import tomllib

import pandas as pd
import pytest

from evalcore.cli import build_parser, main
from support import ROOT, copy_default_store
from support.docs import (
    BLOCK,
    DATA,
    DOCS,
    NOT_EVALCORE,
    PLACEHOLDER,
    RUN_ELSEWHERE,
    blocks,
    command_lines,
    evalcore_args,
    subparser,
)


def test_the_site_builds_strict(tmp_path):
    if shutil.which("mkdocs") is None and importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (tests/requirements.txt installs it)")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, env={"NO_MKDOCS_2_WARNING": "1", "PATH": ""} | dict(
                             __import__("os").environ, NO_MKDOCS_2_WARNING="1"))
    assert run.returncode == 0, run.stderr[-3000:]
    site = tmp_path / "site"
    card = (site / "metrics" / "bleu4" / "index.html").read_text(encoding="utf-8")
    assert "BLEU4|tok:char-1|ngram:tuple|corpus:corpus-bleu-no-smoothing" in card and "Papineni" in card
    assert (site / "guide" / "tour" / "index.html").exists() and (site / "index.html").exists()
    # Chinese beside English (mkdocs-static-i18n): /zh/ holds every page, a Chinese one where page.zh.md exists and the
    # English one otherwise, each with the Chinese navigation; the generated metric cards are built once per language,
    # in its own folder (the Chinese build once wrote its cards over the English ones)
    lang = lambda path: re.search(r'<html lang="([^"]+)"', (site / path).read_text(encoding="utf-8")).group(1)   # noqa: E731
    assert lang("metrics/bleu4/index.html") == lang("guide/annotating/index.html") == "en"
    assert lang("zh/metrics/bleu4/index.html") == lang("zh/guide/annotating/index.html") == lang("zh/guide/importing/index.html") == "zh"
    assert "标注者评分指南" in (site / "zh" / "guide" / "annotating" / "index.html").read_text(encoding="utf-8")
    assert "标注者评分指南" in (site / "zh" / "guide" / "importing" / "index.html").read_text(encoding="utf-8")   # the nav
    assert "BLEU4|tok:char-1" in (site / "zh" / "metrics" / "bleu4" / "index.html").read_text(encoding="utf-8")


def test_every_metric_has_a_card_and_every_card_a_metric():
    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    try:
        import metric_cards
    finally:
        sys.path.remove(str(ROOT / "docs" / "hooks"))
    from evalcore.metrics.registry import METRICS

    prose = tomllib.loads((ROOT / "docs" / "metrics" / "cards.toml").read_text(encoding="utf-8"))
    assert set(prose) == set(METRICS)
    assert all(set(entry) == {"scale", "limitations", "citation"} and all(entry.values()) for entry in prose.values())
    pages = metric_cards.pages()
    assert len(pages) == len(METRICS) + 1
    for metric in METRICS.values():
        page = pages[f"metrics/{metric_cards.slug(metric.name)}.md"]
        assert page.startswith(f"# {metric.name}\n") and metric.description.rstrip(".") in page
        if metric.name not in metric_cards.WHY_NO_EXAMPLE:   # the signature a default run gives, from the code
            assert f"\n{metric_cards.example_signature(metric)}\n" in page


def test_every_block_is_run_or_checked():
    parser = build_parser()
    marked, problems = set(), []
    for path, language, body, name in blocks():
        if name:
            marked.add(name)
        if language in DATA:
            continue
        if language == "python":
            if name is None and path.name != "architecture.md":
                problems.append(f"{path}: a python block no test runs (mark it <!-- example: NAME --> and run it)")
            continue
        assert language == "bash", f"{path}: a {language} block"
        for line in command_lines(body):
            args = evalcore_args(line)
            if args is None:
                if not NOT_EVALCORE.match(line):
                    problems.append(f"{path}: {line!r} is neither an evalcore command nor one CI runs")
                continue
            command, rest = subparser(parser, args)
            known = {s for a in command._actions for s in a.option_strings}
            flags = {w.split("=")[0] for w in re.findall(r"--[\w-]+", " ".join(rest))}
            if not command._actions or flags - known:
                named = " ".join(args[:len(args) - len(rest)])
                problems.append(f"{path}: {line!r}: {sorted(flags - known)} not flags of `evalcore {named}`")
            if not any(PLACEHOLDER.search(w) for w in args):
                try:
                    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                        parser.parse_args(args)
                except SystemExit as exc:   # --help and --version exit 0
                    if exc.code:
                        problems.append(f"{path}: {line!r} does not parse")
    assert not problems, "\n".join(problems)
    assert {"api", "human-evaluation", "tour-store", "tour-upload", "tour-trust", "tour-human"} <= marked
    for name, test in RUN_ELSEWHERE.items():
        assert name in (ROOT / test).read_text(encoding="utf-8"), (name, test)


def test_the_tour_runs_as_written(tmp_path, monkeypatch, capsys, default_store_file):
    """The tour's blocks in order, in a fresh folder; `evalcore init` is the test session's one build of the default store,
    copied; between the template and the import, the file is filled as a user would (here: references reversed). The
    README's tour runs the same commands."""
    tour = {name: command_lines(body) for path, _, body, name in blocks() if name and name.startswith("tour-")
            and path.name == "tour.md"}
    readme = [command_lines(body) for path, _, body, name in blocks() if name == "tour-upload" and path.name == "README.md"]
    assert readme == [tour["tour-upload"]]
    monkeypatch.chdir(tmp_path)
    outputs = []
    for name in ("tour-store", "tour-upload", "tour-trust", "tour-human"):
        for line in tour[name]:
            args = evalcore_args(line)
            if args[0] == "init":
                copy_default_store(default_store_file, tmp_path / args[args.index("--db") + 1])
                continue
            if args[:2] == ["import", "responses"]:
                filled = pd.read_csv(tmp_path / args[-1])
                filled["response"] = filled["reference"].astype(str).str[::-1]
                filled.to_csv(tmp_path / args[-1], index=False)
            assert main(args) == 0, (line, capsys.readouterr().err)
            outputs.append(capsys.readouterr())
    board = outputs[3].out
    assert board.split("\n")[1].split()[:2] == ["lccc/chitchat", "my-model"]   # ranked first: its F1 is 1 by construction
    assert "knowledge: " in outputs[4].out and "Spearman" in outputs[5].out or "spearman" in outputs[5].out
    assert "task 2: 20 units, K = 2" in outputs[6].err


def test_a_chinese_page_holds_its_english_pages_blocks_and_anchors():
    """page.zh.md beside page.md (mkdocs-static-i18n's suffix structure): the same fenced blocks in the same order, so
    its commands, flags and files are the ones checked and run above through the English page, and the English
    page's heading anchors ({ #id } on each heading: Chinese headings make no anchor of their own), so a link to
    page.md#anchor holds in both languages, from a page with no Chinese version too."""
    markdown = pytest.importorskip("markdown")

    def anchors(text: str) -> list[str]:
        md = markdown.Markdown(extensions=["toc", "tables", "admonition", "attr_list", "pymdownx.superfences"])
        md.convert(text)
        out: list[str] = []
        walk = lambda tokens: [(out.append(t["id"]), walk(t["children"])) for t in tokens]   # noqa: E731
        walk(md.toc_tokens)
        return out

    chinese = sorted((ROOT / "docs").rglob("*.zh.md"))
    assert {"index.zh.md", "tour.zh.md", "dashboard.zh.md", "annotating.zh.md", "chatting.zh.md"} <= {p.name for p in chinese}
    for zh in chinese:
        en = zh.with_name(zh.name.replace(".zh.md", ".md"))
        assert en.exists(), f"{zh.relative_to(ROOT)}: no English page beside it"
        en_text, zh_text = en.read_text(encoding="utf-8"), zh.read_text(encoding="utf-8")
        assert [m.group(2, 3) for m in BLOCK.finditer(zh_text)] == [m.group(2, 3) for m in BLOCK.finditer(en_text)], zh
        assert anchors(zh_text) == anchors(en_text), zh


# ------------------------------------------------------------------------------------------------------------------
# Claims the code can answer: what the docs name exists, and what exists is named.
CODE_SPAN = re.compile(r"`([^`\n]+)`")
NAMED = re.compile(r"(?:^|[\s(])(?:python -m )?evalcore ([a-z][\w|-]*)(?: ([a-z][\w|-]*))?")
NOT_PAGES = {"v1", "_stcore"}   # an endpoint's OpenAI root, Streamlit's health check


def _code_texts() -> list[tuple[str, str]]:
    """(file, text) of every code block and inline code span of README.md and docs/."""
    out = [(str(path), body) for path, _, body, _ in blocks()]
    for path in DOCS:
        text = BLOCK.sub("", path.read_text(encoding="utf-8"))
        out += [(str(path.relative_to(ROOT)), span) for span in CODE_SPAN.findall(text)]
    return out


def _leaves(parser, path=()) -> list[str]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [" ".join(path)]
    return [leaf for name, sub in subs[0].choices.items() for leaf in _leaves(sub, (*path, name))]


def named_commands() -> tuple[set[str], list[str]]:
    """The command paths the docs' code names (`task show|close ID` names both), and the names that are no command."""
    parser = build_parser()
    top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    named, wrong = set(), []
    for where, text in _code_texts():
        for line in text.splitlines():
            for first, second in NAMED.findall(line):
                for a in first.split("|"):
                    if a not in top:
                        wrong.append(f"{where}: evalcore {a}")
                        continue
                    subs = [x for x in top[a]._actions if isinstance(x, argparse._SubParsersAction)]
                    if not subs:
                        named.add(a)
                        continue
                    for b in filter(None, second.split("|")):
                        if b in subs[0].choices:
                            named.add(f"{a} {b}")
                        elif not PLACEHOLDER.search(b) and b not in ("KIND", "ACTION"):
                            wrong.append(f"{where}: evalcore {a} {b}")
    return named, wrong


def test_every_command_the_docs_name_exists_and_every_command_is_named():
    named, wrong = named_commands()
    assert not wrong, "the docs name commands that do not exist:\n" + "\n".join(wrong)
    unnamed = [leaf for leaf in _leaves(build_parser()) if leaf not in named]
    assert not unnamed, f"commands no page of the docs names (as `evalcore <command>` in code): {unnamed}"


def test_every_import_format_is_documented():
    from evalcore.ingest.formats import FORMATS

    named, _ = named_commands()
    assert [f.kind for f in FORMATS if f"import {f.kind}" not in named] == []
    importing = (ROOT / "docs" / "guide" / "importing.md").read_text(encoding="utf-8")
    assert [f.kind for f in FORMATS if f"import {f.kind}" not in importing] == []


def test_every_page_is_named_and_every_page_named_exists():
    from pages import PAGES

    text = "\n".join(path.read_text(encoding="utf-8") for path in DOCS)
    titles, paths = {p.title for p in PAGES}, {p.url_path for p in PAGES}
    assert [t for t in titles if t not in text] == [], "pages the docs never name"
    bold = set(re.findall(r"\*\*([A-Z][\w ,'&-]+)\*\* page", text))
    assert bold <= titles, f"the docs name pages that do not exist: {bold - titles}"
    linked = set(re.findall(r"https?://(?:localhost|127\.0\.0\.1)(?::\d+)?/([\w-]+)", text)) - NOT_PAGES
    assert linked <= paths, f"the docs link to pages that do not exist: {linked - paths}"


def test_every_metric_the_docs_score_with_exists():
    from evalcore.metrics.registry import resolve_metrics

    problems = []
    for path, language, body, _ in blocks():
        for line in command_lines(body) if language in ("bash", "sh", "console") else []:
            args = evalcore_args(line) or []
            if args[:1] == ["score"] and "--metrics" in args:
                spec = args[args.index("--metrics") + 1]
                if PLACEHOLDER.search(spec):
                    continue
                try:
                    resolve_metrics(spec)
                except ValueError as exc:
                    problems.append(f"{path}: {line}: {exc}")
    assert not problems, "\n".join(problems)
