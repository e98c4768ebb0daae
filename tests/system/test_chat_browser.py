"""Live chat in a real browser (slow): two people, each in their own Chromium context, talk with two blind
endpoints (a local OpenAI-compatible server that streams its replies) on KdConv knowledge scenarios of demo-zh,
three rounds a conversation, then rate each whole dialogue and a reviewer accepts them.

Along the way: the app server is SIGKILLed while a reply is awaited and started again, and the person finds every
message she sent and goes on; the endpoint goes down for one message, the page says so with a Retry, and after it
comes back the reply is stored once; Chinese typed into the chat input is stored intact; the endpoints' names never
reach the page. Screenshots at 800 px go to tests/artifacts/, at 1400 px to /tmp/chat-shots/ (the docs' own come
from bench/chat_screenshots.py).

The loop without the command line, at 1400 and at 800 px: endpoints registered on the Upload page, a task made on
Chat tasks, four people chat and rate blind, the reviewer accepts, the scoring job ends on Chat tasks, and its Metric
trust button opens Metric trust on the chat dataset with its table (screenshots tests/artifacts/chat-loop-*)."""
from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
from test_annotate_browser import _start

from evalcore.analysis.bradley_terry import fit, votes
from evalcore.services import chats as service
from evalcore.services import tasks as tasks_service
from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import endpoints as registry
from evalcore.store import tasks as tasks_stored
from support import copy_default_store, fastchat_mle
from support.browser import ARTIFACTS, CHROMIUM, GROUPS, chromium, expect, free_port, settle
from support.judge_server import JudgeServer

