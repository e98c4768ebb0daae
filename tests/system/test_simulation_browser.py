"""Simulated users against people, in a real browser (slow; issue 62's "Must show"): on a copy of the default store,
a chat task on demo-zh's kdconv/knowledge with the local SimServer as three systems of different quality (sys-good,
sys-mid, sys-bad) and two simulators (grounded: uses the scenario; ignorer: ignores it), 3 scenarios x 3 systems,
no review (support.sim_store.setup).

The people's side, 9 conversations (each (scenario, system) once, nobody meets a scenario twice): eve holds her 3 in
Chromium on the Chat page (access code and name, two messages each, the blind systems' replies, the end, a rating
of every dimension), reading the system's quality from its replies as a person would (a bare "嗯" is the bad one,
"嗯嗯" in the second reply the middling one) and rating by it (good 2, mid 1, bad 0; the goal reached for good and
mid); the other 6 are held through the store as the Chat page holds them (support.sim_store.people_talk: ann, bob),
to keep the test short. Then `python -m evalcore chat simulate N --db ...` runs the simulated conversations as a
subprocess while the dashboard serves the store (its page runs hold the DuckDB file only while they query).

The Chat tasks page (/chats?task=N) at 1400 and at 800 px: the audit's verdicts as text (the grounded simulator ranks
the 3 systems as people did, the ignorer against people, each with scipy's Kendall tau of the stored ratings), the
per-simulator table drawn; full-page screenshots simulation-audit-1400.png and -800.png in $EVALCORE_SHOTS (else
the test's tmp_path), to be looked at. The Chat page eve sees never names a system or a simulator."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import kendalltau
from test_annotate_browser import _start
from test_chat_browser import _enter, _next, _said, _typed

from evalcore.store import chats as stored
from evalcore.store import connect
from support import ROOT, copy_default_store, free_port
from support.browser import CHROMIUM, GROUPS, chromium, expect, settle, whole_page
from support.sim_server import SimServer
from support.sim_store import QUALITY, SYSTEMS, people_talk, setup

pytestmark = [pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium is not installed"), pytest.mark.slow]

NAMES = (*SYSTEMS, "sim-grounded", "sim-ignore")   # what a person's page must never show
ASSISTANT = '[data-testid="stChatMessage"]:has([data-testid="stChatMessageAvatarAssistant"]) [data-testid="stText"]'
# what eve types in each conversation: a question about the scenario and a follow-up
SAYS = ("请介绍一下这个吧", "还有别的吗？")


def _blind(page) -> None:
    html, text = page.content(), page.inner_text("body")
    for name in NAMES:
        assert name not in html and name not in text, f"{name} reached the person's page"


def _replied(page, n: int) -> str:
    """Wait for the system's n-th reply and the run after it (its input enabled again); the reply's text. The pending
    run draws its reply after a disabled input, so an enabled input beside n replies is the run after it."""
    expect(page.locator(ASSISTANT)).to_have_count(n, timeout=60_000)
    expect(page.get_by_placeholder("Your message")).to_be_enabled(timeout=60_000)
    settle(page)
    return page.locator(ASSISTANT).nth(n - 1).inner_text().strip()


def _talk(page) -> int:
    """Two rounds; the quality the person reads from the replies: 0 answers only "嗯", 1 drifts to "嗯嗯", 2 stays
    on the question."""
    replies = []
    for n, text in enumerate(SAYS, 1):
        _typed(page, text)
        replies.append(_replied(page, n))
    assert _said(page) == list(SAYS)
    if replies[0] == "嗯":
        return 0
    assert replies[0] == f"好的，说说{SAYS[0]}", replies
    return 1 if replies[1] == "嗯嗯" else 2


def _end_and_rate(page, task, quality: int) -> None:
    """End (the goal reached unless the system was the bad one) and rate every dimension `quality`, in its range."""
    if quality >= 1:
        page.get_by_text("Everything in the scenario came up").click()
    page.get_by_role("button", name="End the conversation and rate it").click()
    expect(page.get_by_text("Rate the whole conversation")).to_be_visible(timeout=30_000)
    settle(page)
    groups = page.locator(GROUPS)
    dims = task.dimensions
    for i, d in enumerate(dims):
        value = min(d.max, max(d.min, quality))
        groups.nth(groups.count() - len(dims) + i).locator("button").nth(list(d.scale()).index(value)).click()
        settle(page)
    # no review in this task: the last rating accepts it
    expect(page.get_by_text("Thank you: this conversation is accepted.")).to_be_visible(timeout=30_000)


def _taus(db: Path, task_id: int, dimension: str) -> dict[str, float]:
    """scipy's Kendall tau between each simulator's and the people's per-system means of `dimension`, from the store."""
    con = connect(db, read_only=True, wait=60)
    try:
        convs = stored.conversations(con, task_id)
        convs = convs[convs["state"] == "accepted"]
        means: dict[str, dict[str, list]] = {}
        for row in convs.itertuples():
            holder = row.simulator if isinstance(row.simulator, str) else "people"
            means.setdefault(holder, {}).setdefault(row.endpoint, []).append(
                stored.ratings(con, int(row.conversation_id))[dimension])
    finally:
        con.close()
    people = [sum(means["people"][s]) / len(means["people"][s]) for s in SYSTEMS]
    return {sim: kendalltau([sum(v[s]) / len(v[s]) for s in SYSTEMS], people).statistic
            for sim, v in means.items() if sim != "people"}


