"""Annotation in a real browser (slow): three annotators, each in their own Chromium context, rate an absolute
task of 20 units with K = 2 on MSDE's CPC track (lic2021/persona), Info and Coh, 0-2. Midway the server is
SIGKILLed and started again: every rating clicked before the kill is in the store, and each annotator, giving
their name again, resumes at a unit they have not rated. At the end every unit has two annotators, nobody
rated a unit twice, and the agreement the task page draws equals `krippendorff.alpha` on the exported ratings."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from evalcore.ingest.formats.msde import import_msde
from evalcore.services import tasks as service
from evalcore.store import connect
from evalcore.store import tasks as stored
from support import ROOT, shared
from support.browser import ARTIFACTS, CHROMIUM, GROUPS, chromium, expect, free_port, settle

pytestmark = [pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium is not installed"), pytest.mark.slow]
ANNOTATORS = ("ann-1", "ann-2", "ann-3")


def _start(db, port: int, log_name: str) -> subprocess.Popen:
    env = {**os.environ, "EVALCORE_DB": str(db)}
    ARTIFACTS.mkdir(exist_ok=True)
    log = open(ARTIFACTS / log_name, "w")
    proc = subprocess.Popen([sys.executable, "app.py", "--server.port", str(port), "--server.headless", "true",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    for _ in range(240):
        try:
            with urllib.request.urlopen(f"http://localhost:{port}/_stcore/health", timeout=1) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    pytest.fail("streamlit did not start")


KEYS: dict[tuple[str, str], str] = {}   # (server, annotator): their personal key, shown once at their first entry


def _login(browser, base: str, task, name: str, width: int = 800):
    """A context of its own (another machine), the task's access code and the name; at a first entry the
    personal key shown once is kept (KEYS), at a later one it is given."""
    context = browser.new_context(viewport={"width": width, "height": 1000})   # an annotator's narrow window
    page = context.new_page()
    page.goto(f"{base}/annotate?task={task.task_id}")
    page.get_by_label("Your name").fill(name)
    page.get_by_label("Access code").fill(task.access_code)
    if (base, name) in KEYS:
        page.get_by_label("Personal key (leave empty the first time)").fill(KEYS[base, name])
    page.get_by_role("button", name="Start rating").click()
    settle(page)
    if (base, name) not in KEYS:
        kept = page.get_by_role("button", name="I have kept my key: start rating")
        expect(kept).to_be_visible(timeout=30_000)
        texts = page.locator('[data-testid="stText"]').all_inner_texts()
        KEYS[base, name] = next(t.strip() for t in texts if re.fullmatch(r"[A-Za-z0-9_-]{22}", t.strip()))
        kept.click()
        settle(page)
    return context, page


def _unit(page) -> int | None:
    """The unit on screen (None: nothing left for this annotator, or nothing now: the rest is held by others)."""
    for _ in range(200):
        if page.get_by_text("Nothing left for you").count() or page.get_by_text("Nothing to rate for you right now").count():
            return None
        found = page.get_by_text(re.compile(r"^Unit \d+$"))
        if found.count():
            return int(found.first.inner_text().split()[1])
        page.wait_for_timeout(100)
    pytest.fail("no unit on the page")


def _values(who: str, unit: int) -> tuple[int, int]:
    """An annotator's Info and Coh for a unit: varied, and not the same for everyone."""
    i = ANNOTATORS.index(who)
    return (unit + i) % 3, (2 * unit + i * i) % 3


def _rate(page, who: str) -> int:
    """Rate the unit on screen (one click per dimension) and wait for the next; returns the rated unit."""
    unit = _unit(page)
    groups = page.locator(GROUPS)
    for i, value in enumerate(_values(who, unit)):
        groups.nth(i).locator("button").nth(value).click()   # the scale's buttons: 0, 1, 2
        settle(page)
    expect(page.get_by_text(f"Unit {unit}", exact=True)).to_have_count(0, timeout=30_000)
    return unit


