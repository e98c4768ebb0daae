"""What the Chat page does with a hostile endpoint's reply: the stream it draws (core.chat.Stream) and what it keeps
and says (pagedata.chats.keep), against the tests' local server in each hostile mode. The person is never stuck (the
stream ends, with a reply stored or one sentence and a retry), never shown the key or the model's name, and a reply is
stored with the importers' hygiene (no control characters, no lone surrogates) and its finish saying what was
removed; the full reason, without the key, goes to the server's log for whoever runs the evaluation."""
from __future__ import annotations

import logging

import pandas as pd
import pytest

from evalcore.core.chat import Stream
from evalcore.core.text import CONTROL, SURROGATE
from evalcore.pagedata import chats
from evalcore.store import chats as stored
from evalcore.store import endpoints as registry
from evalcore.store.tasks import Dimension
from support.judge_server import JudgeServer

KEY = "canary-chat-8d2f6a0b3c71"
MODEL = "secret-qwen2.5-72b-instruct"


def conversation(con, url: str) -> tuple[int, registry.Registered]:
    """A one-endpoint task whose endpoint is the local server, and a person's conversation in it."""
    entry = registry.Registered("e1", url, MODEL, api_key_env="CANARY_KEY", timeout=0.5, max_tokens=20)
    registry.add(con, entry)
    frame = pd.DataFrame({"dialogue_id": ["d0"], "grounding": [{"knowledge": [["s", "r", "o"]]}], "opening": [None]})
    tid = stored.create(con, name="t", dataset="toy", track="toy/knowledge", target="chat-toy", endpoints=["e1"],
                        settings={"e1": {"signature": "gen:e1"}}, per_scenario=1, max_rounds=3,
                        dimensions=[Dimension("Info", 0, 2)], flags=[], scenarios=frame, review=True, seed=0)
    return stored.assign(con, stored.get(con, tid), "ann"), entry


def turn(con, cid: int, entry: registry.Registered, text: str) -> tuple[Stream, list[str], str | None]:
    """One turn as the page takes it: the person's message stored, the reply streamed and drawn, then kept."""
    after = stored.say(con, cid, "ann", text)
    stream = Stream(entry.endpoint(stream=True), [{"role": "user", "content": text}])
    shown = list(stream)   # what the page draws piece by piece
    return stream, shown, chats.keep(con, cid, after, stream.reply)


@pytest.mark.parametrize("marker, stored_text, note", [
    ("SURROGATE", "good \ufffd bad", "1 lone surrogate replaced by U+FFFD"),
    ("CTRLALL", "a]0;titlebcd2Je\tf\ng", "5 control characters removed")])
def test_a_reply_is_stored_with_the_importers_hygiene(con, monkeypatch, marker, stored_text, note):
    with JudgeServer(echo=True) as srv:
        cid, entry = conversation(con, srv.url)
        stream, shown, problem = turn(con, cid, entry, marker)
    assert problem is None
    frame = stored.messages(con, cid)
    assert frame["text"].iloc[-1] == stored_text == "".join(shown) and frame["finish"].iloc[-1] == f"stop; {note}"
    assert all(CONTROL.search(p) is None and SURROGATE.search(p) is None for p in shown)


@pytest.mark.parametrize("marker, leak, why", [
    ("WRONGTYPE=content", False, "its answer could not be read"),
    ("WRONGTYPE=choice", False, "its answer could not be read"),
    ("EMPTYCHUNKS", False, "its answer could not be read"),
    ("COMMENTS", False, "its answer could not be read"),
    ("DRIP=0.2", False, "the server took too long"),
    ("FAIL401", False, "the server refused the key"),
    ("NOMODEL", True, "the server does not know the model asked for")])
def test_a_failed_reply_is_one_sentence_that_names_nothing(con, monkeypatch, caplog, marker, leak, why):
    monkeypatch.setenv("CANARY_KEY", KEY)
    with JudgeServer(echo=True, leak=leak) as srv, caplog.at_level(logging.WARNING, logger="evalcore.chat"):
        cid, entry = conversation(con, srv.url)
        stream, shown, problem = turn(con, cid, entry, marker)
    assert problem == f"The model did not answer ({why})"
    # nothing of the failed reply was stored: the person's message waits for a retry, which they are offered
    frame = stored.messages(con, cid)
    assert frame["role"].tolist() == ["user"] and stored.pending(con, cid) == 0
    # the owner's log has the whole reason, without the key
    [record] = [r for r in caplog.records if r.name == "evalcore.chat"]
    assert stream.reply.error in record.getMessage() and KEY not in record.getMessage()
    if marker == "NOMODEL":
        assert MODEL in record.getMessage()   # what the owner needs to mend it; never on the page
