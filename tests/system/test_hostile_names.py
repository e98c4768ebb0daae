"""Text is data, everywhere (issue 15, part 4): user-chosen names and response texts full of markdown,
LaTeX and HTML are shown literally on every page, never rendered.

One store, built with the project's own importers, where a model, a track, a dataset, an annotator, a
dimension and the response texts all carry HOSTILE; every page is opened on it in headless Chromium.
Screenshots go to tests/artifacts/hostile-<page>.png. The browser tests are skipped like test_browser's
where Chromium or Playwright is missing; the helpers' own tests (md_escape, safe_filename) always run.
"""
from __future__ import annotations

import json
import random
import re
from pathlib import Path
from urllib.parse import urlencode

import pandas as pd
import pytest

from pages.kit.text import WORD_JOINER, highlighted, md_escape, safe_filename
from support import write_jsonl
from support.browser import ARTIFACTS, CHROMIUM, PAGES, chromium, expect, serve, settle, whole_page

needs_browser = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed (apt-get install chromium)")
real_browser = pytest.mark.slow   # `python -m pytest -m slow` (CI's second step)

HOSTILE = '**b** [x](javascript:alert(1)) $y$ <b>m</b> <img src=x onerror=alert(1)> -- _i_'
DATASET = "hostile"
TRACK = f"{HOSTILE}/persona"   # the importers take any character in a name: none is refused
COMPETITION = TRACK.split("/")[0]  # a track's competition: its name up to the first '/' (that of "</b>")
PLAIN = ("h/chitchat", "h/knowledge")
MODELS = (HOSTILE, "plain-a", "plain-b", "plain-c")
ANNOTATORS = ("ann-1", HOSTILE, "ann-3")
DIMENSIONS = ("Coh", HOSTILE)