pytestmark = [pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium is not installed"), pytest.mark.slow]

ENDPOINTS = ("secret-alpha", "secret-beta")   # names the page must never show
WIDE = Path("/tmp/chat-shots")
INPUT = '[data-testid="stChatInputTextArea"]'
SLOW = 3.0   # seconds the endpoint holds the reply the app is killed in the middle of
# What each person types, per conversation (their 1st and 2nd), Chinese and English.
SAID = {
    "ann": (["你好！我想了解一下这个地方。", "它什么时候开放？门票多少钱？", "谢谢，还有别的推荐吗？"],
            ["请介绍一下这个乐队吧", "他们有什么代表作品？", "好的，我去听听。"]),
    "bob": (["Hi, what can you tell me about this?", "有意思，再多说一点", "OK, thanks!"],
            ["这个是什么时候成立的？", "What is it known for?", "明白了，谢谢你"]),
}
RATINGS = {"ann": ((2, 1, 2), (1, 1, 0)), "bob": ((0, 2, 1), (2, 2, 2))}   # Info, Coh, Know per conversation


def _make_task(db: Path, url: str) -> stored.ChatTask:
    con = connect(db)
    try:
        for name in ENDPOINTS:
            registry.add(con, registry.Registered(name, url, "m", api_key_env=None))
        tid = service.create_chat(con, lang="en", dataset="demo-zh", track="kdconv/knowledge", endpoints=list(ENDPOINTS),
                                  n_scenarios=2, per_scenario=1, max_rounds=3, seed=0)
        return stored.get(con, tid)
    finally:
        con.close()


def _shoot(page, name: str, *, docs: bool = True) -> None:
    """The page at 800 px (tests/artifacts/) and at 1400 px (/tmp/chat-shots/), then back at 800."""
    WIDE.mkdir(exist_ok=True)
    ARTIFACTS.mkdir(exist_ok=True)
    height = page.viewport_size["height"]
    page.screenshot(path=str(ARTIFACTS / f"{name}-800.png"))
    page.set_viewport_size({"width": 1400, "height": height})
    page.wait_for_timeout(500)
    page.screenshot(path=str(WIDE / f"{name}-1400.png"))
    page.set_viewport_size({"width": 800, "height": height})
    page.wait_for_timeout(500)


def _blind(page) -> None:
    html = page.content()
    assert not any(name in html for name in ENDPOINTS), "an endpoint's name reached the page"


def _enter(browser, base: str, task, name: str) -> tuple:
    """A context of its own (a machine of their own), the task's code and the name; the personal link shown once
    at the first entry is returned with the context and page."""
    context = browser.new_context(viewport={"width": 800, "height": 1000})
    page = context.new_page()
    page.goto(f"{base}/chat?task={task.task_id}")
    page.get_by_label("Your name").fill(name)
    page.get_by_label("Access code").fill(task.access_code)
    page.get_by_role("button", name="Start chatting").click()
    kept = page.get_by_role("button", name="I have kept my key: start")
    expect(kept).to_be_visible(timeout=30_000)
    texts = [t.strip() for t in page.locator('[data-testid="stText"]').all_inner_texts()]
    key = next(t for t in texts if re.fullmatch(r"[A-Za-z0-9_-]{20,}", t))
    link = next(t for t in texts if t.startswith("http"))
    assert f"key={key}" in link and f"name={name}" in link, link
    kept.click()
    settle(page)
    expect(page.get_by_text("Your scenario")).to_be_visible(timeout=30_000)
    return context, page, link


def _typed(page, text: str) -> None:
    """Type into the chat input and send it. Chinese goes in through keyboard.insert_text: headless Chromium does
    not simulate an IME's composition, so the composed text is inserted as an IME commits it."""
    box = page.locator(INPUT)
    expect(box).to_be_enabled(timeout=30_000)
    box.click()
    page.keyboard.insert_text(text)
    box.press("Enter")


def _said(page) -> list[str]:
    """The person's messages as the page shows them, in order."""
    return [t.strip() for t in page.locator('[data-testid="stChatMessage"]').filter(
        has=page.locator('[data-testid="stChatMessageAvatarUser"]')).locator('[data-testid="stText"]').all_inner_texts()]


def _answered(page, text: str) -> None:
    """Wait for the model's whole reply (the echo server answers 'echo: ' + the message) and the run after it."""
    expect(page.get_by_text(f"echo: {text}", exact=True)).to_be_visible(timeout=60_000)
    settle(page)


def _round(page, text: str) -> None:
    _typed(page, text)
    _answered(page, text)
    _blind(page)


def _end_and_rate(page, values: tuple[int, ...], flag: str | None = None) -> None:
    """End the conversation (goal reached), optionally flag the first reply, rate each dimension, next one."""
    expect(page.locator(INPUT)).to_be_disabled(timeout=30_000)   # the round limit is reached
    page.get_by_text("Everything in the scenario came up").click()
    page.get_by_role("button", name="End the conversation and rate it").click()
    expect(page.get_by_text("Rate the whole conversation")).to_be_visible(timeout=30_000)
    settle(page)
    if flag:
        page.locator('[data-testid="stChatMessage"]').nth(1).get_by_role("button", name=flag).click()
        settle(page)
    groups = page.locator(GROUPS)
    dims = len(values)
    for i, value in enumerate(values):
        groups.nth(groups.count() - dims + i).locator("button").nth(value).click()   # the scale's buttons 0, 1, 2
        settle(page)
    expect(page.get_by_text("Thank you: this conversation is rated")).to_be_visible(timeout=30_000)


def _next(page) -> None:
    page.get_by_role("button", name="Next conversation").click()
    settle(page)
    expect(page.locator(INPUT)).to_be_enabled(timeout=30_000)


def _conversation(page, said: list[str], values, flag: str | None = None) -> None:
    """The rest of a conversation: `said` are the messages left, then end and rate it."""
    before = _said(page)
    for text in said:
        _round(page, text)
    assert _said(page) == before + said
    _end_and_rate(page, values, flag)


def _messages(db: Path) -> dict[int, list[tuple[str, str]]]:
    con = connect(db, read_only=True, wait=30)
    try:
        rows = con.execute("SELECT conversation_id, role, text FROM chat_messages ORDER BY conversation_id, idx").fetchall()
    finally:
        con.close()
    out: dict[int, list[tuple[str, str]]] = {}
    for cid, role, text in rows:
        out.setdefault(int(cid), []).append((role, text))
    return out


# A third person's ACUTE-Eval votes per unit, by the side shown (sides are in her own order, so which model wins the
# one decided vote is not fixed; with a tie beside it the fit is finite either way)
VOTES = {"Engagingness": ("Speaker A", "Tie"), "Knowledgeable": ("Tie", "Speaker B")}   # one win and one tie: finite


def acute_eval_hook(browser, base: str, db: Path, task: stored.ChatTask) -> None:
    """ACUTE-Eval (Li et al. 2019) on the accepted conversations: a pairwise rating task at dialogue level over the
    target dataset (one unit per scenario: the two endpoints' conversations), a third person who never chatted
    votes on whole conversations in Chromium, blind, and the Bradley-Terry ratings from her votes equal FastChat's
    compute_mle_elo fit (test_tasks.fastchat_mle)."""
    con = connect(db)
    try:
        acute = tasks_stored.get(con, tasks_service.create_task(
            con, lang="en", dataset=task.target, mode="pairwise", level="dialogue", dimensions=list(VOTES), items=2, per_item=1))
        assert len(tasks_stored.units(con, acute.task_id)) == 2   # two scenarios, one pair of endpoints each
    finally:
        con.close()
    page = browser.new_context(viewport={"width": 800, "height": 1000}).new_page()
    page.goto(f"{base}/annotate?task={acute.task_id}")
    page.get_by_label("Your name").fill("cy")
    page.get_by_label("Access code").fill(acute.access_code)
    page.get_by_role("button", name="Start rating").click()
    page.get_by_role("button", name="I have kept my key: start rating").click(timeout=60_000)
    for unit in range(2):
        expect(page.get_by_text("Speaker B's conversation")).to_be_visible(timeout=60_000)
        html = page.content()
        assert not any(name in html for name in ENDPOINTS)   # blind
        if unit == 0:
            _shoot(page, "chat-acute")
        shown = page.get_by_text(re.compile(r"^Unit \d+$")).inner_text()
        for i, (dimension, choices) in enumerate(VOTES.items()):
            group = page.locator(GROUPS).nth(i)
            # the control's buttons in order: Speaker A, Tie, Speaker B
            group.locator("button").nth(["Speaker A", "Tie", "Speaker B"].index(choices[unit])).click()
            page.wait_for_timeout(700)
        if unit == 0:   # the last dimension's click draws the next unit
            expect(page.get_by_text(re.compile(r"^Unit \d+$"))).not_to_have_text(shown, timeout=60_000)
    page.context.close()
    con = connect(db)
    try:
        for dimension in VOTES:
            cast = votes(con, task.target, dimension=dimension)
            assert len(cast) == 2 and set(cast["voter"]) == {"cy"}
            ours, reference = fit(cast), fastchat_mle(cast)
            assert ours.ratings is not None, ours.reason
            for model, rating in zip(ours.models, ours.ratings):
                assert rating == pytest.approx(reference[model], abs=0.01)
    finally:
        con.close()


def test_two_people_chat_survive_a_kill_retry_a_failing_endpoint_rate_and_are_accepted(tmp_path, default_store_file):
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    db = copy_default_store(default_store_file, tmp_path / "store.duckdb")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with JudgeServer(delay=0.3, echo=True) as srv:
        task = _make_task(db, srv.url)
        port = free_port()
        base = f"http://localhost:{port}"
        server = _start(db, port, "streamlit-chat.log")
        try:
            with chromium() as browser:
                # ann's first conversation: two messages, the second awaiting its (slow) reply when the app dies
                ann_ctx, ann, link = _enter(browser, base, task, "ann")
                first, second = SAID["ann"]
                expect(ann.get_by_placeholder("Your message")).to_be_visible(timeout=30_000)
                _shoot(ann, "chat-scenario-start", docs=False)
                _round(ann, first[0])
                srv.delay = SLOW
                _typed(ann, first[1])
                expect(ann.get_by_text(first[1], exact=True)).to_be_visible(timeout=30_000)   # stored, then drawn
                expect(ann.get_by_placeholder("The model is answering…")).to_be_visible(timeout=30_000)
                os.kill(server.pid, signal.SIGKILL)
                server.wait(timeout=30)
                srv.delay = 0.3
                stored_before = _messages(db)
                assert [m for ms in stored_before.values() for m in ms] == [
                    ("user", first[0]), ("assistant", f"echo: {first[0]}"), ("user", first[1])]
                server = _start(db, port, "streamlit-chat-2.log")
                ann_ctx.close()
                # her personal link in a new context: name and key filled in, the access code typed
                ann_ctx = browser.new_context(viewport={"width": 800, "height": 1000})
                ann = ann_ctx.new_page()
                ann.goto(link)
                expect(ann.get_by_label("Your name")).to_have_value("ann", timeout=60_000)
                ann.get_by_label("Access code").fill(task.access_code)
                ann.get_by_role("button", name="Start chatting").click()
                _answered(ann, first[1])   # the awaited reply is asked for again and arrives
                assert _said(ann) == first[:2]   # every message she sent before the kill
                _shoot(ann, "chat-resumed", docs=False)
                _round(ann, first[2])
                assert _said(ann) == first
                _end_and_rate(ann, RATINGS["ann"][0], flag="repetition")
                _shoot(ann, "chat-rate")
                _next(ann)

                # bob enters now, while ann talks in her second conversation
                bob_ctx, bob, _ = _enter(browser, base, task, "bob")
                _round(bob, SAID["bob"][0][0])

                # the endpoint goes down for ann's first message: a sentence and Retry, her message kept
                with srv._lock:
                    srv.fail_after = srv.answered
                    closed = [status for _, status in srv.log].count(None)
                _typed(ann, second[0])
                expect(ann.get_by_text("The model did not answer")).to_be_visible(timeout=60_000)
                retry = ann.get_by_role("button", name="Retry")
                expect(retry).to_be_visible()
                settle(ann)
                assert _said(ann) == second[:1]
                _blind(ann)
                _shoot(ann, "chat-talk")
                assert [status for _, status in srv.log].count(None) - closed == 3   # the client's three attempts
                srv.up()
                retry.click()
                _answered(ann, second[0])
                expect(ann.get_by_role("button", name="Retry")).to_have_count(0)
                for text in second[1:]:
                    _round(ann, text)
                assert _said(ann) == second
                _end_and_rate(ann, RATINGS["ann"][1])

                for text in SAID["bob"][0][1:]:
                    _round(bob, text)
                _end_and_rate(bob, RATINGS["bob"][0])
                _next(bob)
                _round(bob, SAID["bob"][1][0])
                _shoot(bob, "chat-scenario")   # a short scenario: it, the talk and the input on one screen
                _conversation(bob, SAID["bob"][1][1:], RATINGS["bob"][1], flag="off topic")
                _blind(bob)
                ann_ctx.close()
                bob_ctx.close()

                con = connect(db, wait=30)
                try:
                    convs = stored.conversations(con, task.task_id)
                    for cid in convs["conversation_id"]:
                        stored.review(con, int(cid), "lead", accept=True)
                finally:
                    con.close()
                acute_eval_hook(browser, base, db, task)
        finally:
            server.terminate()
            server.wait(timeout=30)

    # who talked to what: nobody met a scenario twice, each (scenario, endpoint) went to a different person
    con = connect(db, read_only=True)
    try:
        convs = stored.conversations(con, task.task_id)
        said = {int(c): stored.messages(con, int(c))[["role", "text"]].values.tolist() for c in convs["conversation_id"]}
        ratings = {int(c): stored.ratings(con, int(c)) for c in convs["conversation_id"]}
        flags = {int(c): stored.flags(con, int(c)) for c in convs["conversation_id"]}
        dialogues = con.execute("SELECT dialogue_id, grounding FROM dialogues WHERE dataset = ? ORDER BY 1",
                                [task.target]).fetchall()
        turns = con.execute("SELECT dialogue_id, turn_index, speaker, text FROM turns WHERE dataset = ? ORDER BY 1, 2",
                            [task.target]).fetchall()
        responses = con.execute("SELECT r.item_id, r.model, r.text, i.context FROM responses r JOIN items i "
                                "USING (dataset, item_id) WHERE r.dataset = ? ORDER BY 1", [task.target]).fetchall()
        mine = {who: stored.mine(con, task.task_id, who)["conversation_id"].tolist() for who in ("ann", "bob")}
        human = con.execute("SELECT dialogue_id, model, annotator, dimension, score FROM human_ratings WHERE dataset = ? "
                            "AND target = 'dialogue' AND item_id IS NULL ORDER BY 1, 4", [task.target]).fetchall()
    finally:
        con.close()
    for log in ("streamlit-chat.log", "streamlit-chat-2.log"):
        assert "Traceback" not in (ARTIFACTS / log).read_text(encoding="utf-8", errors="replace")
    assert len(convs) == 4 and set(convs["state"]) == {"accepted"}
    assert sorted(convs["annotator"]) == ["ann", "ann", "bob", "bob"]
    for _, theirs in convs.groupby("annotator"):
        assert theirs["scenario"].nunique() == 2 and theirs["endpoint"].nunique() == 2, "a scenario or endpoint met twice"
    assert convs.groupby(["scenario", "endpoint"])["annotator"].nunique().tolist() == [1, 1, 1, 1]
    assert convs.groupby(["scenario"])["annotator"].nunique().tolist() == [2, 2]
    # every message stored once, as typed (the Chinese intact), each reply the echo of the message before it
    for who, cids in mine.items():   # in the order each person was given them
        for cid, typed in zip(cids, SAID[who]):
            assert said[cid] == [m for t in typed for m in (["user", t], ["assistant", f"echo: {t}"])]
    for who, cids in mine.items():
        for cid, values in zip(cids, RATINGS[who]):
            assert ratings[cid] == dict(zip(("Info", "Coh", "Know"), map(float, values)))
    assert flags[mine["ann"][0]] == {1: {"repetition"}} and flags[mine["bob"][1]] == {1: {"off topic"}}
    # accepted: four dialogues of the target, six turns each, three items answered by the endpoint, ratings
    assert len(dialogues) == 4 and len(turns) == 24 and len(responses) == 12
    assert {s for _, _, s, _ in turns} == {"user", "model"}
    assert sorted({m for _, m, _, _ in responses}) == list(ENDPOINTS)
    assert len(human) == 4 * 3
    endpoint_of = dict(zip(convs["dialogue_id"], convs["endpoint"]))
    annotator_of = dict(zip(convs["dialogue_id"], convs["annotator"]))
    assert all(model == endpoint_of[d] and who == annotator_of[d] for d, model, who, _, _ in human)


# ------------------------------------------------------------------ the whole loop in the browser, no command line

LOOP_PEOPLE = {   # who chats, what they say (one round each), and their Info, Coh, Know ratings
    "ann": ("你好", (0, 1, 0)), "bob": ("这部电影的导演是谁？主演有哪些人？", (2, 2, 1)),
    "cy": ("我想了解一下这个乐队的历史和代表作品", (2, 1, 2)), "dan": ("它好看吗", (1, 0, 1)),
}
LOOP_NAME = "secret-alpha vs secret-beta, pilot"   # a name that names the endpoints: people must never see it


def _loop_shot(page, name: str, width: int) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    settle(page)
    page.screenshot(path=str(ARTIFACTS / f"chat-loop-{name}-{width}.png"), full_page=True)


def _register(page, base: str, width: int) -> None:
    """Both endpoints added on the Upload page's endpoint form, against the local server."""
    page.goto(f"{base}/upload?dataset=demo-zh&track=kdconv/knowledge&kind=endpoint&open=endpoints")
    expect(page.get_by_role("button", name="Add endpoint")).to_be_visible(timeout=60_000)
    for name in ENDPOINTS:
        settle(page)
        page.get_by_label("Name", exact=True).fill(name)
        page.get_by_label("Base URL").fill(LOOP_URL["url"])
        page.get_by_label("Served model name").fill(f"{name}-served")
        page.get_by_role("button", name="Add endpoint").click()
        expect(page.get_by_text(re.compile(rf"{name}.*(added|registered)"))).to_be_visible(timeout=60_000)
    _loop_shot(page, "endpoints", width)


def _create(page, base: str, width: int) -> tuple[int, str]:
    """A chat task made on the Chat tasks page's form: 3 scenarios, both endpoints, one round; its id and code."""
    page.goto(f"{base}/chats")
    expect(page.get_by_text("People talk with models they are not told the names of")).to_be_visible(timeout=60_000)
    settle(page)
    form = page.locator('[data-testid="stForm"]').first
    if not form.is_visible():
        page.get_by_text("Create a chat task").click()
    expect(page.get_by_role("button", name="Create chat task")).to_be_visible(timeout=30_000)
    for label, value in (("Scenarios", "3"), ("Rounds at most", "1")):
        box = page.get_by_label(label, exact=True)
        box.fill(value)
        box.press("Tab")
    page.get_by_label("Name", exact=True).fill(LOOP_NAME)
    page.get_by_role("combobox", name="Language").click()   # its people's pages in English (demo-zh's is zh-CN)
    page.get_by_role("option", name="English", exact=True).click()
    page.get_by_role("button", name="Create chat task").click()
    made = page.get_by_text(re.compile(r"^Chat task \d+ created"))
    expect(made).to_be_visible(timeout=60_000)
    task_id = int(re.search(r"Chat task (\d+) created", made.inner_text()).group(1))
    said = page.get_by_text(re.compile(r"give the access code [0-9a-f]{6}")).inner_text()
    _loop_shot(page, "created", width)
    return task_id, re.search(r"access code ([0-9a-f]{6})", said).group(1)


def _chat_once(browser, base: str, task_id: int, code: str, person: str, width: int) -> None:
    """A person's conversation: entry, one round, the end, every dimension rated; the page blind throughout."""
    said, values = LOOP_PEOPLE[person]
    context = browser.new_context(viewport={"width": width, "height": 1200})
    page = context.new_page()
    page.goto(f"{base}/chat?task={task_id}")
    expect(page.get_by_text(f"Chat task {task_id}: scenarios of kdconv/knowledge")).to_be_visible(timeout=60_000)
    html = page.content()
    assert LOOP_NAME not in html and not any(n in html for n in ENDPOINTS), "the entry page names an endpoint"
    expect(page.get_by_label("Your name")).to_be_visible(timeout=30_000)   # the entry form drawn, not its skeleton
    if person == "ann":
        _loop_shot(page, "entry", width)
    # a person is one across tasks (their key from the first task is needed for the next): new people each width
    page.get_by_label("Your name").fill(f"{person}-{width}")
    page.get_by_label("Access code").fill(code)
    page.get_by_role("button", name="Start chatting").click()
    page.get_by_role("button", name="I have kept my key: start").click(timeout=60_000)
    settle(page)
    _round(page, said)
    _end_and_rate(page, values)
    _blind(page)
    assert LOOP_NAME not in page.content()
    if person == "ann":
        _loop_shot(page, "rated", width)
    context.close()


def _accept_all(page, base: str, task_id: int, width: int) -> None:
    """Every rated conversation accepted on the Chat tasks page's Review, one after another."""
    page.goto(f"{base}/chats?task={task_id}")
    expect(page.get_by_text(re.compile(r"^Review \(\d+ waiting\)"))).to_be_visible(timeout=60_000)
    for left in range(len(LOOP_PEOPLE), 0, -1):
        expect(page.get_by_text(f"Review ({left} waiting)")).to_be_visible(timeout=60_000)
        settle(page)
        if left == len(LOOP_PEOPLE):
            _loop_shot(page, "review", width)
        accept = page.get_by_role("button", name="Accept", exact=True)
        expect(accept).to_have_count(1, timeout=30_000)   # a rerun's stale copy gone
        accept.click()
    expect(page.get_by_text("Review (0 waiting)")).to_be_visible(timeout=60_000)


@pytest.mark.browser
def test_the_chat_loop_from_a_new_task_to_metric_trust_without_the_command_line(tmp_path, default_store_file):
    """At 1400 and then 800 px, nothing but the browser: the endpoints registered on the Upload page, a chat task
    made on Chat tasks (named after its endpoints), four people chat one round each and rate it, blind (neither the
    endpoints nor the task's name reach their pages), the reviewer accepts the four on Chat tasks, the scoring job
    runs to its end there, and its "Metric trust on these dialogues" opens Metric trust on the chat dataset with its
    table of metrics against the people's whole-dialogue ratings."""
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    db = copy_default_store(default_store_file, tmp_path / "store.duckdb")
    with JudgeServer(echo=True) as srv:
        LOOP_URL["url"] = srv.url
        port = free_port()
        base = f"http://localhost:{port}"
        server = _start(db, port, "streamlit-chat-loop.log")
        try:
            with chromium() as browser:
                for width in (1400, 800):
                    lab = browser.new_context(viewport={"width": width, "height": 1400}).new_page()
                    if width == 1400:
                        _register(lab, base, width)
                    task_id, code = _create(lab, base, width)
                    for person in LOOP_PEOPLE:
                        _chat_once(browser, base, task_id, code, person, width)
                    _accept_all(lab, base, task_id, width)
                    done = lab.get_by_text(re.compile(r"Scoring job \d+ \(DIST1, DIST2\): done"))
                    expect(done).to_be_visible(timeout=180_000)
                    settle(lab)
                    trust = lab.get_by_role("link", name="Metric trust on these dialogues")
                    expect(trust).to_be_enabled(timeout=60_000)
                    _loop_shot(lab, "scored", width)
                    href = trust.get_attribute("href")
                    target = f"chat-{task_id}-demo-zh"
                    assert f"dataset={target}" in href, href
                    lab.goto(href if href.startswith("http") else f"{base}/{href.lstrip('/')}")
                    expect(lab.locator('[data-testid="stDataFrame"] canvas').first).to_be_attached(timeout=120_000)
                    settle(lab)
                    _loop_shot(lab, "trust", width)
                    body = lab.inner_text("body")
                    assert "not a known dataset" not in body, body[:3000]
                    assert "has nothing to correlate" not in body, body[:3000]
                    expect(lab.get_by_role("combobox", name="Dataset")).to_have_value(target)   # the Dataset chosen
                    expect(lab.get_by_text("Ranking per skill")).to_be_visible()
                    assert "DIST1" in body and "Verdicts" in body
                    lab.context.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    log = (ARTIFACTS / "streamlit-chat-loop.log").read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log
    con = connect(db, read_only=True)
    try:
        for task_id in (1, 2):
            convs = stored.conversations(con, task_id)
            assert (convs["state"] == "accepted").sum() == len(LOOP_PEOPLE)
            assert stored.get(con, task_id).name == LOOP_NAME
        jobs = con.execute("SELECT dataset, state FROM jobs ORDER BY job_id").fetchall()
        assert {d for d, _ in jobs} == {"chat-1-demo-zh", "chat-2-demo-zh"} and {s for _, s in jobs} == {"done"}
    finally:
        con.close()


LOOP_URL: dict = {}   # the local endpoint server's URL, for the page's form
