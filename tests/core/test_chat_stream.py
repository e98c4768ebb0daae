"""core.chat.Stream, what the Chat page shows a reply through: the text piece by piece as the server streams it and
then the whole reply with its finish; a server that fails before the first piece is retried (429 with Retry-After);
one that never stops is cut at the endpoint's token limit; a refusal or an unreachable server is a reply with its
reason, never an exception out of the iteration."""
from __future__ import annotations

import time

from evalcore.core.chat import Endpoint, Stream
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