def build(folder: Path) -> Path:
    """The hostile store: dataset `hostile` (tracks h/chitchat, h/knowledge and TRACK; four models,
    one named HOSTILE; three annotators rating two dimensions, one of each named HOSTILE; HOSTILE in
    every context, reference and response), plus a one-item dataset named HOSTILE. Lexically scored."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.ratings import import_ratings
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.scoring import score
    from evalcore.services.tasks import create_task
    from evalcore.store import chats as stored_chats
    from evalcore.store import connect
    from evalcore.store import tasks as stored_tasks

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
                        "score": rng.randint(0, 2)} for r in rows for a in ANNOTATORS for d in DIMENSIONS
                       # a blank cell: its reason names the model
                       if not (track == TRACK and r["model"] == HOSTILE and d == "Coh")]
            pd.DataFrame(ratings).to_csv(folder / "ratings.csv", index=False)
            import_ratings(con, folder / "ratings.csv", dataset=DATASET, track=track, scales={d: (0, 2) for d in DIMENSIONS})
        pd.DataFrame([{"item_id": "x1", "model": HOSTILE, "response": HOSTILE}]).to_csv(folder / "responses.csv", index=False)
        import_responses(con, folder / "responses.csv", dataset=HOSTILE, track=f"{HOSTILE}/chitchat")
        score(con, dataset=DATASET, progress=False)
        score(con, dataset=HOSTILE, progress=False)
        # a rating task named HOSTILE, rating the HOSTILE dimension, answered by a hostile annotator
        task = stored_tasks.get(con, create_task(con, dataset=DATASET, mode="absolute", dimensions=list(DIMENSIONS),
                                                 items=6, per_item=2, seed=0, name=HOSTILE, guidelines=HOSTILE))
        # by another hostile name: a person rates a response once, and HOSTILE rated every one in the file above
        rater = HOSTILE.replace("_i_", "_r_")
        unit = stored_tasks.next_unit(con, task, rater)
        for dim in DIMENSIONS:
            stored_tasks.answer(con, task, unit, rater, dim, 1.0)
        # a chat task named HOSTILE on a HOSTILE scenario and dimension, a rated conversation of hostile messages
        chat = stored_chats.get(con, stored_chats.create(
            con, name=HOSTILE, dataset=DATASET, track=TRACK, target=f"chat-{HOSTILE}", endpoints=[HOSTILE],
            settings={HOSTILE: {"signature": HOSTILE}}, per_scenario=1, max_rounds=3,
            dimensions=[stored_tasks.Dimension(HOSTILE, 0, 2, HOSTILE)], flags=[HOSTILE], guidelines=HOSTILE,
            scenarios=pd.DataFrame({"dialogue_id": ["d"], "grounding": [{"knowledge": [[HOSTILE, "r", "o"]]}],
                                    "opening": [None]})))
        cid = stored_chats.assign(con, chat, rater)
        stored_chats.say(con, cid, rater, HOSTILE)
        stored_chats.reply(con, cid, 0, HOSTILE)
        stored_chats.end(con, cid, rater)
        stored_chats.rate(con, cid, rater, HOSTILE, 1)
    finally:
        con.close()
    return db


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory):
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    db = build(tmp_path_factory.mktemp("hostile"))
    with serve(db, "streamlit-hostile.log") as base:
        yield base


@pytest.fixture(scope="module")
def hostile_browser(hostile_server):
    with chromium() as b:
        yield b


def q(**params) -> str:
    return "?" + urlencode(params)


# Per page: the query that selects the hostile dataset, track, model, dimension (each page's vs.one
# names), and where that page shows hostile names: ("combobox", label, value) a selectbox's value,
# ("multiselect", label, value) among a multiselect's chosen values, ("options", label, value) among a
# selectbox's options when opened, ("grid", text) a data grid's cell or header, ("markdown", text) the
# text of a markdown element (captions, subheaders, notices, labels) as a reader sees it.
VIEWS = {
    "": ("", [("grid", HOSTILE), ("grid", TRACK)]),
    "trust": (q(dataset=DATASET, level="turn", dimension=HOSTILE, tracks="1"),
              [("combobox", "Human dimension", HOSTILE), ("markdown", f"correlation with human {HOSTILE} at turn level")]),
    "leaderboard": (q(dataset=DATASET, track=TRACK, model=HOSTILE, metrics=f"F1,Coh,{HOSTILE}"),
                    [("combobox", "Track (or all tracks of a skill)", TRACK), ("multiselect", "Models", HOSTILE),
                     ("combobox", "Model", HOSTILE), ("options", "Dataset", HOSTILE)]),
    "correlations": (q(dataset=DATASET, track=TRACK, level="turn", method=HOSTILE),  # a notice quotes the method
                     [("combobox", "Track (or all tracks of a skill)", TRACK), ("multiselect", "Dimensions", HOSTILE),
                      ("markdown", f"{TRACK} (n = "), ("markdown", f"'{HOSTILE}' is not a known method")]),
    "drilldown": (q(dataset=DATASET, track=TRACK, dim=HOSTILE, item="i20"),
                  [("combobox", "Track", TRACK), ("multiselect", "Models", HOSTILE), ("combobox", "Human dimension", HOSTILE),
                   ("markdown", f"percentile rank of {HOSTILE}|"), ("markdown", f"{HOSTILE} reply"),
                   ("markdown", f" · {HOSTILE} ")]),  # a response's scores, the dimension among them
    "human": (q(dataset=DATASET, track=TRACK, dimension=HOSTILE),
              [("combobox", "Track", TRACK), ("combobox", "Dimension", HOSTILE), ("grid", HOSTILE)]),
    "ensemble": (q(dataset=DATASET, level="turn", holdout="competition", group=COMPETITION),
                 [("combobox", "Held-out group", COMPETITION), ("markdown", f"Weights learned without {COMPETITION}")]),
    "compare": (q(dataset=DATASET, track=TRACK, a=HOSTILE, b="plain-a"),
                [("combobox", "Model A", HOSTILE), ("markdown", f"value of plain-a minus {HOSTILE},"),
                 ("grid", HOSTILE)]),
    "upload": (q(dataset=DATASET, track=TRACK), [("combobox", "Track", TRACK), ("markdown", f"Already in {TRACK}")]),
    "tasks": (q(task=1), [("grid", HOSTILE)]),            # the task's name, its annotator in the progress
    "annotate": (q(task=1), [("grid", HOSTILE)]),         # the dimensions it asks for
    "chat": (q(task=1), [("grid", HOSTILE)]),             # the dimensions it asks for, before a person enters
    "chats": (q(task=1), [("grid", HOSTILE)]),            # the task's name; its review queue's person
    "judges": (q(dataset=HOSTILE), [("combobox", "Dataset", HOSTILE),   # no judge scored it: the notice quotes it
                                    ("markdown", f"no LLM judge has scored '{HOSTILE}'")]),
}

# Elements the hostile text would make if it were read as markdown, LaTeX or HTML.
RENDERED = """() => {
  const found = [];
  for (const el of document.querySelectorAll('b, strong, em, i, a, del, s')) {
    const t = el.textContent.trim();
    if (['b', 'm', 'i', 'x', 'y'].includes(t)) found.push(el.tagName + ':' + t);
  }
  for (const sel of ['img[src="x"]', 'img[onerror]', 'img[alt="Streamlit logo"]', 'a[href^="javascript"]',
                     '[role="img"][aria-label$=" icon"]', '.katex', 'math']) {
    for (const el of document.querySelectorAll(sel)) found.push(sel + ':' + el.outerHTML.slice(0, 80));
  }
  return found;
}"""

# The visible text of every markdown element, with the invisible word joiners md_escape may add.
MARKDOWN = r"""() => [...document.querySelectorAll('[data-testid="stMarkdownContainer"], [data-testid="stCaptionContainer"]')]
  .map(e => e.innerText.replaceAll('\u2060', '').replace(/\s+/g, ' '))"""


def test_md_escape_keeps_streamlit_from_rewriting_text():
    """Backslash escapes stop markdown, LaTeX and HTML; Streamlit's after-parse rewrites (" -- " to a dash,
    " -> " to an arrow, ":material_x:" and ":smile:" to icons) are stopped by an invisible word joiner."""
    escaped = md_escape(HOSTILE)
    assert re.fullmatch(r"(\\[^A-Za-z0-9\s]|[A-Za-z0-9 /\u2060])*", escaped), escaped  # all else escaped
    assert escaped.replace(WORD_JOINER, "").replace("\\", "") == HOSTILE
    for text in ("a -- b", "x -> y", "x <-> y", "a >= b", ":material/home:", ":streamlit:", ":smile:", ":material/x"):
        assert WORD_JOINER in md_escape(text), text
    for text in ("--dataset demo-zh", "a->b", "12:30", "k1: v"):  # not rewritten by Streamlit: left alone
        assert WORD_JOINER not in md_escape(text), text
    # a dash pair split over two plain segments is escaped as one run
    assert WORD_JOINER in highlighted([("a -", False), ("-", False), (" b", False)])


def test_safe_filename():
    name = safe_filename(f"drilldown-{DATASET}-{TRACK}")
    assert re.fullmatch(r"drilldown-hostile-\w[\w.-]*", name) and "__" not in name, name
    assert safe_filename("../../etc/passwd") == "etc_passwd"
    assert safe_filename("trust-demo-zh-turn-computed-spearman-mean") == "trust-demo-zh-turn-computed-spearman-mean"
    assert safe_filename("中文/轨道 1") == "中文_轨道_1"
    assert safe_filename("..") == safe_filename("") == safe_filename("/") == "download"
    assert len(safe_filename("x" * 500)) == 150
    assert safe_filename("a\x00b\nc\\d") == "a_b_c_d"


def test_every_page_covered():
    assert sorted(VIEWS) == sorted(PAGES)


def _download(page, button) -> str:
    """The suggested file name of what `button` downloads. Most of these are made when clicked (the offline
    report: seconds of bootstraps), and on CI's two busy cores one download once took over 30 s; a click
    that lands while a rerun replaces the button is lost, so a user would click again: once, then fail
    naming the button."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    label = button.inner_text()
    for attempt in range(2):
        settle(page)
        try:
            with page.expect_download(timeout=90_000) as got:
                button.click()
            return got.value.suggested_filename
        except PlaywrightTimeout:
            if attempt:
                raise AssertionError(f"no download after clicking {label!r} twice, 90 s each") from None


