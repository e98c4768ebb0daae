"""The refusals a person meets on Annotate and Chat (a taken name, a wrong personal key, an empty message or flag) in
the language of the page that asked (issue 64, item 4): English, word for word as before, wherever no page set a
language (the CLI, jobs); Chinese on a zh-CN page run, with the same name in it."""
from __future__ import annotations

import pytest

from evalcore.core import i18n
from evalcore.store import annotators as people
from evalcore.store import chats
from evalcore.store import connect
from evalcore.store import tasks


@pytest.fixture
def zh():
    with i18n.speaking(i18n.ZH):
        yield


def _refusal(call) -> str:
    with pytest.raises(ValueError) as refused:
        call()
    return str(refused.value)


def test_a_taken_name_and_a_wrong_key_in_english_then_in_chinese(tmp_path):
    con = connect(tmp_path / "s.duckdb")
    try:
        name, key = people.enter(con, "Carol")
        assert key
        english = (_refusal(lambda: people.enter(con, "carol")), _refusal(lambda: people.enter(con, "Carol", "x")))
        assert english == ("The name 'Carol' is taken (names are compared ignoring case and width). If you are Carol, "
                           "give your personal key; if not, choose another name. Lost your key? Whoever runs the task "
                           "can issue a new one.",
                           "That is not Carol's personal key. Whoever runs the task can issue a new one.")
        with i18n.speaking(i18n.ZH):
            chinese = (_refusal(lambda: people.enter(con, "carol")), _refusal(lambda: people.enter(con, "Carol", "x")))
        assert chinese[0].startswith("名字 'Carol' 已被使用") and "如果你就是 Carol" in chinese[0]
        assert chinese[1] == "这不是 Carol 的个人密钥。任务负责人可以重新发一个。"
        assert _refusal(lambda: people.enter(con, "carol")) == english[0]   # English again outside the page run
    finally:
        con.close()


def test_an_empty_message_and_flag_in_chinese(zh):
    assert _refusal(lambda: chats.say(None, 1, "ann", "\u200b")) == "空消息不会发送（其中没有可见字符）；没有保存任何内容"
    assert _refusal(lambda: tasks.flag(None, None, 1, "ann", " ")) == "报告问题时请写一句说明，说清哪里有问题。"
    assert _refusal(lambda: people.check_name(" ")) == "标注者需要一个名字。"


def test_a_state_inside_a_refusal_is_english_as_stored_outside_a_page():
    assert tasks.state_shown("sent_back") == "sent back" and tasks.state_shown("sent_back", spaced=False) == "sent_back"
    with i18n.speaking(i18n.ZH):
        assert tasks.state_shown("sent_back") == "已退回" and tasks.state_shown("closed") == "已关闭"
