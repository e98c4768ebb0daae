"""The Chat page in AppTest against a local endpoint started here: a person enters with the task's access code,
sees their scenario (never the endpoint's name), sends messages and gets streamed replies stored one by one, ends
the conversation, flags a reply and rates the whole dialogue; a new session resumes where the store says; an
endpoint that fails gives a sentence and a retry while the person's message stays."""
from __future__ import annotations

from functools import partial

import pytest

from evalcore.services import chats as service
from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import endpoints as registry
from support import copy_default_store
from support.apptest import run
from support.judge_server import JudgeServer

# These tests read the pages' English: the person picked English (a task on demo-zh is in Chinese otherwise)
run = partial(run, lang="en")


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
        for control in [c for c in at2.segmented_control if c.key.startswith("chat-")]:   # not the language switch
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
    from evalcore.services import jobs

    monkeypatch.setattr(jobs, "start", lambda path, job: None)   # the acceptance's scoring job: no worker here
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


def shown_text(at) -> str:
    """Every text a person can read on the page (labels and options of its controls included)."""
    parts = [e.value for kind in ("text", "caption", "markdown", "info", "warning", "error", "success")
             for e in getattr(at, kind)]
    parts += [str(o) for s in at.selectbox for o in s.options] + [w.label for w in at.text_input]
    return plain("\n".join(map(str, parts)))


def plain(markdown: str) -> str:
    """Text as read: without the escapes that keep it from being markdown (pages.kit.text.md_escape)."""
    return markdown.replace("\\", "")


def test_the_entry_page_names_no_endpoint_whatever_the_task_is_called(chat_store, monkeypatch):
    """A task named after its endpoints (as the old default name was) is shown to people by its number and track."""
    with JudgeServer(echo=True) as srv:
        task = make_task(chat_store, srv.url)
        con = connect(chat_store)
        try:
            named = service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge", n_scenarios=2,
                                        endpoints=["secret-alpha", "secret-beta"], name="secret-alpha vs secret-beta")
        finally:
            con.close()
    env = {"EVALCORE_DB": chat_store}
    for query, opened in (({"task": str(named)}, named), ({}, task.task_id)):   # its link; no task: the first
        at = run("chat", monkeypatch, env, **query)
        shown = shown_text(at)
        assert "secret-alpha" not in shown and "secret-beta" not in shown and task.name not in shown
        assert f"Chat task {opened}: scenarios of kdconv/knowledge" in shown
        assert "You will talk with models you are not told the names of" in shown


def test_a_refused_message_is_said_and_stays_in_the_box(chat_store, monkeypatch):
    """Over 4,000 characters (Streamlit's server would cut it silently) or nothing visible: one sentence, nothing
    stored, the text back in the box."""
    with JudgeServer(echo=True) as srv:
        task = make_task(chat_store, srv.url)
        at = run("chat", monkeypatch, {"EVALCORE_DB": chat_store}, task=str(task.task_id))
        enter(at, task)
        long = "长" * 5000
        cid = send(at, task, long)
        assert messages(chat_store, cid) == []
        assert [plain(e.value) for e in at.error] == ["A message holds at most 4,000 characters, this one 5,000; nothing was "
                                              "stored: shorten it and send it again"]
        box = at.chat_input(key=f"chat-{task.task_id}-say-{cid}")
        assert box.proto.value == long and box.proto.set_value
        send(at, task, "\u200b\u200b\u200b")
        assert messages(chat_store, cid) == []
        assert [plain(e.value) for e in at.error] == ["An empty message is not sent (it holds no visible character); "
                                              "nothing was stored"]


def test_a_task_closed_while_someone_types_keeps_their_message_and_says_so(chat_store, monkeypatch):
    """The task closes between the page's draw and the person's send: nothing is stored, they are told so on the
    task's own page with their text in the box, and they are not moved to another open task's form."""
    with JudgeServer(echo=True) as srv:
        task = make_task(chat_store, srv.url)
        con = connect(chat_store)
        try:
            other = service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge", n_scenarios=2,
                                        endpoints=["secret-alpha"])
        finally:
            con.close()
        at = run("chat", monkeypatch, {"EVALCORE_DB": chat_store}, task=str(task.task_id))
        enter(at, task)
        cid = send(at, task, "你好")
        con = connect(chat_store)
        try:
            stored.set_state(con, task.task_id, "closed")
        finally:
            con.close()
        typed = "我刚写好的一段话"
        at.chat_input(key=f"chat-{task.task_id}-say-{cid}").set_value(typed).run()
        assert not at.exception, [e.value for e in at.exception]
        assert messages(chat_store, cid) == [[0, "user", "你好"], [1, "assistant", "echo: 你好"]]
        assert any("no longer open" in i.value for i in at.info)
        assert [w.value for w in at.warning] == ["Your last message was not stored: the task was closed while you "
                                                "wrote it. It is still in the box below, to copy."]
        box = at.chat_input(key=f"chat-{task.task_id}-say-{cid}")
        assert box.proto.value == typed and box.proto.disabled
        assert at.query_params["task"] in (str(task.task_id), [str(task.task_id)])
        assert f"Chat task {other}" not in shown_text(at) and not at.selectbox