@needs_browser
@real_browser
@pytest.mark.parametrize("path", PAGES)
def test_hostile_names_are_text(hostile_server, hostile_browser, path):
    query, shown = VIEWS[path]
    dialogs: list[str] = []
    context, page = _open_recording(hostile_browser, f"{hostile_server}/{path}{query}", dialogs)
    try:
        for kind, label, *value in shown:
            if kind == "combobox":
                expect(page.get_by_role("combobox", name=label, exact=True)).to_have_value(value[0], timeout=60_000)
            elif kind == "multiselect":
                box = page.locator('[data-testid="stMultiSelect"]').filter(has_text=label).first
                expect(box).to_contain_text(value[0], timeout=60_000)
            elif kind == "options":  # a selectbox's open list: the dataset named HOSTILE among them
                page.get_by_role("combobox", name=label, exact=True).click()
                expect(page.get_by_role("option", name=value[0], exact=True)).to_be_visible(timeout=30_000)
                assert not page.evaluate(RENDERED), page.evaluate(RENDERED)
                page.keyboard.press("Escape")
            elif kind == "grid":
                expect(page.locator('[data-testid="stDataFrame"]').filter(has_text=label).first).to_be_attached(
                    timeout=60_000)
            else:
                page.wait_for_function(f"() => ({MARKDOWN})().some(t => t.includes({json.dumps(label)}))",
                                       timeout=60_000)
        page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden", timeout=60_000)
        page.wait_for_load_state("networkidle")
        rendered = page.evaluate(RENDERED)
        exceptions = page.locator('[data-testid="stException"]').all_inner_texts()
        whole_page(page, ARTIFACTS / f"hostile-{path or 'overview'}.png", most=8000)
        assert not rendered, f"hostile text rendered as markup on /{path}: {rendered}"
        assert not exceptions, exceptions
        names = []
        for button in page.locator('[data-testid="stDownloadButton"] button').all():
            names.append(_download(page, button))
        assert not dialogs, f"JS dialogs on /{path}: {dialogs}"
        unsafe = [n for n in names if not re.fullmatch(r"\w[\w.-]*", n)]
        assert not unsafe, f"download file names on /{path} carry user text unsanitised: {unsafe}"
    finally:
        context.close()


