"""A chat task's crowd study on the Chat page in AppTest (issue 65), against the local endpoint the chat page tests
use: a Prolific link opens the study with nothing to type; the comprehension question failed once, then passed; two
conversations one after another ("Conversation i of 2"), the instruction check a line of one of their scenarios,
followed in the first message; the end with the completion code and the way back to Prolific. A worker who does not
follow it ends with the other code, not told why; a second identifier in one session is refused; the identifier and
the pseudonym are never shown; in zh-CN no English message is left."""
from __future__ import annotations

import pytest

from evalcore.services import chats as chat_service
from evalcore.services import crowd
from evalcore.store import chats as chat_store
from evalcore.store import connect
from evalcore.store import crowd as crowd_store
from evalcore.store import endpoints as registry
from support import copy_default_store
from support.apptest import run
from support.i18n import english_left, page_texts
from support.judge_server import JudgeServer

UNITS, GOLD = 2, 1
PID, OTHER = "5f0c1a2b3c4d5e6f7a8b9c0d", "60aa11bb22cc33dd44ee55ff"
INSTRUCTION = {"en": "In your first message, mention the word giraffe.", "zh-CN": "请在第一条消息里提到“长颈鹿”这个词。"}
WORD = {"en": "giraffe", "zh-CN": "长颈鹿"}


def _study(tmp_path, default_store_file, url: str, lang: str = "en") -> tuple[str, int]:
    """(store, chat task): two endpoints on the local server, opened for Prolific, two conversations a worker, one
    with the instruction check, one comprehension question (its answer: the second option)."""
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    con = connect(db)
    for name in ("secret-alpha", "secret-beta"):
        registry.add(con, registry.Registered(name, url, "m", api_key_env=None))
    task_id = chat_service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge",
                                       endpoints=["secret-alpha", "secret-beta"], n_scenarios=3, max_rounds=2,
                                       review=True, lang=lang)
    crowd.open_study(con, task_id, kind="chat", platform="prolific", completion_code="CHAT42",
                     failed_code="CFAIL42", units=UNITS, gold=GOLD, pass_rule={"gold_min": 1.0})
    crowd.add_instruction(con, task_id, INSTRUCTION[lang], WORD[lang])
    crowd_store.add_question(con, task_id, "What do you do?", ["rate replies only", "talk, then rate"], 1,
                             kind="chat")
    con.close()
    return db, task_id


def _open(monkeypatch, db, task_id, pid=PID, lang="en"):
    return run("chat", monkeypatch, {"EVALCORE_DB": db}, lang=lang, task=str(task_id), PROLIFIC_PID=pid,
               STUDY_ID="study1", SESSION_ID=f"session-{pid[:6]}")


def _shown(at) -> str:
    return "\n".join(page_texts(at)) + "\n".join(str(w.value) for w in at.text_input)


def _answer(at, choices, label="Check my answers"):
    for radio, choice in zip(at.radio, choices):
        radio.set_value(choice)
    at.button[[b.label for b in at.button].index(label)].click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _hold(at, task_id, *, follows: bool, lang: str = "en") -> tuple[list[str], list[bool]]:
    """Hold the worker's conversations until the page ends: a message (the instruction followed when it is in the
    scenario and `follows`), the echo, the end, every dimension rated, the next one; (captions, told) per one."""
    captions, told = [], []
    for __ in range(UNITS + 1):
        cid = at.session_state[f"chat-{task_id}-at"] if f"chat-{task_id}-at" in at.session_state else None
        box = [c for c in at.get("chat_input") if c.key == f"chat-{task_id}-say-{cid}"]
        if cid is None or not box:
            break
        captions += [c.value for c in at.caption if c.value.startswith(("Conversation ", "第 "))]
        here = any(INSTRUCTION[lang] in t.value for t in at.text)
        told.append(here)
        box[0].set_value("你好" + (f"，{WORD[lang]}" if here and follows else "")).run()
        assert not at.exception, [e.value for e in at.exception]
        at.button[-1].click().run()   # End the conversation and rate it
        for control in [c for c in at.segmented_control if c.key.startswith(f"chat-{task_id}-rate-")]:
            control.set_value(1.0).run()
        at.button(key=f"chat-{task_id}-next").click().run()
        assert not at.exception, [e.value for e in at.exception]
    return captions, told


