"""A crowd worker's whole path in Chromium at 800 px (a phone-sized window) and 1400 px (issue 65): from the Prolific
link to the completion code. The link opens the comprehension question with nothing to type; a wrong answer is
said (one more attempt), the right one opens their six units ("Unit i of 6", two of them gold units, their nonsense
reply rated Coh 0; a reload midway resumes them), and the end shows the completion code in large type with the button back to Prolific. The
platform identifier is never in the page's HTML. Screenshots in tests/artifacts (crowd-*.png)."""
from __future__ import annotations

import re

import pytest

from evalcore.services import crowd
from evalcore.services import tasks as service
from evalcore.store import connect
from evalcore.store import crowd as crowd_store
from support import copy_default_store
from support.browser import ARTIFACTS, GROUPS, chromium, expect, serve, settle, whole_page

pytestmark = pytest.mark.browser
UNITS = 6
WORKERS = {800: "5f0c1a2b3c4d5e6f7a8b9c0d", 1400: "60aa11bb22cc33dd44ee55ff"}   # Prolific ids: 24 hex digits


@pytest.fixture(scope="module")
def study(tmp_path_factory, default_store_file):
    """(the page server's address, the task, its gold units' replies): a rating task on demo-zh in English opened
    for Prolific, 6 units a worker, 2 gold (a nonsense reply: Coh 0), one comprehension question. The reading-speed
    rule is off: a test clicks faster than anyone reads."""
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    db = copy_default_store(default_store_file, tmp_path_factory.mktemp("crowd") / "s.duckdb")
    con = connect(db)
    task_id = service.create_task(con, dataset="demo-zh", mode="absolute", dimensions=["Info", "Coh"], items=24,
                                  per_item=3, lang="en")
    crowd.open_study(con, task_id, platform="prolific", completion_code="DONE42", failed_code="FAIL42", units=UNITS,
                     gold=2, pay=1.2, currency="GBP", pass_rule={"too_fast_max": None})
    gold = {crowd_store.gold_response(con, task_id, u)
            for u in crowd.make_gold(con, task_id, why="nonsense", dimension="Coh", low=0, count=2)}
    crowd_store.add_question(con, task_id, "What do you rate?", ["grammar only", "the reply in its context"], 1)
    con.close()
    with serve(db, "streamlit-crowd.log") as base:
        yield base, task_id, gold


def _answer(page, option: str) -> None:
    page.locator('[data-testid="stRadio"] label', has_text=option).first.click()
    page.get_by_role("button", name="Check my answers").click()
    settle(page)


@pytest.mark.parametrize("width", [800, 1400])
def test_a_worker_from_the_platform_link_to_the_completion_code(study, width):
    base, task_id, gold = study
    pid = WORKERS[width]
    with chromium() as browser:
        # each worker their own machine: the same address and browser as another worker is a second identity
        context = browser.new_context(viewport={"width": width, "height": 1000},
                                      user_agent=f"Mozilla/5.0 (worker at {width} px) Chrome/120")
        page = context.new_page()
        page.goto(f"{base}/annotate?task={task_id}&PROLIFIC_PID={pid}&STUDY_ID=study1&SESSION_ID=s{width}")
        expect(page.get_by_text("What do you rate?")).to_be_visible(timeout=60_000)
        assert not page.locator('[data-testid="stTextInput"]').count()   # nothing to type
        assert not page.locator('[data-testid="stTopNavLink"]').count()   # the task's page alone: no lab pages
        whole_page(page, ARTIFACTS / f"crowd-1-check-{width}px.png")
        _answer(page, "grammar only")
        expect(page.get_by_text(re.compile("one more attempt"))).to_be_visible(timeout=30_000)
        whole_page(page, ARTIFACTS / f"crowd-1b-check-again-{width}px.png")
        _answer(page, "the reply in its context")
        golds_seen, shot = 0, False
        for i in range(1, UNITS + 1):
            expect(page.get_by_text(f"Unit {i} of {UNITS}", exact=True)).to_be_visible(timeout=60_000)
            if i == 3:   # a reload (a new session): the address bar kept the link's identifiers, the worker resumes
                assert f"PROLIFIC_PID={pid}" in page.url
                page.reload()
                expect(page.get_by_text(f"Unit {i} of {UNITS}", exact=True)).to_be_visible(timeout=60_000)
            assert not page.get_by_role("button", name="Skip this unit").count()
            texts = {t.strip() for t in page.locator('[data-testid="stText"]').all_inner_texts()}
            is_gold = bool(texts & gold)   # shown as any reply is: only its text tells it
            golds_seen += is_gold
            if i > 1 and not is_gold and not shot:   # a real unit (a gold one looks the same, its reply nonsense)
                whole_page(page, ARTIFACTS / f"crowd-2-unit-{width}px.png")
                shot = True
            groups = page.locator(GROUPS)
            for g, value in enumerate((i % 3, 0 if is_gold else 1 + i % 2)):   # Info, Coh (gold: Coh 0)
                groups.nth(g).locator("button").nth(value).click()
                settle(page)
        assert golds_seen == 2
        code = page.locator(".st-key-crowd-code code")
        expect(code).to_have_text("DONE42", timeout=60_000)
        back = page.get_by_role("link", name="Back to Prolific")
        assert back.get_attribute("href") == "https://app.prolific.com/submissions/complete?cc=DONE42"
        whole_page(page, ARTIFACTS / f"crowd-3-code-{width}px.png")
        assert pid not in page.content() and "prolific-" not in page.content()
        context.close()
