"""Annotate and Chat in the task's language, and a switch of language in the middle of rating or chatting (issue 64,
item 2 and must-show 3). A task on demo-zh is a zh-CN task: its page is Chinese from the title down for a browser set
to English, with no English message of the catalog left on the unit page; the switch turns it English. A switch
mid-rating keeps the rating chosen on an unfinished unit (its control is keyed: the same widget under a new label)
and writes nothing again; mid-chat the message box is the same widget (a browser keeps the text typed in it), and the
message sent after the switch is stored once, and stays once after another switch."""
from __future__ import annotations

import re

import pytest

from evalcore.core import i18n
from evalcore.services import chats as service
from evalcore.store import chats as chat_store
from evalcore.store import connect
from evalcore.store import endpoints as registry
from pages.kit import lang
from support import copy_default_store
from support.apptest import demo_task_store, run
from support.i18n import english_left, page_texts
from support.judge_server import JudgeServer

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def english_browser(monkeypatch):
    """The person's browser is set to English (AppTest has no browser: lang.browser() would say None)."""
    monkeypatch.setattr(lang, "browser", lambda: "en")


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def _switch(at, to: str):
    """A click on the language switch (its key names the language the page was drawn in)."""
    shown = at.session_state["evalcore-lang-shown"]
    return _ok(at.segmented_control(key=f"lang-switch-{shown}").set_value(to).run())


def _enter_annotate(at, task):
    for box, value in zip(at.text_input, ("ann", task.access_code, "")):
        box.input(value)
    at.button[0].click().run()
    return _ok(at.button(key="ann-kept").click().run())


def _answers(db) -> list:
    con = connect(db)
    try:
        return con.execute("SELECT unit, annotator, dimension, value FROM task_answers WHERE kind <> 'claim' "
                           "ORDER BY 1, 3").fetchall()
    finally:
        con.close()


def test_a_zh_cn_task_is_chinese_for_an_english_browser(english_browser, monkeypatch, tmp_path, default_store_file):
    db, task = demo_task_store(tmp_path, default_store_file)
    assert task.lang == "zh-CN"   # demo-zh's language
    at = run("annotate", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id))
    assert at.session_state["evalcore-lang-shown"] == "zh-CN"
    assert all(CJK.search(t.value) for t in at.title), [t.value for t in at.title]
    assert english_left(page_texts(at)) == []
    at.text_input[1].input("wrong")   # a refusal is Chinese too
    at.text_input[0].input("ann")
    _ok(at.button[0].click().run())
    assert [e.value for e in at.error] == ["访问码不正确。"]
    at = _enter_annotate(run("annotate", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id)), task)
    unit = at.session_state[f"ann-unit-{task.task_id}"]
    assert unit is not None and at.button(key=f"ann-skip-{unit}").label == "跳过这个单元"
    assert english_left(page_texts(at)) == []
    # the same page for a person who picked English: English, the task's own rubric as it is
    at = _switch(at, "en")
    assert at.session_state["evalcore-lang-shown"] == "en"
    assert at.button(key=f"ann-skip-{unit}").label == "Skip this unit"
    assert [t.value for t in at.title] == ["Annotate"]


def test_a_switch_mid_rating_keeps_the_pending_rating(monkeypatch, tmp_path, default_store_file):
    db, task = demo_task_store(tmp_path, default_store_file)
    at = _enter_annotate(run("annotate", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id)), task)
    unit = at.session_state[f"ann-unit-{task.task_id}"]
    info = f"ann-{task.task_id}-{unit}-Info"
    _ok(at.segmented_control(key=info).set_value(2.0).run())   # Info chosen; Coh not yet: the unit stays
    at.text_area(key=f"ann-flag-{unit}").input("第二句不通顺")   # a comment typed, not sent
    _ok(at.run())
    stored = _answers(db)
    assert [row[2:] for row in stored] == [("Info", 2.0)]
    assert at.session_state["evalcore-lang-shown"] == "zh-CN"   # the task's language
    for to in ("en", "zh-CN", "en"):
        at = _switch(at, to)
        assert at.session_state["evalcore-lang-shown"] == to
        assert at.session_state[f"ann-unit-{task.task_id}"] == unit   # the same unit
        assert at.segmented_control(key=info).value == 2.0   # the pending rating is still chosen
        assert at.text_area(key=f"ann-flag-{unit}").value == "第二句不通顺"
        assert _answers(db) == stored   # nothing written again
    assert at.button(key=f"ann-skip-{unit}").label == "Skip this unit"
    _ok(at.segmented_control(key=f"ann-{task.task_id}-{unit}-Coh").set_value(1.0).run())   # the unit is done
    assert [row[2:] for row in _answers(db)] == [("Coh", 1.0), ("Info", 2.0)]
    assert at.session_state[f"ann-unit-{task.task_id}"] != unit


