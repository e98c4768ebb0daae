"""A switch of language mid-chat and mid-rating in Chromium (slow; issue 64, must-show 3): a zh-CN task opens in
Chinese for a browser set to English; the text typed in the chat box and not yet sent is still there after a click on
"English", and sent once; a rating chosen on an unfinished unit is still chosen after the switch, and stored once.
Screenshots at 800 px: tests/artifacts/switch-*.png."""
from __future__ import annotations

import os

import pytest

from evalcore.services import chats as service
from evalcore.services.defaults import DEMO_TASK
from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import endpoints as registry
from evalcore.store import tasks as tasks_stored
from support import copy_default_store
from support.browser import ARTIFACTS, CHROMIUM, GROUPS, chromium, expect, serve, settle
from support.judge_server import JudgeServer

pytestmark = [pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium is not installed"), pytest.mark.slow]

INPUT = '[data-testid="stChatInputTextArea"]'
SAID = "你好，我们聊聊这部电影吧"


@pytest.fixture(scope="module")
def world(tmp_path_factory, default_store_file):
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    db = copy_default_store(default_store_file, tmp_path_factory.mktemp("switch") / "store.duckdb")
    with JudgeServer(echo=True) as srv:
        con = connect(db)
        try:
            registry.add(con, registry.Registered("secret-alpha", srv.url, "m", api_key_env=None))
            chat = stored.get(con, service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge",
                                                       endpoints=["secret-alpha"], n_scenarios=1, max_rounds=3))
            rating = next(tasks_stored.get(con, int(t)) for t, n in
                          con.execute("SELECT task_id, name FROM tasks").fetchall() if n == DEMO_TASK)
        finally:
            con.close()
        assert chat.lang == rating.lang == "zh-CN"
        with serve(db, "switch-streamlit.log") as base, chromium() as browser:
            yield {"db": db, "base": base, "browser": browser, "chat": chat, "rating": rating}


def _page(world):
    context = world["browser"].new_context(viewport={"width": 800, "height": 1000}, locale="en-US")
    return context, context.new_page()


def _switch_to_english(page) -> None:
    page.get_by_role("radio", name="English", exact=True).click()   # the switch beside the title
    settle(page)


def test_the_unsent_message_survives_a_switch_and_is_sent_once(world):
    context, page = _page(world)
    try:
        chat = world["chat"]
        page.goto(f"{world['base']}/chat?task={chat.task_id}")
        page.get_by_label("你的名字").fill("ann")
        page.get_by_label("访问码").fill(chat.access_code)
        page.get_by_role("button", name="开始对话").click()
        page.get_by_role("button", name="我已保存密钥：开始").click()
        settle(page)
        box = page.locator(INPUT)
        expect(box).to_be_enabled(timeout=30_000)
        box.click()
        page.keyboard.insert_text(SAID)   # typed, not sent
        page.screenshot(path=str(ARTIFACTS / "switch-chat-zh-800.png"))
        _switch_to_english(page)
        expect(page.get_by_text("Your scenario", exact=False)).to_be_visible(timeout=30_000)
        expect(box).to_have_value(SAID)   # still in the box
        con = connect(world["db"], wait=60)   # the server holds the file while a page queries or writes
        try:
            cid = con.execute("SELECT conversation_id FROM chat_conversations WHERE task_id = ? AND annotator = 'ann'",
                              [chat.task_id]).fetchall()[0][0]
            assert stored.messages(con, cid).empty   # the switch sent nothing
        finally:
            con.close()
        page.screenshot(path=str(ARTIFACTS / "switch-chat-en-800.png"))
        box.press("Enter")
        expect(page.get_by_text(f"echo: {SAID}", exact=True)).to_be_visible(timeout=60_000)
        settle(page)
        con = connect(world["db"], wait=60)   # the server holds the file while a page queries or writes
        try:
            assert stored.messages(con, cid)[["role", "text"]].values.tolist() == [["user", SAID],
                                                                                 ["assistant", f"echo: {SAID}"]]
        finally:
            con.close()
    finally:
        context.close()


def test_the_pending_rating_survives_a_switch(world):
    context, page = _page(world)
    try:
        task = world["rating"]
        page.goto(f"{world['base']}/annotate?task={task.task_id}")
        page.get_by_label("你的名字").fill("bea")
        page.get_by_label("访问码").fill(task.access_code)
        page.get_by_role("button", name="开始评分").click()
        page.get_by_role("button", name="我已保存密钥：开始评分").click()
        settle(page)
        expect(page.get_by_role("button", name="跳过这个单元")).to_be_visible(timeout=30_000)
        first = page.locator(GROUPS).nth(0)   # Info (the language switch left out)
        first.get_by_role("radio", name="2", exact=True).click()
        settle(page)
        page.screenshot(path=str(ARTIFACTS / "switch-annotate-zh-800.png"))
        _switch_to_english(page)
        expect(page.get_by_role("button", name="Skip this unit")).to_be_visible(timeout=30_000)
        expect(first.get_by_role("radio", name="2", exact=True)).to_have_attribute("aria-checked", "true")   # still
        expect(first.get_by_role("radio", name="1", exact=True)).to_have_attribute("aria-checked", "false")   # chosen
        page.screenshot(path=str(ARTIFACTS / "switch-annotate-en-800.png"))
        con = connect(world["db"], wait=60)   # the server holds the file while a page queries or writes
        try:
            rows = con.execute("SELECT dimension, value FROM task_answers WHERE task_id = ? AND annotator = 'bea' "
                               "AND kind <> 'claim'", [task.task_id]).fetchall()
        finally:
            con.close()
        assert rows == [("Info", 2.0)]   # stored once
    finally:
        context.close()
