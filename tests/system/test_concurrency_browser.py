"""Two people uploading at once in real browsers (issue 29): two Chromium sessions on /upload click
"Validate and import" together, round after round; every upload lands (or is told to retry), none is
lost, no traceback, and every landed upload has its scoring job, which completes."""
from __future__ import annotations

import time

import pytest

from evalcore.services import jobs
from evalcore.store import connect
from support import copy_default_store
from support.browser import ARTIFACTS, chromium, expect, open_page, serve, settle

pytestmark = pytest.mark.slow

ROUNDS = 10
BUDGET = 150.0  # seconds of rounds at most (two cores shared): the rounds run are reported
URL = "/upload?dataset=demo-zh&track=lccc/chitchat"


def _prepare(page, path, model: str) -> None:
    """Everything a user does before the click: the file picked and listed, the model named."""
    settle(page)
    page.locator('input[type="file"]').set_input_files(str(path))
    expect(page.locator('[data-testid="stFileUploader"]')).to_contain_text(path.name, timeout=30_000)
    name = page.get_by_label("Model name")
    name.fill(model)
    name.press("Enter")
    expect(page.get_by_role("button", name="Validate and import")).to_be_enabled(timeout=60_000)


def _outcome(page, model: str) -> str:
    done = page.get_by_text("Scoring runs as job").or_(page.get_by_text("was not imported"))
    expect(done.first).to_be_visible(timeout=90_000)
    body = page.inner_text("body")
    if "Traceback" in body or "Exception" in body:
        page.screenshot(path=str(ARTIFACTS / f"concurrent-{model}.png"), full_page=True)
        return "traceback"
    return "landed" if "Scoring runs as job" in body else "retry"


def test_two_sessions_uploading_at_once_lose_nothing(tmp_path, default_store_file):
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    db = copy_default_store(default_store_file, tmp_path / "store.duckdb")
    outcomes: dict[str, str] = {}
    began = time.monotonic()
    with serve(db, "concurrency.log") as base, chromium() as browser:
        a, pa = open_page(browser, base + URL)
        b, pb = open_page(browser, base + URL)
        rounds = 0
        while rounds < ROUNDS and time.monotonic() - began < BUDGET:
            models = [f"together-{rounds}-a", f"together-{rounds}-b"]
            for page, model in zip((pa, pb), models):
                f = tmp_path / f"{model}.csv"
                f.write_text(f"item_id,response\nlccc-test-0000-t01,我 是 {model}\nlccc-test-0001-t01,好 的 {model}\n",
                             encoding="utf-8")
                _prepare(page, f, model)
            buttons = [p.get_by_role("button", name="Validate and import") for p in (pa, pb)]
            buttons[0].click(no_wait_after=True)
            buttons[1].click(no_wait_after=True)
            for page, model in zip((pa, pb), models):
                outcomes[model] = _outcome(page, model)
            rounds += 1
            for page in (pa, pb):   # a fresh page for the next round (the uploader keeps its file)
                page.goto(base + URL)
                page.wait_for_selector("h1", timeout=60_000)
        a.close()
        b.close()
        # every landed upload's job runs to its end (the server scores them one after another)
        deadline = time.monotonic() + 180
        while True:
            con = connect(db, read_only=True, wait=60)
            try:
                stored = dict(con.execute("SELECT model, count(*) FROM responses WHERE model LIKE 'together-%' "
                                          "GROUP BY 1").fetchall())
                listed = jobs.listing(con, "demo-zh", limit=100)
            finally:
                con.close()
            states = dict(zip(listed["model"], listed["state"]))
            if all(states.get(m) in ("done", "failed") for m in stored) or time.monotonic() > deadline:
                break
            time.sleep(2)
    landed = {m for m, v in outcomes.items() if v == "landed"}
    print(f"\n{rounds} rounds in {time.monotonic() - began:.0f} s: {len(landed)} of {len(outcomes)} uploads landed, "
          f"{sum(v == 'retry' for v in outcomes.values())} told to retry, "
          f"{sum(v == 'traceback' for v in outcomes.values())} tracebacks")
    assert rounds >= 5
    assert "traceback" not in outcomes.values(), outcomes
    assert set(stored) == landed and all(n == 2 for n in stored.values())   # 0 lost, 0 half-written
    assert {m: states.get(m) for m in landed} == {m: "done" for m in landed}
