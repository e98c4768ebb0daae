"""LLM-as-judge core: rubrics, FastChat prompts and parsing rules, and the chat client against a local server."""
from __future__ import annotations

import socket

import pytest

from evalcore.core import chat
from evalcore.metrics.judge import prompts
from evalcore.metrics.judge.client import Endpoint, availability, chat_many
from evalcore.metrics.judge.prompts import (
    geval_messages,
    mtbench_single_messages,
    pairwise_messages,
    pairwise_value,
    parse_rating,
    parse_verdict,
    position_bias,
    template_hash,
)
from support.judge_server import JudgeServer

CONTEXT = ["你好，最近有什么好看的电影吗？", "你喜欢什么类型的？", "我喜欢周星驰的喜剧。"]


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    # a proxy from the environment would swallow requests to the local test server
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


# ---------------------------------------------------------------- rubrics and prompts
@pytest.mark.parametrize("dim", ["Info", "Coh", "Know", "Rec"])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_rubrics_carry_the_papers_scale(dim, lang):
    # MSDE §3.2: 丰富度 (0~2)、连贯性 (0~2)、知识准确率 (0~2)、推荐成功率 (0~2)
    assert prompts.DIMENSION_SCALES[dim] == (0.0, 2.0)
    rubric = prompts.RUBRICS[lang][dim]
    assert len(rubric["levels"]) == 3 and len(rubric["steps"]) >= 3
    msgs = geval_messages(dim, lang, CONTEXT, "推荐你看《功夫》。", ["参考回复"], {"goal": ["电影", "功夫"]})
    assert [m["role"] for m in msgs] == ["system", "user"]
    user = msgs[1]["content"]
    assert "Rating: [[" in user and "1. " in user and "3. " in user
    assert ("0-2" in user) and ("0 到 2" in user if lang == "zh" else "from 0 to 2" in user)


def test_rubric_names_follow_the_paper():
    zh = {d: prompts.RUBRICS["zh"][d]["name"] for d in prompts.DIMENSIONS}
    assert zh["Info"].startswith("丰富度") and zh["Coh"].startswith("连贯性")
    assert zh["Know"].startswith("知识准确性") and zh["Rec"].startswith("推荐成功率")
    assert "knowledge fidelity" in zh["Know"] and "recommendation accuracy" in zh["Rec"]


def test_geval_layout():
    msgs = geval_messages("Coh", "en-US", ["hi", "hello, how can I help?", "any film tips?"], "Try Kung Fu Hustle.",
                          [], {"knowledge": [["功夫", "导演", "周星驰"]]})
    user = msgs[1]["content"]
    # three turns, oldest first, the last one the user's: User, Bot, User
    assert "User: hi\nBot: hello, how can I help?\nUser: any film tips?" in user
    assert '"knowledge"' in user and "周星驰" in user  # grounding as JSON, Chinese kept readable
    assert "for reference only" not in user  # no references given
    zh = geval_messages("Info", "zh", ["在吗", "在的"], "好的", ["参考"], None)[1]["content"]
    assert "机器人：在吗\n用户：在的" in zh and "仅供参考" in zh and "对话附加信息（系统" not in zh
    with pytest.raises(ValueError):
        geval_messages("Fluency", "en", [], "x", [], None)


def test_mtbench_single_is_fastchat_single_v1():
    msgs = mtbench_single_messages(["What is 2+2?"], "4", "en")
    assert msgs[0]["content"] == "You are a helpful assistant."
    assert msgs[1]["content"].startswith("[Instruction]\nPlease act as an impartial judge")
    assert msgs[1]["content"].endswith("[Question]\nWhat is 2+2?\n\n[The Start of Assistant's Answer]\n4\n"
                                       "[The End of Assistant's Answer]")
    multi = mtbench_single_messages(["q1", "a1", "q2"], "a2", "en")
    assert "last user question" in multi[0]["content"]
    assert multi[1]["content"] == ("<|The Start of Assistant A's Conversation with User|>\n\n### User:\nq1\n\n"
                                   "### Assistant A:\na1\n\n### User:\nq2\n\n### Assistant A:\na2\n\n"
                                   "<|The End of Assistant A's Conversation with User|>")


def test_pairwise_is_fastchat_pair_v2():
    msgs = pairwise_messages(["Q"], "one", "two", "en")
    assert msgs[0]["content"].endswith('"[[A]]" if assistant A is better, "[[B]]" if assistant B is better, '
                                       'and "[[C]]" for a tie.')
    assert msgs[1]["content"] == ("[User Question]\nQ\n\n[The Start of Assistant A's Answer]\none\n"
                                  "[The End of Assistant A's Answer]\n\n[The Start of Assistant B's Answer]\ntwo\n"
                                  "[The End of Assistant B's Answer]")
    zh = pairwise_messages(CONTEXT, "甲", "乙", "zh")
    assert "[[C]]" in zh[0]["content"] and "### Assistant B:\n乙" in zh[1]["content"]