def test_people_in_chromium_and_two_simulators_then_the_audit_at_1400_and_800(tmp_path, default_store_file):
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    db = copy_default_store(default_store_file, tmp_path / "store.duckdb")
    shots = Path(os.environ.get("EVALCORE_SHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with SimServer() as srv:
        con = connect(db)
        try:
            task = setup(con, srv.url, lang="en")   # eve reads the English page (a demo-zh task is zh-CN)
        finally:
            con.close()
        port = free_port()
        base = f"http://localhost:{port}"
        server = _start(db, port, "streamlit-simulation.log")
        try:
            with chromium() as browser:
                # eve's three conversations, as a person holds them
                context, page, _ = _enter(browser, base, task, "eve")
                read = []
                for n in range(3):
                    if n:
                        _next(page)
                    _blind(page)
                    read.append(_talk(page))
                    _blind(page)
                    _end_and_rate(page, task, read[-1])
                    _blind(page)
                context.close()

                # the other six through the store, between page runs (the server holds the file only while a page
                # queries)
                con = connect(db, wait=60)
                try:
                    eve = stored.mine(con, task.task_id, "eve")["conversation_id"].tolist()
                    assert len(eve) == 3
                    endpoints = [stored.conversation(con, int(c)).endpoint for c in eve]
                    assert read == [QUALITY[e] for e in endpoints], (read, endpoints)   # she read them right
                    people_talk(con, task)
                finally:
                    con.close()

                # the simulated conversations by the command line, beside the running dashboard
                ran = subprocess.run([sys.executable, "-m", "evalcore", "chat", "simulate", str(task.task_id),
                                      "--db", str(db)], cwd=ROOT, capture_output=True, text=True, timeout=300)
                assert ran.returncode == 0, ran.stdout + ran.stderr
                assert "18 of 18 simulated conversations finished" in ran.stdout, ran.stdout

                taus = _taus(db, task.task_id, task.dimensions[0].dimension)
                assert taus == {"grounded": pytest.approx(1.0), "ignorer": pytest.approx(-1.0)}, taus
                first = task.dimensions[0].dimension
                for width in (1400, 800):
                    lab = browser.new_context(viewport={"width": width, "height": 1000}).new_page()
                    lab.goto(f"{base}/chats?task={task.task_id}")
                    expect(lab.get_by_text("Simulated users", exact=True)).to_be_visible(timeout=60_000)
                    verdicts = lab.locator('[data-testid="stText"]').filter(has_text="ranks the 3 systems")
                    expect(verdicts.first).to_be_visible(timeout=120_000)
                    settle(lab)
                    # each simulator's name on a line of its own, its verdicts after it (indented)
                    blocks, current = {}, None
                    for t in lab.locator('[data-testid="stText"]').all_inner_texts():
                        if t.strip() in ("grounded", "ignorer"):
                            current = t.strip()
                            blocks[current] = ""
                        elif current and "the 3 systems" in t:
                            blocks[current] += t + "\n"
                    assert set(blocks) == {"grounded", "ignorer"}, blocks
                    assert re.search(rf"{first}: ranks the 3 systems as people did: tau {taus['grounded']:.2f} ",
                                     blocks["grounded"]), blocks["grounded"]
                    assert re.search(rf"{first}: ranks the 3 systems against people: tau {taus['ignorer']:.2f} ",
                                     blocks["ignorer"]), blocks["ignorer"]
                    assert "against people" not in blocks["grounded"]
                    for i in range(2):   # as text a person reads, not only in the page's tree
                        expect(verdicts.nth(i)).to_be_visible()
                    # the per-simulator table: a drawn grid whose header names what each simulator ranks as people did
                    summary = lab.locator('[data-testid="stDataFrame"]').filter(has_text="ranks as people did on")
                    expect(summary).to_have_count(1, timeout=30_000)
                    expect(summary.locator("canvas").first).to_be_attached()
                    expect(summary).to_be_visible()
                    for label in ("Rankings and each endpoint's difference", "How the simulated users behave"):
                        lab.get_by_text(label).click()   # opened for the screenshot: every table of the audit
                        settle(lab)
                    whole_page(lab, shots / f"simulation-audit-{width}.png")
                    lab.context.close()
        finally:
            server.terminate()
            server.wait(timeout=30)

    con = connect(db, read_only=True)
    try:
        convs = stored.conversations(con, task.task_id)
    finally:
        con.close()
    people = convs[convs["simulator"].isna()]
    assert len(people) == 9 and set(people["state"]) == {"accepted"}
    assert people.groupby(["scenario", "endpoint"]).size().tolist() == [1] * 9
    assert people.groupby(["annotator", "scenario"]).size().max() == 1   # nobody met a scenario twice
    assert (people["annotator"] == "eve").sum() == 3
    simulated = convs[convs["simulator"].notna()]
    assert len(simulated) == 18 and set(simulated["state"]) == {"accepted"}
    log = (ROOT / "tests" / "artifacts" / "streamlit-simulation.log").read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log
