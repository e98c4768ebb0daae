"""People-calibrated estimates and the planner in a real browser (slow; issue 63's "Must show"), at 1400 and 800 px, on
the calibrated pages' store (support.calibration_store: toy's three models and one with a hostile name, F1 values,
people's ratings of Q imported, an LLM judge, an active rating task on Know steered by F1 with 24 units rated):

- planning a task on Rating tasks: the planner opened, dimension Q (its ratings are the pilot), a budget and F1 as
  the predictor: the units needed, the power and interval at the budget, and where the spread came from;
- an active task filling: its page shows each model's width beside uniform sampling's; people rate more of its units
  (through evalcore.store.tasks.answer, as the Annotate page stores them), and after a reload the page counts them;
- the calibrated column on the Leaderboard, from a link (dimension Q, predictor F1, imported ratings declared
  random): its header, and the caption naming the estimator and the assumption.

Full-page screenshots tests/artifacts/estimate-{plan,active,leaderboard}-{1400,800}.png, to be looked at."""
from __future__ import annotations

import os
import re

import pytest

from evalcore.store import connect
from evalcore.store import tasks as stored_tasks
from support.browser import ARTIFACTS, CHROMIUM, chromium, expect, serve, settle, whole_page
from support.calibration_store import build, rate

pytestmark = [pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium is not installed"), pytest.mark.slow]
GRID = '[data-testid="stDataFrame"]'


def _choose(scope, label: str, option: str) -> None:
    scope.get_by_role("combobox", name=label).click()
    scope.page.get_by_role("option", name=option, exact=True).click()
    settle(scope.page)


def _number(scope, label: str, value) -> None:
    box = scope.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    settle(scope.page)


def _done(page) -> tuple[int, int]:
    """(ratings done, needed) from the task's progress bar."""
    said = page.locator('[data-testid="stProgress"]').inner_text()
    got = re.search(r"(\d+) of (\d+) done", said)
    assert got, said
    return int(got.group(1)), int(got.group(2))


def test_planning_an_active_task_filling_and_the_calibrated_column_at_1400_and_800(tmp_path):
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    db, task_id = build(tmp_path)
    ARTIFACTS.mkdir(exist_ok=True)
    with serve(db, "streamlit-estimate.log") as base, chromium() as browser:
        for width in (1400, 800):
            page = browser.new_context(viewport={"width": width, "height": 1000}).new_page()

            # planning a task
            page.goto(f"{base}/tasks")
            expect(page.get_by_text("Plan a task: how many units and raters a question needs")).to_be_visible(
                timeout=60_000)
            settle(page)
            page.get_by_text("Plan a task: how many units and raters a question needs").click()
            settle(page)
            plan = page.locator('[data-testid="stExpander"]').filter(has_text="Plan a task")
            _choose(plan, "Dimension", "Q")
            _number(plan, "Effect", 0.3)
            _number(plan, "Budget: units per system (0: none)", 20)
            _choose(plan, "Predictor (judge or metric, optional)", "F1")
            expect(plan.get_by_text(re.compile(r"Spread from pilot: 20 units, 40 ratings"))).to_be_visible(
                timeout=30_000)
            table = plan.locator(GRID).filter(has_text="units needed")
            expect(table).to_have_count(1, timeout=30_000)
            expect(table).to_contain_text("power at budget", timeout=30_000)   # the budget box applied (a loaded machine)
            expect(table).to_be_visible()
            whole_page(page, ARTIFACTS / f"estimate-plan-{width}.png")

            # an active task filling: its widths beside uniform sampling's; more ratings, then a reload
            page.goto(f"{base}/tasks?task={task_id}")
            expect(page.get_by_text(re.compile("Active sampling: the 95% interval's width"))).to_be_visible(
                timeout=60_000)
            settle(page)
            before, needed = _done(page)
            expect(page.locator(GRID).filter(has_text="uniform width")).to_have_count(1)
            con = connect(db, wait=60)
            try:
                rate(con, task_id, 3)
                rated = len(stored_tasks.latest(con, task_id))
            finally:
                con.close()
            page.reload()
            expect(page.get_by_text(re.compile("Active sampling: the 95% interval's width"))).to_be_visible(
                timeout=60_000)
            settle(page)
            assert _done(page) == (before + 3, needed) and rated == before + 3
            body = page.inner_text("body").lower()
            assert "you can stop" not in body and "assume the number of ratings was fixed" in body
            whole_page(page, ARTIFACTS / f"estimate-active-{width}.png")

            # the calibrated column on the leaderboard, from a link
            page.goto(f"{base}/leaderboard?dataset=toy&track=toy/chitchat&cal_dim=Q&cal_by=F1&cal_random=yes"
                      "&open=calibrated")
            board = page.locator(GRID).filter(has_text="calibrated 95%")
            expect(board).to_have_count(1, timeout=60_000)
            expect(board).to_be_visible()
            settle(page)
            expect(page.get_by_text(re.compile(r"Q from F1 calibrated by people's ratings\. Estimator: PPI\+\+"))
                   ).to_be_visible()
            expect(page.get_by_text(re.compile("declared random"))).to_be_visible()
            whole_page(page, ARTIFACTS / f"estimate-leaderboard-{width}.png")
            page.context.close()
    log = (ARTIFACTS / "streamlit-estimate.log").read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log
