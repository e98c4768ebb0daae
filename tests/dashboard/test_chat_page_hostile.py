"""The Chat page (AppTest) against hostile endpoints, after a first round that went well: a reply of chunks of the
wrong type, one holding a lone surrogate, vLLM's 404 naming the served model, a 401 echoing the key. The page never
raises; a failure is one sentence beside a Retry button and the End form (the person is never stuck); a reply with a
lone surrogate is drawn and stored cleaned; and nothing the page shows names the key, the served model or the
endpoint."""
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

KEY = "canary-page-0f6e2d9c4b17a358"
MODEL = "secret-qwen2.5-72b-instruct"


def make_task(db, url: str) -> stored.ChatTask:
    con = connect(db)
    try:
        registry.add(con, registry.Registered("secret-alpha", url, MODEL, api_key_env="CANARY_KEY", timeout=1.0,
                                              max_tokens=20))
        tid = service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge", endpoints=["secret-alpha"],
                                  n_scenarios=1, max_rounds=3, review=True)
        return stored.get(con, tid)
    finally:
        con.close()


def shown(at) -> str:
    parts = [e.value for kind in ("text", "caption", "markdown", "warning", "error", "info", "success")
             for e in getattr(at, kind)]
    parts += [b.label for b in at.button] + [str(c.placeholder) for c in at.chat_input]
    return "\n".join(str(p) for p in parts)


@pytest.mark.parametrize("marker, why", [
    ("WRONGTYPE=delta", "its answer could not be read"),
    ("NOMODEL", "the server does not know the model asked for"),
    ("FAIL401", "the server refused the key"),
    ("SURROGATE", None)])
def test_the_chat_page_against_a_hostile_endpoint(tmp_path, default_store_file, monkeypatch, marker, why):
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    monkeypatch.setenv("CANARY_KEY", KEY)
    with JudgeServer(echo=True, leak=True) as srv:
        task = make_task(db, srv.url)
        at = run("chat", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id))
        at.text_input[0].input("ann")
        at.text_input[1].input(task.access_code)
        at.button[0].click().run()
        at.button(key=f"chat-{task.task_id}-kept").click().run()
        cid = at.session_state[f"chat-{task.task_id}-at"]
        box = f"chat-{task.task_id}-say-{cid}"
        at.chat_input(key=box).set_value("你好").run()      # a first round that goes well
        at.chat_input(key=box).set_value(f"{marker} 再说一遍").run()
        assert not at.exception, [e.value for e in at.exception]
    page = shown(at)
    assert KEY not in page and MODEL not in page and "secret" not in page
    con = connect(db)
    try:
        frame = stored.messages(con, cid)
    finally:
        con.close()
    if why is None:   # stored, drawn, cleaned, and said so in its finish
        assert frame["text"].iloc[-1] == "good \ufffd bad" and frame["finish"].iloc[-1].endswith("replaced by U+FFFD")
        assert "good \ufffd bad" in [t.value for t in at.text]
        return
    # (the page writes it as markdown source, escaped: a backslash before each markdown character)
    assert [w.value.replace("\\", "") for w in at.warning] == [
        f"The model did not answer ({why}). Your message is kept; try again, or end the conversation."]
    assert at.button(key=f"chat-{task.task_id}-retry-{cid}")            # a retry
    assert "End the conversation and rate it" in [b.label for b in at.button]   # and a way out
    assert frame["role"].tolist() == ["user", "assistant", "user"]      # the person's message kept, waiting
