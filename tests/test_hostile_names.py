"""Text is data, everywhere (issue 15, part 4): user-chosen names and response texts full of markdown,
LaTeX and HTML are shown literally on every page, never rendered.

One store, built with the project's own importers, where a model, a track, a dataset, an annotator, a
dimension and the response texts all carry HOSTILE; every page is opened on it in headless Chromium.
Screenshots go to tests/artifacts/hostile-<page>.png. Skipped like test_browser where Chromium or
Playwright is missing.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import pandas as pd
import pytest

from conftest import ROOT, write_jsonl
from test_browser import ARGS, ARTIFACTS, CHROMIUM, PAGES, _free_port, expect

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed (apt-get install chromium)")

HOSTILE = '**b** [x](javascript:alert(1)) $y$ <b>m</b> <img src=x onerror=alert(1)> -- _i_'
DATASET = "hostile"
TRACK = f"{HOSTILE}/persona"   # the importers take any character in a name: none is refused
PLAIN = ("h/chitchat", "h/knowledge")
MODELS = (HOSTILE, "plain-a", "plain-b", "plain-c")
ANNOTATORS = ("ann-1", HOSTILE, "ann-3")
DIMENSIONS = ("Coh", HOSTILE)


def build(folder: Path) -> Path:
    """The hostile store: dataset `hostile` (tracks h/chitchat, h/knowledge and TRACK; four models,
    one named HOSTILE; three annotators rating two dimensions, one of each named HOSTILE; HOSTILE in
    every context, reference and response), plus a one-item dataset named HOSTILE. Lexically scored."""
    from evalcore.ingest.items import import_items
    from evalcore.ingest.ratings import import_ratings
    from evalcore.ingest.responses import import_responses
    from evalcore.scoring import score
    from evalcore.store import connect

    rng = random.Random(0)
    db = folder / "store.duckdb"
    con = connect(db)
    try:
        skills = {PLAIN[0]: "chitchat", PLAIN[1]: "knowledge", TRACK: "persona"}
        items = [{"item_id": f"i{t}{i}", "dataset": DATASET, "track": track, "dialogue_id": f"d{t}{i}",
                  "context": [f"turn {i} {HOSTILE}", "ok"], "references": [f"reference {i} says {HOSTILE}"],
                  "skill": skill}
                 for t, (track, skill) in enumerate(skills.items()) for i in range(6)]
        items.append({"item_id": "x1", "dataset": HOSTILE, "track": f"{HOSTILE}/chitchat", "context": ["hi"],
                      "references": ["hello"], "skill": "chitchat"})
        import_items(con, write_jsonl(folder / "items.jsonl", items))
        for track in skills:
            rows = [{"item_id": it["item_id"], "model": m, "response": f"{HOSTILE} reply {rng.randint(0, 9)} {m[:5]}"}
                    for it in items if it["track"] == track for m in MODELS]
            pd.DataFrame(rows).to_csv(folder / "responses.csv", index=False)
            import_responses(con, folder / "responses.csv", dataset=DATASET, track=track)
            ratings = [{"item_id": r["item_id"], "model": r["model"], "annotator": a, "dimension": d,
                        "score": rng.randint(0, 2)} for r in rows for a in ANNOTATORS for d in DIMENSIONS]
            pd.DataFrame(ratings).to_csv(folder / "ratings.csv", index=False)
            import_ratings(con, folder / "ratings.csv", dataset=DATASET, track=track, scales={d: (0, 2) for d in DIMENSIONS})
        pd.DataFrame([{"item_id": "x1", "model": HOSTILE, "response": HOSTILE}]).to_csv(folder / "responses.csv", index=False)
        import_responses(con, folder / "responses.csv", dataset=HOSTILE, track=f"{HOSTILE}/chitchat")
        score(con, dataset=DATASET, progress=False)
        score(con, dataset=HOSTILE, progress=False)
    finally:
        con.close()
    return db


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory):
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    db = build(tmp_path_factory.mktemp("hostile"))
    port = _free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    log = open(ARTIFACTS / "streamlit-hostile.log", "w")
    proc = subprocess.Popen([sys.executable, "app.py", "--server.port", str(port), "--server.headless", "true",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT,
                            env={**os.environ, "EVALCORE_DB": str(db)}, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://localhost:{port}"
    for _ in range(120):
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=1) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("streamlit did not start")
    yield base
    proc.terminate()
    proc.wait(timeout=20)
    log.close()


@pytest.fixture(scope="module")
def hostile_browser(hostile_server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def q(**params) -> str:
    return "?" + urlencode(params)


# Per page: the query that selects the hostile dataset, track, model, dimension (each page's vs.one
# names), and where that page shows a hostile name as text: ("combobox", label) is a selectbox's value,
# ("multiselect", label) a multiselect's chosen values, ("text", None) any element's text.
VIEWS = {
    "": ("", [("grid", None)]),
    "trust": (q(dataset=DATASET, level="turn", dimension=HOSTILE, tracks="1"),
              [("combobox", "Human dimension"), ("text", None)]),
    "leaderboard": (q(dataset=DATASET, track=TRACK, model=HOSTILE),
                    [("combobox", "Track (or all tracks of a skill)"), ("multiselect", "Models"),
                     ("combobox", "Model")]),
    "correlations": (q(dataset=DATASET, track=TRACK, level="turn", method=HOSTILE),  # a hostile notice too
                     [("combobox", "Track (or all tracks of a skill)"), ("multiselect", "Dimensions"), ("text", None)]),
    "drilldown": (q(dataset=DATASET, track=TRACK, dim=HOSTILE, item="i20"),
                  [("combobox", "Track"), ("multiselect", "Models"), ("combobox", "Human dimension"), ("text", None)]),
    "human": (q(dataset=DATASET, track=TRACK, dimension=HOSTILE),
              [("combobox", "Track"), ("combobox", "Dimension"), ("grid", None)]),
    "ensemble": (q(dataset=DATASET, level="turn", holdout="competition", group=HOSTILE),
                 [("combobox", "Held-out group"), ("text", None)]),
    "compare": (q(dataset=DATASET, track=TRACK, a=HOSTILE, b="plain-a"),
                [("combobox", "Model A"), ("text", None)]),
    "upload": (q(dataset=DATASET, track=TRACK), [("combobox", "Track"), ("text", None)]),
}

# Elements the hostile text would make if it were read as markdown, LaTeX or HTML.
RENDERED = """() => {
  const found = [];
  for (const el of document.querySelectorAll('b, strong, em, i')) {
    const t = el.textContent.trim();
    if (t === 'b' || t === 'm' || t === 'i' || t === 'x') found.push(el.tagName + ':' + t);
  }
  for (const sel of ['img[src="x"]', 'img[onerror]', 'a[href^="javascript"]', 'a[href="x"]', '.katex',
                     '.katex-display', 'math']) {
    for (const el of document.querySelectorAll(sel)) found.push(sel + ':' + el.outerHTML.slice(0, 80));
  }
  for (const a of document.querySelectorAll('a')) {   // a link made of the [x](...) part
    if (a.textContent.trim() === 'x') found.push('a:' + a.outerHTML.slice(0, 80));
  }
  return found;
}"""


def test_every_page_covered():
    assert sorted(VIEWS) == sorted(PAGES)


@pytest.mark.parametrize("path", PAGES)
def test_hostile_names_are_text(hostile_server, hostile_browser, path):
    query, shown = VIEWS[path]
    dialogs: list[str] = []
    context, page = _open_recording(hostile_browser, f"{hostile_server}/{path}{query}", dialogs)
    try:
        for kind, label in shown:
            if kind == "combobox":
                expect(page.get_by_role("combobox", name=label, exact=True)).to_have_value(
                    HOSTILE if "Track" not in label else TRACK, timeout=60_000)
            elif kind == "multiselect":
                box = page.locator('[data-testid="stMultiSelect"]').filter(has_text=label).first
                expect(box).to_contain_text(HOSTILE, timeout=60_000)
            elif kind == "grid":
                expect(page.locator('[data-testid="stDataFrame"]').filter(has_text=HOSTILE).first).to_be_attached(
                    timeout=60_000)
            else:
                expect(page.get_by_text(HOSTILE).first).to_be_visible(timeout=60_000)
        page.wait_for_load_state("networkidle")
        page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden", timeout=60_000)
        page.wait_for_timeout(500)  # charts and late fragments (the human page's bootstrap CIs)
        page.screenshot(path=str(ARTIFACTS / f"hostile-{path or 'overview'}.png"), full_page=True)
        rendered = page.evaluate(RENDERED)
        assert not rendered, f"hostile text rendered as markup on /{path}: {rendered}"
        assert not dialogs, f"JS dialogs on /{path}: {dialogs}"
        exceptions = page.locator('[data-testid="stException"]').all_inner_texts()
        assert not exceptions, exceptions
    finally:
        context.close()


def _open_recording(browser, url: str, dialogs: list[str]):
    """test_browser._open, with every JS dialog recorded (and dismissed) from the first byte on."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.on("page", lambda p: p.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss())))
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("h1", timeout=60_000)
    page.wait_for_load_state("networkidle")
    assert not page.get_by_text("Page not found").count(), f"'Page not found' dialog on {url}"
    return context, page
