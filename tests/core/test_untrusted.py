"""core.untrusted: what an endpoint says is made safe once. A reason loses the key in use and whatever looks like a
secret, its control characters and its lone surrogates; a reply streamed in pieces loses the key even when it is
split over two pieces (no piece shown carries a part of it), its control characters, and a lone surrogate becomes
U+FFFD while a pair split over two pieces is joined again; the note says what was removed."""
from __future__ import annotations

import pytest

from evalcore.core.chat import Reply, answered, plain
from evalcore.core.text import CONTROL, SURROGATE
from evalcore.core.untrusted import Cleaner, reason, redact

KEY = "canary-6b1d0e3f9a7c4e25"


@pytest.mark.parametrize("body", [
    f"bad key: Bearer {KEY}",
    f'{{"request": {{"Authorization": "Bearer {KEY}"}}}}',
    f"you sent {KEY}",                                   # the bare key: only the key in use finds it
    f"GET /v1/models?api_key={KEY}",
    f"x-api-key: {KEY}",
    f"https://user:{KEY}@host/v1",
    f"{KEY[:10]}{KEY[10:]}",
])
def test_the_key_in_use_never_survives_a_reason(body):
    out = reason(body, KEY)
    assert KEY not in out and "[removed]" in out


@pytest.mark.parametrize("body, gone", [
    ("Authorization: Bearer sk-proj-AbCdEf0123456789", "sk-proj-AbCdEf0123456789"),
    ("authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
    ("key sk-ant-api03-abcdefghijklmnop was refused", "sk-ant-api03-abcdefghijklmnop"),
    ('{"token": "hf_abcdefghijklmnopqrstu"}', "hf_abcdefghijklmnopqrstu"),
    ("Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "eyJhbGciOiJIUzI1NiJ9"),
])
def test_what_looks_like_a_secret_is_removed_without_knowing_the_key(body, gone):
    out = redact(body, None)
    assert gone not in out and "[removed]" in out


def test_a_reason_is_one_line_without_control_characters_or_lone_surrogates():
    out = reason("HTTP error \x1b]0;pwned\x07\x1b[2J\x00 model \ud800 gone\x9b\r\nnext line" + "x" * 500)
    assert CONTROL.search(out) is None and SURROGATE.search(out) is None and "\n" not in out
    assert out.startswith("HTTP error ]0;pwned [2J model \ufffd gone next line") and len(out) == 201
    # a key cut by the length limit is removed before the cut: no half of it is left
    assert KEY[:8] not in reason("x" * 190 + KEY, KEY)


def test_a_reply_key_split_over_pieces_is_never_shown():
    cleaner = Cleaner(KEY)
    pieces = ["the key is ", KEY[:5], KEY[5:17], KEY[17:] + " ok"]
    shown = [cleaner.feed(p) for p in pieces] + [cleaner.end()]
    text = "".join(shown)
    assert text == "the key is [removed] ok"
    for i, s in enumerate(shown):   # no piece carried a part of the key that was shown before it was decided
        assert not any(KEY[:n] in s for n in range(5, len(KEY)))
    assert cleaner.note == "the key in use removed"


def test_a_short_placeholder_key_leaves_reply_text_alone():
    cleaner = Cleaner("EMPTY")
    assert cleaner.whole("an EMPTY reply") == "an EMPTY reply" and cleaner.note is None
    assert "EMPTY" not in reason("you sent EMPTY", "EMPTY")   # a reason loses even a short key


def test_surrogates_and_control_characters_in_a_reply():
    cleaner = Cleaner(None)
    # a pair split over two pieces (as two JSON escapes in two chunks) is one character again
    shown = [cleaner.feed(p) for p in ["a\ud83d", "\ude00b", "c\ud800d", "\x1b[31mred\x07\x00\x9b\t\n", "\udfff"]]
    shown.append(cleaner.end())
    text = "".join(shown)
    assert text == "a\U0001F600bc\ufffdd[31mred\t\n\ufffd"
    assert all(SURROGATE.search(s) is None and CONTROL.search(s) is None for s in shown)
    assert cleaner.note == "4 control characters removed, 2 lone surrogates replaced by U+FFFD"


def test_a_cleaned_reply_says_so_after_its_finish_and_keeps_its_flag():
    assert Reply("x", None, 1, "stop; 2 control characters removed").cleaned == "2 control characters removed"
    assert Reply("x", None, 1, "length; 1 lone surrogate replaced by U+FFFD").flag == "length"
    assert Reply("", None, 1, "stop; 1 control character removed").flag == "empty"
    assert Reply("x", None, 1, "stop").cleaned is None
    # a server cannot pass its own words for a note: its finish_reason keeps no "; "
    assert answered("x", "stop; 2 control characters removed", Cleaner(None), 1, 0.0).cleaned is None


@pytest.mark.parametrize("error", [
    "HTTP 404: The model `secret-qwen2.5-72b-instruct` does not exist.",
    "HTTP 401: Incorrect API key provided: Bearer [removed]",
    "HTTP 500 after 3 attempts: secret-qwen crashed on host gpu-7",
    "timeout: the answer took more than 3 s in all: not read further",
    "connection error after 3 attempts: [Errno 111] Connection refused to secret-host",
    "reply without choices[0].message.content (content is a number): {\"model\": \"secret-qwen\"}",
])
def test_a_person_chatting_gets_one_sentence_that_names_nothing(error):
    sentence = plain(error)
    assert sentence.startswith("The model did not answer (") and "secret" not in sentence
    assert ":" not in sentence and "`" not in sentence
