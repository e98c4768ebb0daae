"""core.chat.Stream, what the Chat page shows a reply through: the text piece by piece as the server streams it and
then the whole reply with its finish; a server that fails before the first piece is retried (429 with Retry-After);
one that never stops is cut at the endpoint's token limit; a refusal or an unreachable server is a reply with its
reason, never an exception out of the iteration; hostile streams (wrong types, lone surrogates, control characters,
endless empty chunks or comments, a slow drip, an error body echoing the key or naming the model) end with a reply
or a reason, within the endpoint's deadline, and the reason holds no key."""
from __future__ import annotations

import time

import pytest

from evalcore.core.chat import Endpoint, Stream, plain
from evalcore.core.text import CONTROL, SURROGATE
from support.judge_server import JudgeServer


def endpoint(url: str, **kw) -> Endpoint:
    return Endpoint(url, "m", api_key_env=None, **kw)


def test_pieces_then_the_whole_reply():
    with JudgeServer(echo=True) as srv:
        stream = Stream(endpoint(srv.url), [{"role": "user", "content": "你好，世界，今天天气很好"}])
        pieces = list(stream)
    assert len(pieces) > 1 and "".join(pieces) == stream.reply.text == "echo: 你好，世界，今天天气很好"
    assert stream.reply.error is None and stream.reply.finish == "stop" and stream.first_piece_at is not None
    assert srv.bodies[-1]["stream"] is True


def test_retried_before_the_first_piece_and_cut_when_endless():
    with JudgeServer(echo=True) as srv:
        start = time.monotonic()
        stream = Stream(endpoint(srv.url), [{"role": "user", "content": "RATE429 hello"}], backoff=0.1)
        text = "".join(stream)
        assert stream.reply.attempts == 2 and text == stream.reply.text and time.monotonic() - start >= 1.0
        endless = Stream(endpoint(srv.url, max_tokens=5), [{"role": "user", "content": "ENDLESS"}])
        list(endless)
        assert endless.reply.finish == "cut" and endless.reply.flag == "cut"


def test_failures_are_replies_with_their_reason():
    with JudgeServer(echo=True) as srv:
        refused = Stream(endpoint(srv.url), [{"role": "user", "content": "BADJSON"}])
        assert list(refused) == [] and refused.reply.text is None and refused.reply.error
        url = srv.url
    gone = Stream(endpoint(url, timeout=2), [{"role": "user", "content": "hi"}], retries=2, backoff=0.05)
    assert list(gone) == [] and gone.reply.text is None
    assert gone.reply.error.startswith("connection error after 2 attempts")


# The hostile endpoints of issue 61 (tests/support/judge_server.py serves each): the person's stream always ends,
# with a reply or a reason, within the endpoint's deadline; nothing raises out of it; a reason never holds the key.
KEY = "canary-stream-5e0c2a91d7b3"


def hostile(url: str, **kw) -> Endpoint:
    # a short idle timeout for the slow-drip case, a total deadline of 1.5 s (3 x timeout) for every request
    return Endpoint(url, "secret-qwen2.5-72b-instruct", api_key_env="CANARY_KEY", timeout=kw.pop("timeout", 0.5),
                    max_tokens=20, **kw)


@pytest.mark.parametrize("part, said", [("content", "choices[0].delta.content is a number"),
                                        ("delta", "choices[0].delta is a list"), ("choice", "choices[0] is a string"),
                                        ("choices", "choices is an object"),
                                        ("finish", "choices[0].finish_reason is a number")])
def test_chunks_of_the_wrong_type_are_a_reason_never_an_exception(part, said):
    with JudgeServer(echo=True) as srv:
        stream = Stream(hostile(srv.url), [{"role": "user", "content": f"WRONGTYPE={part}"}], retries=1)
        list(stream)   # raises nothing
    assert stream.reply.text is None and said in stream.reply.error
    assert stream.reply.error.startswith("a streamed chunk that is not the protocol's")


@pytest.mark.parametrize("marker, text, note", [
    ("SURROGATE", "good \ufffd bad", "1 lone surrogate replaced by U+FFFD"),
    ("CTRLALL", "a]0;titlebcd2Je\tf\ng", "5 control characters removed")])
def test_a_reply_holding_a_lone_surrogate_or_control_characters_is_cleaned_and_says_so(marker, text, note):
    with JudgeServer(echo=True) as srv:
        stream = Stream(hostile(srv.url), [{"role": "user", "content": marker}], retries=1)
        shown = list(stream)
    assert "".join(shown) == stream.reply.text == text
    assert stream.reply.finish == f"stop; {note}" and stream.reply.cleaned == note and stream.reply.flag is None
    assert all(CONTROL.search(p) is None and SURROGATE.search(p) is None for p in shown)
    "".join(shown).encode("utf-8")   # what the page draws and the store writes can be written


@pytest.mark.parametrize("marker, said", [("EMPTYCHUNKS", "streamed lines without any text"),
                                          ("COMMENTS", "streamed lines without any text"),
                                          ("DRIP=0.2", "timeout: the answer took more than 1.5 s in all")])
def test_endless_empty_chunks_comments_or_a_slow_drip_end(marker, said):
    with JudgeServer(echo=True) as srv:
        start = time.monotonic()
        stream = Stream(hostile(srv.url, timeout=0.5), [{"role": "user", "content": marker}], retries=3,
                        backoff=0.05)
        list(stream)
        took = time.monotonic() - start
    assert stream.reply.text is None and said in stream.reply.error
    assert stream.reply.attempts == 1   # not asked again: it would take as long again
    assert took < 1.5 + 0.5 + 1.0       # the deadline, at most one idle wait past it, and slack for a busy machine


def test_a_consumer_that_stops_leaves_no_reader():
    with JudgeServer(echo=True) as srv:
        pieces = iter(Stream(hostile(srv.url, timeout=5, max_bytes=10**6), [{"role": "user", "content": "ENDLESS"}]))
        assert next(pieces) and next(pieces)
        pieces.close()   # the tab closed: the script stops iterating
        for _ in range(100):   # the server's next writes fail once the connection is gone
            if srv.hung_up:
                break
            time.sleep(0.05)
        assert srv.hung_up == 1


@pytest.mark.parametrize("marker, leak", [("FAIL401", False), ("NOMODEL", True)])
def test_an_error_body_that_echoes_the_key_or_names_the_model(monkeypatch, marker, leak):
    monkeypatch.setenv("CANARY_KEY", KEY)
    with JudgeServer(echo=True, leak=leak) as srv:
        stream = Stream(hostile(srv.url), [{"role": "user", "content": marker}], retries=1)
        list(stream)
        sent = srv.headers[-1]["Authorization"]
    assert sent == f"Bearer {KEY}"   # the server did get the key, and echoed it
    assert KEY not in stream.reply.error and "[removed]" in stream.reply.error
    # the reason keeps what the owner needs (the model the server did not know); the person is told neither
    assert ("secret-qwen2.5-72b-instruct" in stream.reply.error) == (marker == "NOMODEL")
    sentence = plain(stream.reply.error)
    assert KEY not in sentence and "secret" not in sentence and "qwen" not in sentence