def test_three_annotators_rate_survive_a_kill_and_agree_with_krippendorff(tmp_path):
    krippendorff = pytest.importorskip("krippendorff")
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    db = tmp_path / "msde.duckdb"
    con = connect(db)
    import_msde(con, shared("msde"), progress=False)
    task = stored.get(con, service.create_task(con, lang="en", dataset="msde", mode="absolute", dimensions=["Info", "Coh"],
                                               items=20, per_item=2, tracks=["lic2021/persona"], seed=0))
    con.close()
    rated: dict[str, list[int]] = {a: [] for a in ANNOTATORS}
    port = free_port()
    server = _start(db, port, "streamlit-annotate.log")
    base = f"http://localhost:{port}"
    try:
        with chromium() as browser:
            sessions = {a: _login(browser, base, task, a) for a in ANNOTATORS}
            for _ in range(4):                      # four units each, in turns
                for who, (_, page) in sessions.items():
                    rated[who].append(_rate(page, who))
            # one more click on a fifth unit: its first dimension only, then the server dies
            half = {}
            for who, (_, page) in sessions.items():
                half[who] = _unit(page)
                page.locator(GROUPS).nth(0).locator("button").nth(
                    _values(who, half[who])[0]).click()
                settle(page)
            os.kill(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
            con = connect(db, read_only=True)
            latest = stored.latest(con, task.task_id)
            con.close()
            assert len(latest) == 3 * (4 * 2 + 1)   # every click before the kill is stored
            server = _start(db, port, "streamlit-annotate-2.log")
            for context, _ in sessions.values():
                context.close()
            sessions = {a: _login(browser, base, task, a) for a in ANNOTATORS}
            for who, (_, page) in sessions.items():
                assert _unit(page) == half[who]      # resumes at the unit left half-rated, not a rated one
            busy = True
            while busy:
                busy = False
                for who, (_, page) in sessions.items():
                    if _unit(page) is not None:
                        rated[who].append(_rate(page, who))
                        busy = True
            sessions["ann-1"][1].screenshot(path=str(ARTIFACTS / "annotate-done-800.png"), full_page=True)
            context = browser.new_context(viewport={"width": 1400, "height": 1200})
            page = context.new_page()
            page.goto(f"{base}/tasks?task={task.task_id}")
            expect(page.get_by_text("Agreement per dimension as answers arrive")).to_be_visible(timeout=60_000)
            expect(page.locator('[data-testid="stDataFrame"]').nth(2)).to_be_visible(timeout=60_000)
            page.screenshot(path=str(ARTIFACTS / "tasks-results-1400.png"), full_page=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    for who, units in rated.items():
        assert len(units) == len(set(units)), f"{who} rated a unit twice"
    con = connect(db, read_only=True)
    latest = stored.latest(con, task.task_id)
    assert latest.groupby("unit")["annotator"].nunique().tolist() == [2] * 20
    exported = service.export(con, task.task_id)
    shown = service.results(con, task.task_id)["agreement"]   # what the task page draws
    con.close()
    for dim in ("Info", "Coh"):
        wide = exported[exported["dimension"] == dim].pivot_table(index="annotator", columns=["item_id", "model"],
                                                                  values="score")
        for level in ("ordinal", "interval"):
            value = shown[(shown["dimension"] == dim) & (shown["statistic"] == f"krippendorff_alpha_{level}")]["value"]
            reference = krippendorff.alpha(reliability_data=wide.to_numpy(float), level_of_measurement=level)
            assert value.iloc[0] == pytest.approx(reference, abs=1e-9, nan_ok=True)


def test_two_annotators_vote_side_by_side_and_bradley_terry_equals_the_mle(tmp_path):
    """A pairwise task of 15 pairs on the CPC track (Coh, ties allowed), K = 2: two annotators vote in Chromium
    (left, tie or right); the exported votes give the Bradley-Terry ratings of FastChat's unregularised fit."""
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    from evalcore.analysis.bradley_terry import fit
    from support import fastchat_mle
    db = tmp_path / "msde.duckdb"
    con = connect(db)
    import_msde(con, shared("msde"), progress=False)
    task = stored.get(con, service.create_task(con, lang="en", dataset="msde", mode="pairwise", dimensions=["Coh"], items=15,
                                               per_item=2, tracks=["lic2021/persona"], seed=0))
    con.close()
    port = free_port()
    server = _start(db, port, "streamlit-pairwise.log")
    try:
        with chromium() as browser:
            for who in ("ann-1", "ann-2"):
                context, page = _login(browser, f"http://localhost:{port}", task, who)
                for k in range(15):
                    unit = _unit(page)
                    assert unit is not None
                    settle(page)   # the unit's controls drawn (a click on the previous unit's is lost)
                    # left, tie or right, varied by unit and annotator
                    page.locator(GROUPS).nth(0).locator("button").nth(
                        (unit + k + len(who)) % 3).click()
                    try:
                        expect(page.get_by_text(f"Unit {unit}", exact=True)).to_have_count(0, timeout=30_000)
                    except AssertionError:
                        page.screenshot(path=str(ARTIFACTS / f"pairwise-stuck-{who}-{unit}.png"), full_page=True)
                        raise
                assert _unit(page) is None
                if who == "ann-1":
                    page.screenshot(path=str(ARTIFACTS / "annotate-pairwise-800.png"), full_page=True)
                context.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    con = connect(db, read_only=True)
    exported = service.export(con, task.task_id)
    con.close()
    assert len(exported) == 30 and set(exported["winner"]) <= {"a", "b", "tie"}
    votes = exported.assign(score=exported["winner"].map({"a": 1.0, "b": 0.0, "tie": 0.5}))[["model_a", "model_b", "score"]]
    ours = fit(votes)
    if ours.ratings is None:
        pytest.skip(f"these votes have no finite fit: {ours.reason}")
    reference = fastchat_mle(votes)
    for model, rating in zip(ours.models, ours.ratings):
        assert rating == pytest.approx(reference[model], abs=0.01)


# Where the Annotate page scrolls: Streamlit's main section (the window itself does not scroll).
SCROLLED = "() => document.querySelector('[data-testid=\"stMain\"]').scrollTop"


def test_each_unit_opens_at_its_top_at_1400_and_800_px(tmp_path, default_store_file):
    """KdConv units with long contexts (up to 18 turns): scrolled down to the last rating, the click that ends a
    unit opens the next one at its top, its header on screen; a click that stays on the unit keeps the place."""
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    from support import copy_default_store

    db = copy_default_store(default_store_file, tmp_path / "store.duckdb")
    con = connect(db)
    task = stored.get(con, service.create_task(con, lang="en", dataset="demo-zh", mode="absolute", dimensions=["Info", "Coh"],
                                               items=16, per_item=2, tracks=["kdconv/knowledge"], seed=3))
    con.close()
    port = free_port()
    server = _start(db, port, "streamlit-annotate-scroll.log")
    try:
        with chromium() as browser:
            for width in (1400, 800):
                context, page = _login(browser, f"http://localhost:{port}", task, f"scroll-{width}", width=width)
                deep = []
                for k in range(4):
                    unit = _unit(page)
                    groups = page.locator(GROUPS)
                    page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 1e6)")
                    groups.nth(0).locator("button").nth(1).click()   # a click that stays on the unit ...
                    settle(page)
                    deep.append(page.evaluate(SCROLLED))   # ... keeps the place: the bottom of a long unit
                    page.screenshot(path=str(ARTIFACTS / f"annotate-scrolled-{width}-{k}.png"))
                    groups.nth(1).locator("button").nth(2).click()
                    expect(page.get_by_text(f"Unit {unit}", exact=True)).to_have_count(0, timeout=30_000)
                    settle(page)
                    page.wait_for_timeout(300)
                    assert page.evaluate(SCROLLED) == 0, f"the unit after {unit} at {width} px did not open at its top"
                    header = page.get_by_text(re.compile(r"^Unit \d+$")).first.bounding_box()
                    assert 0 <= header["y"] < 1000, header
                    page.screenshot(path=str(ARTIFACTS / f"annotate-next-unit-{width}-{k}.png"))
                assert sum(d > 300 for d in deep) >= 2, deep   # most units were rated far down the page
                context.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


# alone: beside the other workers' servers and browsers it failed twice in full runs on the slow machine (the rating
# after Back never reached its page), and passed every time alone, also with every core kept busy (2026-11-28)
@pytest.mark.serial
def test_skip_then_back_in_the_browser_never_exceeds_k(tmp_path, default_store_file):
    """K = 1, the issue's UI path: ann answers Info, then Skip (their answer stops counting, the place goes to
    someone else); bo is given the unit and rates it; ann goes Back to it and clicks a rating: one sentence, the
    next unit, and the store has bo's ratings only."""
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    from support import copy_default_store

    db = copy_default_store(default_store_file, tmp_path / "store.duckdb")
    con = connect(db)
    task = stored.get(con, service.create_task(con, lang="en", dataset="demo-zh", mode="absolute", dimensions=["Info", "Coh"],
                                               items=2, per_item=1, tracks=["lccc/chitchat"], seed=1))
    con.close()
    port = free_port()
    base = f"http://localhost:{port}"
    server = _start(db, port, "streamlit-annotate-skip.log")
    try:
        with chromium() as browser:
            ann_context, ann = _login(browser, base, task, "ann")
            first = _unit(ann)
            ann.locator(GROUPS).nth(0).locator("button").nth(2).click()
            settle(ann)
            ann.get_by_role("button", name="Skip this unit").click()
            expect(ann.get_by_text(f"Unit {first}", exact=True)).to_have_count(0, timeout=30_000)
            settle(ann)
            bo_context, bo = _login(browser, base, task, "bo")
            assert _unit(bo) == first          # ann gave the place up (and holds the other unit)
            for i in range(2):
                bo.locator(GROUPS).nth(i).locator("button").nth(0).click()
                settle(bo)
            ann.get_by_role("button", name="Back").click()
            expect(ann.get_by_text(f"Unit {first}", exact=True)).to_be_visible(timeout=30_000)
            settle(ann)
            refused = ann.get_by_text(f"Unit {first} already has its 1 annotator")
            for attempt in range(2):
                ann.locator(GROUPS).nth(1).locator("button").nth(1).click()
                settle(ann)
                try:
                    expect(refused).to_be_visible(timeout=30_000)
                    break
                except AssertionError:
                    # on CI's busy cores a click that landed while the page reran was lost once; a person still
                    # looking at the unit clicks again (never on another unit: that would be a new rating)
                    if attempt or ann.get_by_text(f"Unit {first}", exact=True).count() == 0:
                        raise
            assert ann.get_by_text(re.compile(r"Traceback|\.py")).count() == 0
            assert _unit(ann) not in (None, first)
            ann.screenshot(path=str(ARTIFACTS / "annotate-refused-800.png"), full_page=True)
            ann_context.close()
            bo_context.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    con = connect(db, read_only=True)
    latest = stored.latest(con, task.task_id)
    answers = stored.answers(con, task.task_id)
    con.close()
    assert set(latest[latest["unit"] == first]["annotator"]) == {"bo"}
    mine = answers[(answers["annotator"] == "ann") & (answers["unit"] == first)]
    assert [k for k in mine["kind"] if k != "claim"] == ["rating", "skip"]   # the refused click left no row