def _chat_task(db, url: str) -> chat_store.ChatTask:
    con = connect(db)
    try:
        registry.add(con, registry.Registered("secret-alpha", url, "m", api_key_env=None))
        return chat_store.get(con, service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge",
                                                       endpoints=["secret-alpha"], n_scenarios=1, max_rounds=3))
    finally:
        con.close()


def _messages(db, cid) -> list:
    con = connect(db)
    try:
        return chat_store.messages(con, cid)[["role", "text"]].values.tolist()
    finally:
        con.close()


def test_a_switch_mid_chat_keeps_the_message_box_and_sends_once(english_browser, monkeypatch, tmp_path,
                                                                 default_store_file):
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    with JudgeServer(echo=True) as srv:
        task = _chat_task(db, srv.url)
        assert task.lang == "zh-CN"
        at = run("chat", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id))
        assert at.session_state["evalcore-lang-shown"] == "zh-CN"
        at.text_input[0].input("ann")
        at.text_input[1].input(task.access_code)
        at.button[0].click().run()
        _ok(at.button(key=f"chat-{task.task_id}-kept").click().run())
        assert english_left(page_texts(at)) == []
        cid = at.session_state[f"chat-{task.task_id}-at"]
        box = f"chat-{task.task_id}-say-{cid}"
        before = at.chat_input(key=box)
        assert before.placeholder == "输入你的消息"
        at = _switch(at, "en")
        after = at.chat_input(key=box)
        # the same widget under its English placeholder: a browser keeps what was typed in it, unsent
        assert after.id == before.id and after.placeholder == "Your message"
        assert _messages(db, cid) == []   # a switch sends nothing
        _ok(at.chat_input(key=box).set_value("你好，我们聊聊电影吧").run())
        sent = [["user", "你好，我们聊聊电影吧"], ["assistant", "echo: 你好，我们聊聊电影吧"]]
        assert _messages(db, cid) == sent
        at = _switch(at, "zh-CN")
        assert _messages(db, cid) == sent   # once, after another switch too
        assert at.chat_input(key=box).placeholder == "输入你的消息"
        assert any(t.value == "echo: 你好，我们聊聊电影吧" for t in at.text)
        assert english_left(page_texts(at)) == []
        # ended and rated in Chinese: the rating part, the reply's flags and the thanks
        at.checkbox(key=f"chat-{task.task_id}-goal-{cid}").check()
        _ok(next(b for b in at.button if b.label == "结束对话并评分").click().run())
        assert [s.value for s in at.subheader] == ["为整段对话评分"]
        flags = next(g for g in at.get("button_group") if g.key.startswith(f"chat-{task.task_id}-flags-"))
        assert flags.options[1] == "知识错误"   # the reply's flags, in the task's language
        assert english_left(page_texts(at)) == []
        for d in task.dimensions:
            _ok(at.segmented_control(key=f"chat-{task.task_id}-rate-{cid}-{d.dimension}").set_value(1.0).run())
        assert [s.value for s in at.success][-1].startswith("谢谢：这段对话已评分")
        assert english_left(page_texts(at)) == []


def test_a_side_by_side_unit_in_chinese(monkeypatch, tmp_path, default_store_file):
    """A pairwise task on demo-zh: the sides, the tie and the whole unit page in Chinese, the stored vote unchanged."""
    from evalcore.services.tasks import create_task
    from evalcore.store import tasks as stored

    db, __ = demo_task_store(tmp_path, default_store_file)
    con = connect(db)
    task = stored.get(con, create_task(con, dataset="demo-zh", mode="pairwise", dimensions=["Info"], items=2,
                                       per_item=1, seed=3))
    con.close()
    at = _enter_annotate(run("annotate", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id)), task)
    unit = at.session_state[f"ann-unit-{task.task_id}"]
    sides = at.segmented_control(key=f"ann-{task.task_id}-{unit}-Info")
    assert sides.options == ["左边", "平局", "右边"]
    assert english_left(page_texts(at)) == []
    # a click sends the option as shown ("平局"): AppTest formats it with the page's format_func in this thread
    with i18n.speaking(i18n.ZH):
        _ok(sides.set_value("tie").run())
    assert [e.value for e in [*at.error, *at.warning]] == []
    assert [row[2:] for row in _answers(db)] == [("Info", 0.5)]
