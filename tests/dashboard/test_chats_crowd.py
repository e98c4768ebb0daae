"""A chat task's crowd study on the Chat tasks page (issue 65), as test_tasks_crowd.py shows a rating task's on the
Rating tasks page (both drawn by pages/kit/crowd_admin.py): its settings, pass rule and link (to the Chat page), its
workers with their conversations and instruction checks and why one was excluded; the platform identifiers and the
codes only with write access (without it they are in no element the page sends); excluding and putting back a worker
from the page (their conversations' ratings leave human_ratings and come back, logged); opening an open chat task
to a platform with the page's form; and the whole part in Chinese."""
from __future__ import annotations

import shutil
from datetime import datetime, timedelta

import pytest

from evalcore.services import chats as chat_service
from evalcore.services import crowd, jobs
from evalcore.store import chats as chat_store
from evalcore.store import connect
from evalcore.store import crowd as crowd_store
from evalcore.store import endpoints as registry
from support import copy_default_store
from support.apptest import run
from support.i18n import english_left, page_texts
from test_tasks_crowd import READ_ONLY, SETUP_BUTTONS, WRITE, messages, sent

UNITS, GOLD, WORKERS, CARELESS = 2, 1, 3, 2


def pid(n: int) -> str:
    return f"5f{n:022x}"   # Prolific's ids are 24 hex digits


def _chat(con) -> int:
    for name in ("secret-alpha", "secret-beta"):   # never reached: the replies are stored as an endpoint's would be
        registry.add(con, registry.Registered(name, "http://127.0.0.1:9/v1", "m", api_key_env=None), replace=True)
    return chat_service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge",
                                    endpoints=["secret-alpha", "secret-beta"], n_scenarios=4, max_rounds=2,
                                    review=True, lang="en")


@pytest.fixture(scope="module")
def built(tmp_path_factory, default_store_file):
    """A store with a chat task opened for Prolific: three workers held their two conversations each (accepted by
    the reviewer), the last one did not follow the instruction in their scenario and was excluded by the pass rule;
    and another open chat task that is not a crowd study. (path, study's task, other task, {n: pseudonym})."""
    db = copy_default_store(default_store_file, tmp_path_factory.mktemp("chat-crowd") / "s.duckdb")
    con = connect(db)
    task_id = _chat(con)
    study = crowd.open_study(con, task_id, kind="chat", platform="prolific", completion_code="CHAT42",
                             failed_code="CFAIL42", units=UNITS, gold=GOLD, pay=2.0, currency="GBP",
                             pass_rule={"gold_min": 1.0})
    crowd.add_instruction(con, task_id, "In your first message, mention the word giraffe.", "giraffe")
    task = chat_store.get(con, task_id)
    names, queued = {}, set()
    now = datetime(2026, 11, 28, 12, 0)
    for n in range(WORKERS):
        worker = crowd.enter(con, study, crowd.Ids(pid(n), "s1", f"sess{n}"), client=f"10.0.0.{n}|Firefox", now=now)
        while (cid := crowd.next_conversation(con, study, task, worker.annotator, now=now)) is not None:
            told = crowd.instruction(con, study, task, worker.annotator, cid)
            text = "你好" + ("，giraffe" if told and n != CARELESS else "")
            idx = chat_store.say(con, cid, worker.annotator, text, now=now + timedelta(seconds=20))
            chat_store.reply(con, cid, idx, "好的。", now=now + timedelta(seconds=22))
            chat_store.end(con, cid, worker.annotator, goal=True, now=now + timedelta(seconds=60))
            for d in task.dimensions:
                chat_store.rate(con, cid, worker.annotator, d.dimension, d.max, now=now + timedelta(seconds=70))
            queued.add(chat_service.review(con, cid, "lab", accept=True)[1])
            now += timedelta(minutes=2)
        crowd.finish(con, study, worker.worker)
        names[n] = worker.annotator
    for job in queued - {None}:   # the accepted conversations scored here: no page starts a job holding the store
        jobs.run(con, job)
    other = _chat(con)
    con.close()
    return db, task_id, other, names


