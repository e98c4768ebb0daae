"""A crowd study on the Rating tasks page (issue 65): its settings, pass rule and link, its workers with their
quality and why one was excluded; the platform identifiers and the codes only with write access (without it they
are in no element the page sends, not hidden either), excluding and putting back a worker from the page (logged),
opening an open task to a platform with the page's form, and the whole part in Chinese."""
from __future__ import annotations

import shutil
from datetime import datetime, timedelta

import pytest

from evalcore.services import crowd
from evalcore.services import tasks as service
from evalcore.store import connect
from evalcore.store import crowd as crowd_store
from evalcore.store import tasks as stored
from support import copy_default_store
from support.apptest import demo_task_store, run
from support.i18n import english_left, page_texts

UNITS, GOLD, K, WORKERS, CARELESS = 6, 2, 3, 4, 3
WRITE = {"EVALCORE_ACCESS": None, "EVALCORE_UPLOAD_PASSWORD": None, "EVALCORE_READ_ONLY": None}
READ_ONLY = {**WRITE, "EVALCORE_READ_ONLY": "1"}


def pid(n: int) -> str:
    return f"5f{n:022x}"   # Prolific's ids are 24 hex digits


@pytest.fixture(scope="module")
def built(tmp_path_factory, default_store_file):
    """A store with a Prolific study: four workers finished, the last one careless (fast, the same answer
    everywhere, gold units wrong) and excluded by the pass rule. (path, task id, {n: pseudonym})."""
    db = copy_default_store(default_store_file, tmp_path_factory.mktemp("crowd") / "s.duckdb")
    con = connect(db)
    task_id = service.create_task(con, dataset="demo-zh", mode="absolute", dimensions=["Info", "Coh"], items=24,
                                  per_item=K, lang="en")
    study = crowd.open_study(con, task_id, platform="prolific", completion_code="DONE42", failed_code="FAIL42",
                             units=UNITS, gold=GOLD, pay=1.2, currency="GBP")
    crowd.make_gold(con, task_id, why="nonsense", dimension="Coh", low=0, count=2)
    task = stored.get(con, task_id)
    golds = crowd_store.gold(con, task_id).set_index(["unit", "dimension"])
    names = {}
    for n in range(WORKERS):
        careless = n == CARELESS
        worker = crowd.enter(con, study, crowd.Ids(pid(n), "s1", f"sess{n}"), client=f"10.0.0.{n}|Firefox")
        now = datetime(2026, 11, 28, 12, 0)
        k = 0
        while (unit := crowd.next_unit(con, study, task, worker.annotator, now=now)) is not None:
            now += timedelta(seconds=1 if careless else 300)   # careful: time to read any unit
            for d in task.dimensions:
                if careless:
                    value = d.max
                elif (unit, d.dimension) in golds.index:
                    value = golds.loc[(unit, d.dimension), "low"]
                else:
                    value = float((unit + k + len(d.dimension)) % 3)
                stored.answer(con, task, unit, worker.annotator, d.dimension, value, now=now)
            k += 1
        crowd.finish(con, study, worker.worker)
        names[n] = worker.annotator
    con.close()
    return db, task_id, names


@pytest.fixture()
def study(built, tmp_path):
    db, task_id, names = built
    mine = tmp_path / "s.duckdb"
    shutil.copyfile(db, mine)
    return mine, task_id, names


def sent(at) -> bytes:
    """Everything the page sends the browser: every element's and block's message, serialized (tables as their
    Arrow bytes, widgets with their options and values)."""
    out = []

    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "SerializeToString"):
            out.append(proto.SerializeToString())
        for child in (getattr(node, "children", None) or {}).values():
            walk(child)

    walk(at._tree)
    return b"\n".join(out)


def workers_table(at):
    return next(d.value for d in at.dataframe if "other_identity" in d.value.columns)