def test_a_chat_worker_checks_talks_and_gets_the_completion_code(monkeypatch, tmp_path, default_store_file):
    with JudgeServer(echo=True) as srv:
        db, task_id = _study(tmp_path, default_store_file, srv.url)
        at = _open(monkeypatch, db, task_id)
        assert not at.text_input and [r.label for r in at.radio] == ["What do you do?"]   # no name, no access code
        _answer(at, [0])
        assert any("one more attempt" in w.value for w in at.warning)
        _answer(at, [1])
        captions, told = _hold(at, task_id, follows=True)
    assert captions == [f"Conversation {i} of {UNITS} · round 0 of 2" for i in range(1, UNITS + 1)]
    assert sum(told) == GOLD   # the instruction: a line of one scenario of theirs
    assert [c.value for c in at.code] == ["CHAT42"]
    assert [b.proto.url for b in at.get("link_button")] == ["https://app.prolific.com/submissions/complete?cc=CHAT42"]
    shown = _shown(at)
    assert PID not in shown and "prolific-" not in shown and "secret-" not in shown
    con = connect(db, read_only=True)
    workers = crowd_store.workers(con, "chat", task_id)
    convs = chat_store.conversations(con, task_id)
    con.close()
    assert workers["outcome"].tolist() == ["passed"] and (convs["state"] == "rated").sum() == UNITS
    again = _open(monkeypatch, db, task_id)   # back later by the same link: the same ending
    assert [c.value for c in again.code] == ["CHAT42"] and not again.radio


def test_a_worker_who_does_not_follow_the_instruction_gets_the_other_code(monkeypatch, tmp_path, default_store_file):
    with JudgeServer(echo=True) as srv:
        db, task_id = _study(tmp_path, default_store_file, srv.url)
        at = _answer(_open(monkeypatch, db, task_id), [1])
        __, told = _hold(at, task_id, follows=False)
    assert sum(told) == GOLD and [c.value for c in at.code] == ["CFAIL42"]
    assert "instruction" not in _shown(at) and not at.success   # not said which check failed


def test_a_second_identifier_in_one_session_is_refused(monkeypatch, tmp_path, default_store_file):
    with JudgeServer(echo=True) as srv:
        db, task_id = _study(tmp_path, default_store_file, srv.url)
    at = _open(monkeypatch, db, task_id)
    at.query_params["PROLIFIC_PID"] = OTHER
    at.run()
    assert [e.value for e in at.error] and "another worker" in at.error[0].value and not at.radio
    bare = run("chat", monkeypatch, {"EVALCORE_DB": db}, lang="en", task=str(task_id))
    assert "open it from the study's page" in "\n".join(page_texts(bare)) and not bare.text_input


@pytest.mark.parametrize("lang", ["zh-CN"])
def test_the_chat_worker_path_in_chinese(monkeypatch, tmp_path, default_store_file, lang):
    with JudgeServer(echo=True) as srv:
        db, task_id = _study(tmp_path, default_store_file, srv.url, lang=lang)
        at = _open(monkeypatch, db, task_id, lang=None)
        assert english_left(page_texts(at)) == []
        _answer(at, [1], label="检查我的答案")
        assert english_left(page_texts(at)) == []
        assert any(c.value.startswith(f"第 1 段对话，共 {UNITS} 段") for c in at.caption), [c.value for c in at.caption]
        __, told = _hold(at, task_id, follows=True, lang=lang)
    assert sum(told) == GOLD and [c.value for c in at.code] == ["CHAT42"] and english_left(page_texts(at)) == []


def test_a_closed_chat_study_and_an_mturk_preview_are_refused(monkeypatch, tmp_path, default_store_file):
    with JudgeServer(echo=True) as srv:
        db, task_id = _study(tmp_path, default_store_file, srv.url)
    con = connect(db)
    chat_store.set_state(con, task_id, "closed")
    turk = chat_service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge", endpoints=["secret-alpha"],
                                    n_scenarios=2, max_rounds=2, lang="en")
    crowd.open_study(con, turk, kind="chat", platform="mturk", completion_code="OK1", units=1)
    con.close()
    at = _open(monkeypatch, db, task_id)
    assert ["This study is closed" in e.value for e in at.error] == [True] and not at.radio and not at.selectbox
    at = run("chat", monkeypatch, {"EVALCORE_DB": db}, lang="en", task=str(turk), workerId="A1B2C3",
             assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", hitId="H1")
    assert ["preview" in e.value for e in at.error] == [True] and not at.get("chat_input")