def test_template_hash_follows_the_template(monkeypatch):
    h = template_hash("geval", "Info", "zh")
    assert len(h) == 10 and int(h, 16) >= 0
    assert h == template_hash("geval", "Info", "zh-CN")  # same text, same hash
    assert h != template_hash("geval", "Coh", "zh") != template_hash("geval", "Info", "en")
    single = template_hash("mtbench-single", None, "en")
    assert single != template_hash("pairwise", None, "en")
    monkeypatch.setitem(prompts.RUBRICS["zh"]["Info"], "definition", "改过的定义")
    assert template_hash("geval", "Info", "zh") != h
    monkeypatch.setitem(prompts.MTBENCH["en"], "single", prompts.MTBENCH["en"]["single"] + " ")
    assert template_hash("mtbench-single", None, "en") != single
    with pytest.raises(ValueError):
        template_hash("likert", None, "en")


# ---------------------------------------------------------------- parsing rules
def test_parse_rating():
    assert prompts.RATING_RULE == "fastchat-[[n]]"
    assert parse_rating("The answer is accurate and detailed.\n\nRating: [[8]]", 1, 10) == (8.0, None)
    assert parse_rating("Rating: [[7.5]]", 1, 10) == (7.5, None)
    assert parse_rating("Rating: [6]", 1, 10) == (6.0, None)  # FastChat's single-bracket fallback
    assert parse_rating("see [2] ... Rating: [[9]]", 1, 10) == (9.0, None)  # [[n]] wins over an earlier [n]
    assert parse_rating("Rating: [[11]]", 1, 10) == (None, "rating 11 outside 1-10")
    assert parse_rating("Rating: [[3]]", 0, 2) == (None, "rating 3 outside 0-2")
    assert parse_rating("Rating: [[0]]", 0, 2) == (0.0, None)
    assert parse_rating("I think it is good.", 1, 10) == (None, "no [[rating]] in the answer: 'I think it is good.'")
    value, reason = parse_rating("x" * 200, 1, 10)
    assert value is None and reason == "no [[rating]] in the answer: '" + "x" * 80 + "'"
    assert parse_rating(None, 1, 10)[0] is None


def test_parse_verdict():
    assert parse_verdict("A is more helpful. [[A]]") == ("A", None)
    assert parse_verdict("[[B]]") == ("B", None)
    assert parse_verdict("Equally good: [[C]]") == ("tie", None)
    assert parse_verdict("[[A]] or [[B]]") == (None, "ambiguous verdict: [[A]] and [[B]] both in the answer")
    value, reason = parse_verdict("A is better")
    assert value is None and reason.startswith("no [[A]]/[[B]]/[[C]] verdict")


def test_pairwise_value_arithmetic():
    # order 1: the test answer is A; order 2: it is B. Win 1, tie 0.5, loss 0; value = mean of both.
    assert pairwise_value("A", "B") == ((1 + 1) / 2, None)
    assert pairwise_value("A", "tie") == ((1 + 0.5) / 2, None)
    assert pairwise_value("A", "A") == ((1 + 0) / 2, None)  # first position won both times
    assert pairwise_value("tie", "tie") == ((0.5 + 0.5) / 2, None)
    assert pairwise_value("B", "A") == ((0 + 0) / 2, None)
    assert pairwise_value(None, "B")[0] is None and "first order" in pairwise_value(None, "B")[1]
    assert pairwise_value("A", None)[0] is None and "swapped order" in pairwise_value("A", None)[1]


def test_position_bias_arithmetic():
    pairs = [("A", "B"),    # consistent win; one A of 2
             ("A", "A"),    # inconsistent (win, loss); two A
             ("B", "A"),    # consistent loss; one A
             ("tie", "A"),  # inconsistent (tie, loss); one A
             ("tie", "tie"),  # consistent; no A
             (None, "A")]   # skipped
    got = position_bias(pairs)
    assert got["pairs"] == 5 and got["skipped"] == 1
    assert got["inconsistent"] == pytest.approx(2 / 5)
    assert got["first_position"] == pytest.approx((1 + 2 + 1 + 1 + 0) / 10)
    assert position_bias([]) == {"pairs": 0, "skipped": 0, "inconsistent": None, "first_position": None}


# ---------------------------------------------------------------- client
def test_endpoint_signature_and_availability():
    ep = Endpoint("http://127.0.0.1:8000/v1", "qwen2.5-7b", api_key_env="SECRET_ENV")
    assert ep.signature_part() == "judge:qwen2.5-7b@127.0.0.1:8000|t:0.0|max:512"
    assert Endpoint("https://api.openai.com/v1/", "gpt-4o", temperature=0.2, max_tokens=64).signature_part() == \
        "judge:gpt-4o@api.openai.com|t:0.2|max:64"
    assert "--judge-base-url" in availability(None) and "vLLM" in availability(None)
    assert availability(ep) is None
    assert availability(Endpoint("127.0.0.1:8000", "m")) is not None
    assert availability(Endpoint("http://h/v1", " ")) is not None