@needs_browser
@real_browser
def test_leaderboard_header_tooltip_is_text(hostile_server, hostile_browser):
    """A blank cell's column header says, on hover, which models have no value there: model names are text
    in that markdown tooltip too (the model named HOSTILE has no Coh rating on TRACK)."""
    dialogs: list[str] = []
    query = q(dataset=DATASET, track=TRACK, metrics="Coh")  # one value column: its header is in view
    context, page = _open_recording(hostile_browser, f"{hostile_server}/leaderboard{query}", dialogs)
    try:
        grid = page.locator('[data-testid="stDataFrame"]').first
        expect(grid).to_contain_text("plain-a", timeout=60_000)
        page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden", timeout=60_000)
        box = grid.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.wheel(5000, 0)  # the long names make the grid wide: scroll to its last columns
        page.wait_for_timeout(500)
        tip = page.locator('[data-testid="stDataFrameTooltipContent"]').filter(has_text="Blank:")
        for x in range(int(box["width"]) - 15, 0, -30):  # the header cells, right to left, until Coh's tooltip
            page.mouse.move(box["x"] + x, box["y"] + 17)
            try:
                tip.wait_for(state="visible", timeout=700)
                break
            except Exception:
                continue
        expect(tip).to_be_visible(timeout=1_000)
        text = tip.inner_text().replace(WORD_JOINER, "")
        rendered = page.evaluate(RENDERED)
        page.screenshot(path=str(ARTIFACTS / "hostile-leaderboard-tooltip.png"))
        assert not dialogs, dialogs
        assert not rendered, f"model names rendered as markup in a header tooltip: {rendered}"
        assert f"Blank: {HOSTILE}: no rating" in " ".join(text.split()), text
    finally:
        context.close()


@needs_browser
@real_browser
def test_chart_tooltip_is_text(hostile_server, hostile_browser):
    """Vega-Lite draws names as text; its hover tooltip (HTML) shows them escaped: the annotator-bias bar
    of the annotator named HOSTILE on the Human page."""
    dialogs: list[str] = []
    context, page = _open_recording(hostile_browser, f"{hostile_server}/human{VIEWS['human'][0]}", dialogs)
    try:
        chart = page.locator('[data-testid="stVegaLiteChart"]').nth(1)  # score distributions, then annotator bias
        chart.locator("svg, canvas").first.wait_for(timeout=60_000)
        chart.scroll_into_view_if_needed()
        box = chart.bounding_box()
        tip = page.locator("#vg-tooltip-element")
        for x in range(20, int(box["width"]), 15):
            page.mouse.move(box["x"] + x, box["y"] + 12)
            page.wait_for_timeout(100)
            if tip.count() and tip.is_visible() and "annotator" in tip.inner_text():
                break
        assert HOSTILE in tip.inner_text(), tip.inner_text()
        assert not tip.locator("b, img, a, strong, em").count(), tip.inner_html()
        assert not dialogs, dialogs
    finally:
        context.close()


def _open_recording(browser, url: str, dialogs: list[str]):
    """test_browser._open, with every JS dialog recorded (and dismissed) from the first byte on."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(url)
    page.wait_for_selector("h1", timeout=60_000)
    page.wait_for_load_state("networkidle")
    assert not page.get_by_text("Page not found").count(), f"'Page not found' dialog on {url}"
    return context, page