@pytest.fixture()
def study(built, tmp_path):
    db, task_id, other, names = built
    mine = tmp_path / "s.duckdb"
    shutil.copyfile(db, mine)
    return mine, task_id, other, names


def workers_table(at):
    return next(d.value for d in at.dataframe if "other_identity" in d.value.columns)


def rated(db, task_id: int, annotator: str) -> int:
    """The worker's dialogue ratings every analysis reads (human_ratings, origin chat:TASK)."""
    con = connect(db)
    task = chat_store.get(con, task_id)
    n = con.execute("SELECT count(*) FROM human_ratings WHERE origin = ? AND annotator = ?",
                    [task.origin, annotator]).fetchall()[0][0]
    con.close()
    return n


def test_the_chat_study_its_workers_and_why_one_was_excluded(monkeypatch, study):
    db, task_id, __, names = study
    at = run("chats", monkeypatch, {"EVALCORE_DB": db, **WRITE}, task=str(task_id))
    assert "Crowd study" in [s.value for s in at.subheader]
    texts = [t.value for t in at.text]
    assert "3 workers entered: 3 finished, 2 passed, 1 failed the pass rule; 1 excluded now." in texts
    assert "Completion code: CHAT42" in texts and "Code for a worker who failed the checks: CFAIL42" in texts
    assert "A worker who passes is sent back to https://app.prolific.com/submissions/complete?cc=CHAT42" in texts
    assert any("each worker holds 2 conversations, 1 of them with an instruction check" in t for t in texts)
    rule = next(t for t in texts if t.startswith("- "))
    assert "instructions given inside a scenario" in rule and "faster than the text" not in rule
    assert at.code[0].value == (f"http://localhost:8501/chat?task={task_id}&PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
                                "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    table = workers_table(at).set_index("annotator")
    assert set(table.index) == set(names.values())
    assert table["conversations"].tolist() == [UNITS] * WORKERS and table["checks"].tolist() == [GOLD] * WORKERS
    careless = table.loc[names[CARELESS]]
    assert careless["outcome"] == "failed" and bool(careless["excluded"]) and "instructions" in careless["reason"]
    assert careless["checks_passed"] == 0 and table.loc[names[0], "hourly_pay"] > 0
    assert not table.drop(index=names[CARELESS])["excluded"].any()
    assert "platform_id" not in table.columns and pid(0).encode() not in sent(at)
    at.toggle(key=f"ct-crowd-ids-{task_id}").set_value(True).run()
    assert workers_table(at).set_index("annotator").loc[names[0], "platform_id"] == pid(0)
    assert all(pid(n).encode() in sent(at) for n in range(WORKERS))   # the search below finds them where they are


def test_without_write_access_no_identifier_and_no_code_is_sent(monkeypatch, study):
    db, task_id, __, names = study
    at = run("chats", monkeypatch, {"EVALCORE_DB": db, **READ_ONLY}, task=str(task_id))
    assert "Crowd study" in [s.value for s in at.subheader]
    assert set(workers_table(at)["annotator"]) == set(names.values())   # the pseudonyms and quality: for everyone
    everything = sent(at)
    for secret in [*(pid(n) for n in range(WORKERS)), "CHAT42", "CFAIL42"]:
        assert secret.encode() not in everything, secret
    assert not [t for t in at.toggle if t.key.startswith("ct-crowd")]
    assert not [b for b in at.button if b.label in ("Exclude", "Put back")]
    # the study's set-up (its instruction checks, its questions with their right answers) and its forms: not drawn
    assert "Instruction checks and questions" not in [e.label for e in at.expander]
    assert not [b for b in at.button if b.label in SETUP_BUTTONS] and b"giraffe" not in everything


def test_adding_an_instruction_check_and_a_question_from_the_page(monkeypatch, study):
    db, task_id, __, ___ = study
    at = run("chats", monkeypatch, {"EVALCORE_DB": db, **WRITE}, task=str(task_id))
    assert "Instruction checks and questions" in [e.label for e in at.expander]
    assert "Add gold units" not in [b.label for b in at.button]   # a chat study's gold checks are instructions
    assert ("Instruction 1: In your first message, mention the word giraffe.\n  Expected word: giraffe"
            in [t.value for t in at.text])
    at.text_area(key=f"ct-crowd-instruction-{task_id}").input("In your last message, mention the word otter.")
    next(b for b in at.button if b.label == "Add the instruction check").click().run()   # no word: refused
    assert messages(at.error) == ["An instruction check needs its text and the word a message must contain."]
    con = connect(db)
    assert len(crowd_store.instructions(con, task_id)) == 1
    con.close()
    at.text_input(key=f"ct-crowd-expect-{task_id}").input("otter")
    next(b for b in at.button if b.label == "Add the instruction check").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert messages(at.success) == ["Instruction check 2 added."]
    con = connect(db)
    assert crowd_store.instructions(con, task_id)[1] == (2, "In your last message, mention the word otter.", "otter")
    con.close()
    assert "Instruction 2: In your last message, mention the word otter.\n  Expected word: otter" in \
        next(t.value for t in at.text if t.value.startswith("Instruction 1:"))
    # a comprehension question, of the chat study (not of a rating task of the same number)
    at.text_input(key=f"ct-crowd-question-{task_id}").input("What do you do first?")
    at.text_area(key=f"ct-crowd-options-{task_id}").input("greet\nrate\nleave")
    at.number_input(key=f"ct-crowd-answer-{task_id}").set_value(4)   # not one of the three: refused
    next(b for b in at.button if b.label == "Add the question").click().run()
    assert messages(at.error) == ["The right answer is one of the options, 1 to 3."]
    at.number_input(key=f"ct-crowd-answer-{task_id}").set_value(1)
    next(b for b in at.button if b.label == "Add the question").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert messages(at.success) == ["Comprehension question 1 added."]
    con = connect(db)
    assert crowd.questions(con, task_id, "chat") == [(1, "What do you do first?", ["greet", "rate", "leave"])]
    assert crowd.questions(con, task_id) == []
    con.close()
    assert any(t.value.endswith("  Right answer: 1. greet") for t in at.text)


def test_excluding_and_putting_back_a_chat_worker_from_the_page(monkeypatch, study):
    db, task_id, __, names = study
    before = rated(db, task_id, names[0])
    assert before > 0
    at = run("chats", monkeypatch, {"EVALCORE_DB": db, **WRITE}, task=str(task_id))
    at.selectbox(key=f"ct-crowd-who-{task_id}").set_value(names[0])   # a worker who passed: their button excludes
    at.text_input(key=f"ct-crowd-why-{task_id}").input("replies pasted from elsewhere")
    next(b for b in at.button if b.label == "Exclude").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [s.value for s in at.success][-1].replace("\\", "").startswith(
        f"{names[0]} excluded: the ratings of their conversations left")
    con = connect(db)
    assert crowd_store.excluded(con, task_id, "chat") == {names[0], names[CARELESS]}
    con.close()
    assert rated(db, task_id, names[0]) == 0
    assert bool(workers_table(at).set_index("annotator").loc[names[0], "excluded"])
    log = next(d.value for d in at.dataframe if "decided_by" in d.value.columns)
    assert list(log["decided_by"]) == ["pass rule", "dashboard"]
    assert list(log["reason"])[-1] == "replies pasted from elsewhere"
    # put back: their ratings count again, the decision logged
    at.selectbox(key=f"ct-crowd-who-{task_id}").set_value(names[0]).run()
    at.text_input(key=f"ct-crowd-why-{task_id}").input("checked by hand")
    next(b for b in at.button if b.label == "Put back").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [s.value for s in at.success][-1].replace("\\", "").startswith(f"{names[0]} put back")
    assert rated(db, task_id, names[0]) == before
    con = connect(db)
    decisions = crowd_store.decisions(con, task_id, "chat")
    assert crowd_store.excluded(con, task_id, "chat") == {names[CARELESS]}
    con.close()
    assert list(decisions["excluded"]) == [True, True, False] and list(decisions["reason"])[-1] == "checked by hand"


def test_opening_an_open_chat_task_to_a_platform(monkeypatch, study):
    db, __, other, ___ = study
    at = run("chats", monkeypatch, {"EVALCORE_DB": db, **WRITE}, task=str(other))
    assert "Crowd study" not in [s.value for s in at.subheader]
    assert "Conversations per worker" in [n.label for n in at.number_input]
    at.text_input(key="ct-crowd-code").input("OK 1")   # not a code a platform takes: refused, said
    next(b for b in at.button if b.label == "Open to the platform").click().run()
    assert any("completion code" in e.value for e in at.error)
    at.selectbox(key="ct-crowd-platform").set_value("mturk")
    at.text_input(key="ct-crowd-code").input("OK1")
    at.number_input(key="ct-crowd-units").set_value(3)
    at.number_input(key="ct-crowd-gold").set_value(1)
    next(b for b in at.button if b.label == "Open to the platform").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    con = connect(db)
    opened = crowd.study_of(con, other, "chat")
    rating = crowd.study_of(con, other)   # a rating task of the same number is not opened
    con.close()
    assert (opened.platform, opened.completion_code, opened.units, opened.gold) == ("mturk", "OK1", 3, 1)
    assert opened.pass_rule["gold_min"] == 0.75 and rating is None
    assert "Crowd study" in [s.value for s in at.subheader]
    assert at.code[0].value == f"http://localhost:8501/chat?task={other}"
    assert [s.value for s in at.success][-1].startswith(f"Chat task {other} is open to Amazon Mechanical Turk")
    # without write access: no form
    reader = run("chats", monkeypatch, {"EVALCORE_DB": db, **READ_ONLY}, task=str(other))
    assert "Open to the platform" not in [b.label for b in reader.button]


def test_the_chat_crowd_part_in_chinese(monkeypatch, study):
    db, task_id, other, names = study
    zh = run("chats", monkeypatch, {"EVALCORE_DB": db, **WRITE}, lang="zh-CN", task=str(task_id))
    assert english_left([*page_texts(zh), *(t.value for t in zh.text)]) == []
    assert "众包研究" in [s.value for s in zh.subheader]
    assert "3 位众包工作者进入：3 位完成，2 位通过，1 位未通过通过规则；目前排除 1 位。" in [t.value for t in zh.text]
    assert any("每位众包工作者进行 2 段对话，其中 1 段带有指令检查" in t.value for t in zh.text)
    assert "- 场景中给出的指令至少遵循了 100%。" in next(t.value for t in zh.text if t.value.startswith("- "))
    assert set(workers_table(zh)["outcome"]) == {"通过", "失败"}
    assert "指令检查与理解测试题" in [e.label for e in zh.expander]
    assert "指令 1：In your first message, mention the word giraffe.\n  预期词语：giraffe" in [t.value for t in zh.text]
    assert zh.code[0].value.startswith(f"http://localhost:8501/chat?task={task_id}&PROLIFIC_PID=")   # the same link
    form = run("chats", monkeypatch, {"EVALCORE_DB": db, **WRITE}, lang="zh-CN", task=str(other))
    assert "向平台开放" in [b.label for b in form.button]
    assert "每位众包工作者的对话数" in [n.label for n in form.number_input]
    assert english_left([*page_texts(form), *(t.value for t in form.text)]) == []