def test_chat_many_order_and_concurrency_bound():
    convs = [[{"role": "user", "content": f"item {i} SCORE={i % 10 + 1}"}] for i in range(20)]
    progress = []
    with JudgeServer(delay=0.05) as srv:
        ep = Endpoint(srv.url, "judge-m", temperature=0.0, max_tokens=77)
        replies = chat_many(ep, convs, concurrency=4, on_done=lambda d, t: progress.append((d, t)))
        assert srv.requests == 20
        assert 1 < srv.max_in_flight <= 4
        body = srv.bodies[0]
    assert [parse_rating(r.text, 1, 10)[0] for r in replies] == [float(i % 10 + 1) for i in range(20)]
    assert all(r.error is None and r.attempts == 1 for r in replies)
    assert progress[-1] == (20, 20) and len(progress) == 20
    assert body["model"] == "judge-m" and body["temperature"] == 0.0 and body["max_tokens"] == 77
    assert body["messages"][0]["content"].startswith("item ")


def test_chat_many_retries_and_failures():
    convs = [[{"role": "user", "content": "FLAKY one"}], [{"role": "user", "content": "FAIL500"}],
             [{"role": "user", "content": "FAIL400"}], [{"role": "user", "content": "NOCONTENT"}],
             [{"role": "user", "content": "MALFORMED"}]]
    with JudgeServer() as srv:
        flaky, fail, bad, empty, malformed = chat_many(Endpoint(srv.url, "m"), convs, retries=3, backoff=0.01)
        # requests: FLAKY 2 + FAIL500 3 + FAIL400 1 + NOCONTENT 1 + MALFORMED 1
        assert srv.requests == 2 + 3 + 1 + 1 + 1
    assert (flaky.attempts, flaky.error) == (2, None) and parse_rating(flaky.text, 1, 10) == (3.0, None)
    assert fail.text is None and fail.attempts == 3 and fail.error.startswith("HTTP 500 after 3 attempts: ")
    assert bad.attempts == 1 and bad.error.startswith("HTTP 400")  # other 4xx: not retried
    assert empty.attempts == 1 and "choices[0].message.content" in empty.error
    assert malformed.error is None and parse_rating(malformed.text, 1, 10)[0] is None


def test_unreachable_port_is_a_reason_not_an_exception():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    [reply] = chat_many(Endpoint(f"http://127.0.0.1:{port}/v1", "m", timeout=2), [[{"role": "user", "content": "x"}]],
                        retries=2, backoff=0.01)
    assert reply.text is None and reply.attempts == 2
    assert reply.error.startswith("connection error after 2 attempts: ")


def test_authorization_header_only_when_the_key_is_set(monkeypatch):
    conv = [[{"role": "user", "content": "hello"}]]
    monkeypatch.delenv("EVALCORE_JUDGE_API_KEY", raising=False)
    with JudgeServer() as srv:
        chat_many(Endpoint(srv.url, "m"), conv)
        monkeypatch.setenv("EVALCORE_JUDGE_API_KEY", "sk-test-123")
        chat_many(Endpoint(srv.url, "m"), conv)
        headers = [{k.lower(): v for k, v in h.items()} for h in srv.headers]
    assert "authorization" not in headers[0]
    assert headers[1]["authorization"] == "Bearer sk-test-123"
    assert "sk-test-123" not in Endpoint("http://h/v1", "m").signature_part()


def test_position_bias_end_to_end_against_the_server():
    # the server says [[A]] unless assistant B's answer holds WIN: a judge that always picks position A,
    # except that the "WIN" answer wins wherever it stands
    tests = ["plain answer", "good answer WIN"]
    other = "the baseline answer"
    convs = []
    for answer in tests:
        convs.append(pairwise_messages(CONTEXT, answer, other, "zh"))  # test answer as A
        convs.append(pairwise_messages(CONTEXT, other, answer, "zh"))  # test answer as B
    with JudgeServer() as srv:
        replies = chat_many(Endpoint(srv.url, "m"), convs, concurrency=2)
    verdicts = [parse_verdict(r.text)[0] for r in replies]
    pairs = [(verdicts[0], verdicts[1]), (verdicts[2], verdicts[3])]
    assert pairs == [("A", "A"), ("A", "B")]
    assert [pairwise_value(*p)[0] for p in pairs] == [(1 + 0) / 2, (1 + 1) / 2]
    bias = position_bias(pairs)
    assert bias["inconsistent"] == 1 / 2 and bias["first_position"] == 3 / 4


def test_backoff_grows_exponentially(monkeypatch):
    waits = []
    monkeypatch.setattr(chat.time, "sleep", waits.append)
    monkeypatch.setattr(chat.random, "uniform", lambda a, b: 0.0)
    with JudgeServer() as srv:
        [reply] = chat_many(Endpoint(srv.url, "m"), [[{"role": "user", "content": "FAIL500"}]], retries=4,
                            backoff=0.5)
    assert reply.attempts == 4
    assert waits == [0.5 * 2 ** 0, 0.5 * 2 ** 1, 0.5 * 2 ** 2]  # no wait after the last attempt
