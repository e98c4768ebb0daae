"""The Chat page in AppTest against a local endpoint started here: a person enters with the task's access code,
sees their scenario (never the endpoint's name), sends messages and gets streamed replies stored one by one, ends
the conversation, flags a reply and rates the whole dialogue; a new session resumes where the store says; an
endpoint that fails gives a sentence and a retry while the person's message stays."""
from __future__ import annotations

import pytest

from evalcore.services import chats as service
from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import endpoints as registry
from support import copy_default_store
from support.apptest import run
from support.judge_server import JudgeServer


@pytest.fixture
def chat_store(tmp_path, default_store_file):
    return copy_default_store(default_store_file, tmp_path / "s.duckdb")


def make_task(db, url: str, review: bool = True) -> stored.ChatTask:
    con = connect(db)
    try:
        for name in ("secret-alpha", "secret-beta"):
            registry.add(con, registry.Registered(name, url, "m", api_key_env=None))
        tid = service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge",
                                  endpoints=["secret-alpha", "secret-beta"], n_scenarios=2, max_rounds=3, review=review)
        return stored.get(con, tid)
    finally:
        con.close()


def enter(at, task, name="ann"):
    at.text_input[0].input(name)
    at.text_input[1].input(task.access_code)
    at.button[0].click().run()
    key = at.session_state[f"chat-{task.task_id}-issued"]
    at.button(key=f"chat-{task.task_id}-kept").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return key


def send(at, task, text):
    cid = at.session_state[f"chat-{task.task_id}-at"]
    at.chat_input(key=f"chat-{task.task_id}-say-{cid}").set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    return cid


def messages(db, cid):
    con = connect(db)
    try:
        return stored.messages(con, cid)[["idx", "role", "text"]].values.tolist()
    finally:
        con.close()


def test_a_person_chats_rates_and_resumes(chat_store, monkeypatch):
    with JudgeServer(echo=True) as srv:
        task = make_task(chat_store, srv.url)
        env = {"EVALCORE_DB": chat_store}
        at = run("chat", monkeypatch, env, task=str(task.task_id))
        key = enter(at, task)
        assert any(c.value.startswith("Your scenario") for c in at.caption)
        assert any(t.value.startswith("knowledge:\n") or t.value.startswith("Knowledge:\n") for t in at.text)
        cid = send(at, task, "你好，我们聊聊电影吧")
        assert messages(chat_store, cid) == [[0, "user", "你好，我们聊聊电影吧"], [1, "assistant", "echo: 你好，我们聊聊电影吧"]]
        send(at, task, "**bold** <b>x</b>")
        shown = " ".join([t.value for t in at.text] + [c.value for c in at.caption] + [m.value for m in at.markdown])
        assert "secret-alpha" not in shown and "secret-beta" not in shown
        assert any(t.value == "echo: **bold** <b>x</b>" for t in at.text)   # as text, never markdown or HTML
        # another machine: the same person resumes the same conversation
        at2 = run("chat", monkeypatch, env, task=str(task.task_id))
        at2.text_input[0].input("ann")
        at2.text_input[1].input(task.access_code)
        at2.text_input[2].input(key)
        at2.button[0].click().run()
        assert at2.session_state[f"chat-{task.task_id}-at"] == cid
        assert [t.value for t in at2.text].count("echo: 你好，我们聊聊电影吧") == 1
        at2.checkbox(key=f"chat-{task.task_id}-goal-{cid}").check()
        at2.button[-1].click().run()   # End the conversation and rate it
        assert not at2.exception, [e.value for e in at2.exception]
        con = connect(chat_store)
        assert stored.conversation(con, cid).state == "ended"
        con.close()
        for control in at2.segmented_control:
            control.set_value(2.0).run()
        con = connect(chat_store)
        try:
            conv = stored.conversation(con, cid)
            assert conv.state == "rated" and conv.goal is True
            assert stored.ratings(con, cid) == {d.dimension: 2.0 for d in task.dimensions}
        finally:
            con.close()


def test_a_failing_endpoint_gives_a_retry_and_keeps_the_message(chat_store, monkeypatch):
    with JudgeServer(echo=True) as srv:
        task = make_task(chat_store, srv.url)
    # the server is gone: the reply fails after the client's retries
    env = {"EVALCORE_DB": chat_store}
    at = run("chat", monkeypatch, env, task=str(task.task_id))
    enter(at, task)
    cid = send(at, task, "还在吗")
    assert messages(chat_store, cid) == [[0, "user", "还在吗"]]
    assert any("did not answer" in w.value for w in at.warning), [w.value for w in at.warning]
    assert at.button(key=f"chat-{task.task_id}-retry-{cid}")


def test_the_chat_tasks_page_creates_reviews_and_exports(chat_store, monkeypatch):
    with JudgeServer(echo=True) as srv:
        task = make_task(chat_store, srv.url)
        con = connect(chat_store)
        try:
            cid = stored.assign(con, task, "ann")
            stored.say(con, cid, "ann", "你好")
            after, stream = service.ask(con, cid)
            list(stream)
            service.keep(con, cid, after, stream.reply)
            stored.end(con, cid, "ann", goal=False)
            for d in task.dimensions:
                stored.rate(con, cid, "ann", d.dimension, 1)
        finally:
            con.close()
    env = {"EVALCORE_DB": chat_store, "EVALCORE_UPLOAD_PASSWORD": None, "EVALCORE_READ_ONLY": None}
    at = run("chats", monkeypatch, env, task=str(task.task_id))
    assert any(f"give the access code {task.access_code}" in t.value for t in at.text)
    table = at.dataframe[1].value
    assert table["endpoint"].tolist() == ["secret-alpha", "secret-beta"] and table["conversations"].tolist() == [0, 0]
    at.button(key=f"ct-accept-{cid}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[1].value
    counted = table.set_index("endpoint")["conversations"]
    con = connect(chat_store)
    try:
        conv = stored.conversation(con, cid)
        assert conv.state == "accepted" and counted[conv.endpoint] == 1
        assert con.execute("SELECT count(*) FROM dialogues WHERE dataset = ?", [task.target]).fetchall() == [(1,)]
    finally:
        con.close()
    # a new task from the form: the first source (demo-zh's KdConv dialogues), both endpoints
    at.text_input(key="ct-name").input("second")
    next(b for b in at.button if b.label == "Create chat task").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Chat task 2 created" in s.value for s in at.success)
    con = connect(chat_store)
    try:
        made = stored.get(con, 2)
        assert made.name == "second" and made.endpoints == ("secret-alpha", "secret-beta") and made.target == "chat-2-demo-zh"
    finally:
        con.close()