@pytest.fixture(scope="module")
def rated_store(tmp_path_factory, default_store_file):
    """A store with a chat task and three conversations rated by three people, none reviewed yet (made once)."""
    db = copy_default_store(default_store_file, tmp_path_factory.mktemp("rated") / "s.duckdb")
    with JudgeServer(echo=True) as srv:
        task = make_task(db, srv.url)
        con = connect(db)
        try:
            cids = []
            for person, said, value in (("ann", "你好 你好", 0), ("bob", "电影 导演 演员", 2), ("cy", "好看", 1)):
                cid = stored.assign(con, task, person)
                stored.say(con, cid, person, said)
                after, stream = service.ask(con, cid)
                list(stream)
                service.keep(con, cid, after, stream.reply)
                stored.end(con, cid, person, goal=True)
                for d in task.dimensions:
                    stored.rate(con, cid, person, d.dimension, value)
                cids.append(cid)
        finally:
            con.close()
    return db, task, cids


def test_accepting_on_the_chat_tasks_page_starts_the_scoring_job_and_trust_waits_for_it(rated_store, tmp_path,
                                                                                        monkeypatch):
    """Accept starts the scoring job (as an upload's is started); until it ends the trust button is off and the page
    says which job it waits for; once it ends the button opens Metric trust on the chat dataset."""
    from evalcore.services import jobs

    source, task, cids = rated_store
    db = copy_default_store(source, tmp_path / "s.duckdb")
    started = []
    monkeypatch.setattr(jobs, "start", lambda path, job: started.append(job))
    env = {"EVALCORE_DB": db, "EVALCORE_UPLOAD_PASSWORD": None, "EVALCORE_READ_ONLY": None}
    at = run("chats", monkeypatch, env, task=str(task.task_id))
    assert "Metric trust: no accepted conversations yet" in shown_text(at)
    shown = at.selectbox(key="ct-review-pick").value   # the first waiting for review
    at.button(key=f"ct-accept-{shown}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    job = started[0]
    assert started == [job]
    assert f"Metric trust: scoring job {job} is queued" in shown_text(at)
    button = next(b for b in at.get("link_button") if b.proto.label == "Metric trust on these dialogues")
    assert button.proto.disabled
    con = connect(db)
    try:
        assert jobs.run(con, job)   # what the worker started above does
    finally:
        con.close()
    at.run()
    button = next(b for b in at.get("link_button") if b.proto.label == "Metric trust on these dialogues")
    assert not button.proto.disabled and f"dataset={task.target}" in button.proto.url
    assert any(f"Scoring job {job} (DIST1, DIST2): done" in plain(p.proto.text) for p in at.get("progress"))


def test_metric_trust_linked_to_a_chat_dataset_says_what_is_missing_then_opens_on_it(rated_store, tmp_path,
                                                                                      monkeypatch):
    """Before its job has run, Metric trust says why the chat dataset is not offered (which job it waits for), not
    "not a known dataset"; after, it opens on it with its table."""
    from evalcore.services import jobs

    source, task, cids = rated_store
    db = copy_default_store(source, tmp_path / "s.duckdb")
    monkeypatch.setattr(jobs, "start", lambda path, job: None)   # no worker: the server's check would start one
    con = connect(db)
    try:
        job = {service.review(con, cid, "lead", accept=True)[1] for cid in cids}.pop()
    finally:
        con.close()
    env = {"EVALCORE_DB": db}
    tr = run("trust", monkeypatch, env, dataset=task.target, level="dialogue")
    said = shown_text(tr)
    assert f"'{task.target}' has nothing to correlate yet (no metric values of its rated units; its scoring job " \
           f"{job} is " in said and "not a known dataset" not in said
    con = connect(db)
    try:
        assert jobs.run(con, job)
    finally:
        con.close()
    tr = run("trust", monkeypatch, env, dataset=task.target, level="dialogue")
    assert tr.selectbox(key="tr-dataset").value == task.target and "not a known" not in shown_text(tr)
    assert len(tr.dataframe), shown_text(tr)