def test_the_study_its_workers_and_why_one_was_excluded(monkeypatch, study):
    db, task_id, names = study
    at = run("tasks", monkeypatch, {"EVALCORE_DB": db, **WRITE}, task=str(task_id))
    assert "Crowd study" in [s.value for s in at.subheader]
    texts = [t.value for t in at.text]
    assert "4 workers entered: 4 finished, 3 passed, 1 failed the pass rule; 1 excluded now." in texts
    assert "Completion code: DONE42" in texts and "Code for a worker who failed the checks: FAIL42" in texts
    assert "A worker who passes is sent back to https://app.prolific.com/submissions/complete?cc=DONE42" in texts
    assert any("each worker rates 6 units, 2 of them gold units" in t for t in texts)
    link = at.code[0].value
    assert link == (f"http://localhost:8501/annotate?task={task_id}&PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
                    "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    table = workers_table(at).set_index("annotator")
    assert set(table.index) == set(names.values())
    careless = table.loc[names[CARELESS]]
    assert careless["outcome"] == "failed" and bool(careless["excluded"]) and "gold" in careless["reason"]
    assert not table.drop(index=names[CARELESS])["excluded"].any()
    assert "platform_id" not in table.columns and pid(0).encode() not in sent(at)
    # asked for, the identifiers are shown to whoever may write (to approve and pay on the platform)
    at.toggle(key=f"tk-crowd-ids-{task_id}").set_value(True).run()
    shown = workers_table(at).set_index("annotator")
    assert shown.loc[names[0], "platform_id"] == pid(0)
    assert all(pid(n).encode() in sent(at) for n in range(WORKERS))   # the search below finds them where they are


def test_without_write_access_no_identifier_and_no_code_is_sent(monkeypatch, study):
    db, task_id, names = study
    at = run("tasks", monkeypatch, {"EVALCORE_DB": db, **READ_ONLY}, task=str(task_id))
    assert "Crowd study" in [s.value for s in at.subheader]
    assert set(workers_table(at)["annotator"]) == set(names.values())   # the pseudonyms and quality: for everyone
    everything = sent(at)
    for secret in [*(pid(n) for n in range(WORKERS)), "DONE42", "FAIL42"]:
        assert secret.encode() not in everything, secret
    assert not at.toggle and not [b for b in at.button if b.label in ("Exclude", "Put back")]
    # the study's set-up (its gold units, its questions with their right answers) and its forms: not drawn either
    assert "Gold units and checks" not in [e.label for e in at.expander]
    assert not [b for b in at.button if b.label in SETUP_BUTTONS]


def test_excluding_a_worker_from_the_page(monkeypatch, study):
    db, task_id, names = study
    at = run("tasks", monkeypatch, {"EVALCORE_DB": db, **WRITE}, task=str(task_id))
    at.selectbox(key=f"tk-crowd-who-{task_id}").set_value(names[0])   # a worker who passed: their button excludes
    at.text_input(key=f"tk-crowd-why-{task_id}").input("answers unrelated to the text")
    next(b for b in at.button if b.label == "Exclude").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [s.value for s in at.success][-1].replace("\\", "").startswith(f"{names[0]} excluded: their ratings left")
    con = connect(db)
    assert crowd_store.excluded(con, task_id) == {names[0], names[CARELESS]}
    assert names[0] not in set(stored.latest(con, task_id)["annotator"])   # what results, export and ranking read
    con.close()
    assert bool(workers_table(at).set_index("annotator").loc[names[0], "excluded"])
    log = next(d.value for d in at.dataframe if "decided_by" in d.value.columns)
    assert list(log["decided_by"]) == ["pass rule", "dashboard"]
    assert list(log["reason"])[-1] == "answers unrelated to the text"


def test_putting_a_worker_back_from_the_page(monkeypatch, study):
    db, task_id, names = study
    at = run("tasks", monkeypatch, {"EVALCORE_DB": db, **WRITE}, task=str(task_id))
    at.selectbox(key=f"tk-crowd-who-{task_id}").set_value(names[CARELESS]).run()   # excluded by the pass rule
    at.text_input(key=f"tk-crowd-why-{task_id}").input("checked by hand")
    next(b for b in at.button if b.label == "Put back").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [s.value for s in at.success][-1].replace("\\", "").startswith(f"{names[CARELESS]} put back")
    con = connect(db)
    assert crowd_store.excluded(con, task_id) == set()
    assert names[CARELESS] in set(stored.latest(con, task_id)["annotator"])
    decisions = crowd_store.decisions(con, task_id)
    con.close()
    assert list(decisions["excluded"]) == [True, False] and list(decisions["reason"])[-1] == "checked by hand"


SETUP_BUTTONS = ("Add gold units", "Add the question", "Add the instruction check")


def messages(elements) -> list[str]:
    """What st.error or st.success elements say, their markdown escapes dropped."""
    return [e.value.replace("\\", "") for e in elements]


def gold_table(at):
    return next(d.value for d in at.dataframe if "expected" in d.value.columns)


def test_adding_gold_units_from_the_page(monkeypatch, study):
    db, task_id, __ = study
    at = run("tasks", monkeypatch, {"EVALCORE_DB": db, **WRITE}, task=str(task_id))
    assert "Gold units and checks" in [e.label for e in at.expander]
    assert "The task holds 2 gold units; each worker meets 2." in [t.value for t in at.text]
    assert gold_table(at).to_dict("records") == [{"kind": "nonsense", "dimension": "Coh", "expected": "0",
                                                   "units": 2}]   # counts, never which units
    at.selectbox(key=f"tk-crowd-gold-dimension-{task_id}").set_value("Info")
    at.text_input(key=f"tk-crowd-gold-expect-{task_id}").input("5")   # outside Info's scale: refused, said, nothing written
    next(b for b in at.button if b.label == "Add gold units").click().run()
    assert messages(at.error) == ["Info is rated from 0 to 2: the expected answer must lie within."]
    con = connect(db)
    assert len(crowd_store.gold_units(con, task_id)) == 2
    con.close()
    at.selectbox(key=f"tk-crowd-gold-kind-{task_id}").set_value("custom")
    at.text_input(key=f"tk-crowd-gold-expect-{task_id}").input("0")   # a custom one with no item or reply: refused
    next(b for b in at.button if b.label == "Add gold units").click().run()
    assert messages(at.error) == ["A custom gold unit needs its item and the reply shown."]
    at.selectbox(key=f"tk-crowd-gold-kind-{task_id}").set_value("nonsense")
    at.number_input(key=f"tk-crowd-gold-count-{task_id}").set_value(3)
    next(b for b in at.button if b.label == "Add gold units").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert messages(at.success) == ["3 gold units added: nonsense, Info expected 0."]
    con = connect(db)
    gold = crowd_store.gold(con, task_id)
    con.close()
    assert gold["unit"].nunique() == 5
    assert sorted(gold[gold["dimension"] == "Info"]["why"]) == ["nonsense"] * 3
    assert gold_table(at)["units"].tolist() == [2, 3]
    at.run()   # said once
    assert not at.success


def test_adding_a_comprehension_question_from_the_page(monkeypatch, study):
    db, task_id, __ = study
    at = run("tasks", monkeypatch, {"EVALCORE_DB": db, **WRITE}, task=str(task_id))
    assert "No comprehension question: workers start the real work at once." in [c.value for c in at.caption]
    at.text_input(key=f"tk-crowd-question-{task_id}").input("What do you rate?")
    at.text_area(key=f"tk-crowd-options-{task_id}").input("the reply\nthe reply")   # two answers, not different: refused
    next(b for b in at.button if b.label == "Add the question").click().run()
    assert messages(at.error) == ["A comprehension question offers at least two different answers."]
    con = connect(db)
    assert crowd.questions(con, task_id) == []
    con.close()
    at.text_area(key=f"tk-crowd-options-{task_id}").input("the question\nthe reply\n\nthe model")
    at.number_input(key=f"tk-crowd-answer-{task_id}").set_value(2)
    next(b for b in at.button if b.label == "Add the question").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert messages(at.success) == ["Comprehension question 1 added."]
    con = connect(db)
    assert crowd.questions(con, task_id) == [(1, "What do you rate?", ["the question", "the reply", "the model"])]
    assert crowd_store.checked(con, task_id, "nobody") == "open"   # a worker now answers it first
    con.close()
    assert ("Question 1: What do you rate?\n  1. the question\n  2. the reply\n  3. the model\n"
            "  Right answer: 2. the reply") in [t.value for t in at.text]
    assert at.text_input(key=f"tk-crowd-question-{task_id}").value == ""   # emptied: a second click adds nothing


def test_opening_an_open_task_to_a_platform(monkeypatch, tmp_path, default_store_file):
    db, task = demo_task_store(tmp_path, default_store_file)
    at = run("tasks", monkeypatch, {"EVALCORE_DB": db, **WRITE}, task=str(task.task_id))
    assert "Crowd study" not in [s.value for s in at.subheader]
    at.text_input(key="tk-crowd-code").input("OK 1")   # not a code a platform takes: refused, said
    next(b for b in at.button if b.label == "Open to the platform").click().run()
    assert any("completion code" in e.value for e in at.error)
    at.selectbox(key="tk-crowd-platform").set_value("mturk")
    at.text_input(key="tk-crowd-code").input("OK1")
    at.number_input(key="tk-crowd-units").set_value(4)
    at.number_input(key="tk-crowd-gold").set_value(1)
    next(b for b in at.button if b.label == "Open to the platform").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    con = connect(db)
    opened = crowd.study_of(con, task.task_id)
    con.close()
    assert (opened.platform, opened.completion_code, opened.units, opened.gold) == ("mturk", "OK1", 4, 1)
    assert "Crowd study" in [s.value for s in at.subheader]
    assert at.code[0].value == f"http://localhost:8501/annotate?task={task.task_id}"


def test_the_crowd_part_in_chinese(monkeypatch, study):
    db, task_id, names = study
    zh = run("tasks", monkeypatch, {"EVALCORE_DB": db, **WRITE}, lang="zh-CN", task=str(task_id))
    assert english_left([*page_texts(zh), *(t.value for t in zh.text)]) == []
    assert "众包研究" in [s.value for s in zh.subheader]
    assert "4 位众包工作者进入：4 位完成，3 位通过，1 位未通过通过规则；目前排除 1 位。" in [t.value for t in zh.text]
    assert set(workers_table(zh)["outcome"]) == {"通过", "失败"}
    assert "金标准单元与检查" in [e.label for e in zh.expander]   # the set-up: a gold unit's kind in Chinese, the
    assert gold_table(zh)[["kind", "dimension"]].values.tolist() == [["无意义", "Coh"]]   # dimension an id
    assert zh.code[0].value.startswith(f"http://localhost:8501/annotate?task={task_id}&PROLIFIC_PID=")   # the link
    # is the study's, the same in every language


def test_the_form_opening_a_task_in_chinese(monkeypatch, tmp_path, default_store_file):
    db, demo = demo_task_store(tmp_path, default_store_file)
    zh = run("tasks", monkeypatch, {"EVALCORE_DB": db, **WRITE}, lang="zh-CN", task=str(demo.task_id))
    assert "向平台开放" in [b.label for b in zh.button]
    assert english_left([*page_texts(zh), *(t.value for t in zh.text)]) == []
