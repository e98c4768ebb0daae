"""A crowd study's worker on the Annotate page in AppTest (issue 65): a Prolific link with the worker's identifiers
opens the study with nothing to type; the comprehension question failed once, then passed; six units rated ("Unit i
of 6", no Skip, no unit number), two of them gold units shown as any response is; the end with the completion code
and the way back to Prolific. A careless worker (every answer the highest) ends with the other code, without being
told which check failed; a second identifier in the same session is refused; the platform identifier is never in
what the page shows; without the identifiers, the link says to open the study from the platform."""
from __future__ import annotations

import pytest

from evalcore.services import crowd
from evalcore.services import tasks as service
from evalcore.store import connect
from evalcore.store import crowd as crowd_store
from support import copy_default_store
from support.apptest import run
from support.i18n import english_left, page_texts

UNITS, GOLD = 6, 2
PID, OTHER = "5f0c1a2b3c4d5e6f7a8b9c0d", "60aa11bb22cc33dd44ee55ff"


def _study(tmp_path, default_store_file, lang: str = "en") -> tuple[str, int, set[int]]:
    """(store, task, its gold units): a rating task on demo-zh opened for Prolific, 6 units a worker, 2 of them
    gold (a nonsense reply: Coh 0), one comprehension question (its answer: the second option). The reading-speed
    rule is off: AppTest's clicks come faster than anyone reads."""
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    con = connect(db)
    task_id = service.create_task(con, dataset="demo-zh", mode="absolute", dimensions=["Info", "Coh"], items=24,
                                  per_item=3, lang=lang)
    crowd.open_study(con, task_id, platform="prolific", completion_code="DONE42", failed_code="FAIL42", units=UNITS,
                     gold=GOLD, pay=1.2, currency="GBP", pass_rule={"too_fast_max": None})
    crowd.make_gold(con, task_id, why="nonsense", dimension="Coh", low=0, count=2)
    crowd_store.add_question(con, task_id, "What do you rate?", ["grammar only", "the reply in its context"], 1)
    golds = crowd_store.gold_units(con, task_id)
    con.close()
    return db, task_id, golds


def _open(monkeypatch, db, task_id, pid=PID, lang="en"):
    return run("annotate", monkeypatch, {"EVALCORE_DB": db}, lang=lang, task=str(task_id), PROLIFIC_PID=pid,
               STUDY_ID="study1", SESSION_ID=f"session-{pid[:6]}")


def _shown(at) -> str:
    """Everything the page shows as text, widgets' labels and values included."""
    return "\n".join(page_texts(at)) + "\n".join(str(w.value) for w in at.text_input)


def _answer(at, choices: list[int | None]):
    for radio, choice in zip(at.radio, choices):
        radio.set_value(choice)
    at.button[[b.label for b in at.button].index("Check my answers")].click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _rate_share(at, task_id, golds) -> list[str]:
    """Rate the worker's units until the page ends (gold units right); the captions seen ("Unit i of n")."""
    seen = []
    for i in range(UNITS + 1):
        unit = at.session_state[f"ann-unit-{task_id}"]
        captions = [c.value for c in at.caption if c.value.startswith("Unit ")]
        if not captions:
            break
        seen += captions
        assert not any(b.label == "Skip this unit" for b in at.button)
        controls = [c for c in at.segmented_control if c.key.startswith(f"ann-{task_id}-")]
        assert [c.key for c in controls] == [f"ann-{task_id}-p{i + 1}-Info", f"ann-{task_id}-p{i + 1}-Coh"]
        values = [float((i + 1) % 3), 0.0 if unit in golds else float(i % 2 + 1)]   # gold: Coh 0
        for control, value in zip(controls, values):
            control.set_value(value).run()
            assert not at.exception, [e.value for e in at.exception]
    return seen


def _rate_through_services(db, task_id, golds=frozenset(), careless: bool = False) -> None:
    """The only worker's share rated through the services: every answer the highest (careless), or varied with
    the gold units right."""
    from evalcore.store import tasks as stored

    con = connect(db)
    study, task = crowd.study_of(con, task_id), stored.get(con, task_id)
    annotator = crowd_store.workers(con, "rating", task_id)["annotator"].iloc[0]
    k = 0
    while (unit := crowd.next_unit(con, study, task, annotator)) is not None:
        k += 1
        for d in task.dimensions:
            value = (d.max if careless else 0.0 if unit in golds and d.dimension == "Coh"
                     else float((k + len(d.dimension)) % 3))
            stored.answer(con, task, unit, annotator, d.dimension, value)
    con.close()


@pytest.mark.slow   # 6 to 8 s on the 2-core machine: the whole path, fourteen runs of the page
def test_a_worker_checks_rates_and_gets_the_completion_code(monkeypatch, tmp_path, default_store_file):
    db, task_id, golds = _study(tmp_path, default_store_file)
    at = _open(monkeypatch, db, task_id)
    assert not at.text_input   # no name, no access code, no personal key
    assert [r.label for r in at.radio] == ["What do you rate?"] and at.radio[0].value is None
    _answer(at, [None])        # a question left open: said, no attempt used
    assert any("Answer every question" in w.value for w in at.warning) and at.radio
    _answer(at, [0])           # wrong: one attempt left, not said which answer was wrong
    assert any("one more attempt" in w.value for w in at.warning)
    assert at.radio[0].value is None
    _answer(at, [1])
    seen = _rate_share(at, task_id, golds)
    assert seen == [f"Unit {i} of {UNITS}" for i in range(1, UNITS + 1)]
    assert [c.value for c in at.code] == ["DONE42"]
    assert any("completion code is below" in s.value for s in at.success)
    assert [b.proto.url for b in at.get("link_button")] == ["https://app.prolific.com/submissions/complete?cc=DONE42"]
    assert PID not in _shown(at) and "prolific-" not in _shown(at)
    con = connect(db, read_only=True)
    workers = crowd_store.workers(con, "rating", task_id)
    rated = con.execute("SELECT count(DISTINCT unit) FROM task_answers WHERE task_id = ? AND kind = 'rating'",
                        [task_id]).fetchall()[0][0]
    con.close()
    assert workers["outcome"].tolist() == ["passed"] and rated == UNITS
    # back later (a new session, the same link): the same ending
    again = _open(monkeypatch, db, task_id)
    assert [c.value for c in again.code] == ["DONE42"] and not again.radio


def test_a_careless_worker_gets_the_other_code(monkeypatch, tmp_path, default_store_file):
    """Their share rated through the services (every answer the highest, gold units failed), then the page."""
    db, task_id, __ = _study(tmp_path, default_store_file)
    _answer(_open(monkeypatch, db, task_id), [1])
    _rate_through_services(db, task_id, careless=True)
    at = _open(monkeypatch, db, task_id)
    assert [c.value for c in at.code] == ["FAIL42"]
    shown = _shown(at)
    assert "gold" not in shown and "same answer" not in shown and not at.success   # not said which check failed


def test_failing_the_questions_twice_ends_with_the_other_code(monkeypatch, tmp_path, default_store_file):
    db, task_id, __ = _study(tmp_path, default_store_file)
    at = _answer(_answer(_open(monkeypatch, db, task_id), [0]), [0])
    assert [c.value for c in at.code] == ["FAIL42"] and not at.radio


def test_a_second_identifier_in_one_session_is_refused(monkeypatch, tmp_path, default_store_file):
    db, task_id, __ = _study(tmp_path, default_store_file)
    at = _open(monkeypatch, db, task_id)
    at.query_params["PROLIFIC_PID"] = OTHER
    at.run()
    assert [e.value for e in at.error] and "another worker" in at.error[0].value
    assert not at.radio and not [c for c in at.segmented_control if c.key.startswith(f"ann-{task_id}-")]
    con = connect(db, read_only=True)
    assert len(crowd_store.workers(con, "rating", task_id)) == 1   # no second worker was made
    con.close()


@pytest.mark.parametrize("query, said", [
    ({}, "open it from the study's page"),
    ({"PROLIFIC_PID": "<script>"}, "not ones the platform gives"),
])
def test_a_link_without_or_with_edited_identifiers(monkeypatch, tmp_path, default_store_file, query, said):
    db, task_id, __ = _study(tmp_path, default_store_file)
    at = run("annotate", monkeypatch, {"EVALCORE_DB": db}, lang="en", task=str(task_id), **query)
    assert said in "\n".join(page_texts(at)) and not at.text_input and not at.radio


def test_a_gold_unit_is_shown_as_a_response_is(monkeypatch, tmp_path, default_store_file):
    from evalcore.pagedata import annotation as ann
    from evalcore.store import tasks as stored

    db, task_id, golds = _study(tmp_path, default_store_file)
    con = connect(db)
    task = stored.get(con, task_id)
    unit = min(golds)
    view = ann.unit_view(con, task, unit, "someone")
    assert view["responses"] == [crowd_store.gold_response(con, task_id, unit)] and view["responses"][0]
    assert view["turns"] and view["sides"] == ["a"]
    con.close()


def test_the_worker_path_in_chinese(monkeypatch, tmp_path, default_store_file):
    """A zh-CN study in zh-CN: the check, a unit and the end show no English message left untranslated."""
    db, task_id, golds = _study(tmp_path, default_store_file, lang="zh-CN")
    at = _open(monkeypatch, db, task_id, lang=None)
    assert english_left(page_texts(at)) == []
    at.radio[0].set_value(1)
    at.button[[b.label for b in at.button].index("检查我的答案")].click().run()
    assert english_left(page_texts(at)) == [] and any(c.value == f"第 1 个单元，共 {UNITS} 个" for c in at.caption)
    _rate_through_services(db, task_id, golds)   # the rest of their share, then the page again: the end
    at = _open(monkeypatch, db, task_id, lang=None)
    assert [c.value for c in at.code] == ["DONE42"] and english_left(page_texts(at)) == []
    assert [b.proto.label for b in at.get("link_button")] == ["返回 Prolific"]


def test_back_shows_a_unit_by_its_place(monkeypatch, tmp_path, default_store_file):
    db, task_id, golds = _study(tmp_path, default_store_file)
    at = _answer(_open(monkeypatch, db, task_id), [1])
    for place in (1, 2):
        for control in [c for c in at.segmented_control if c.key.startswith(f"ann-{task_id}-p{place}-")]:
            control.set_value(0.0 if at.session_state[f"ann-unit-{task_id}"] in golds else 1.0).run()
    at.button(key="ann-back-p3").click().run()
    assert [c.value for c in at.caption if c.value.startswith("Unit ")] == ["Unit 2 of 6"]
    at.button(key="ann-next-p2").click().run()
    assert [c.value for c in at.caption if c.value.startswith("Unit ")] == ["Unit 3 of 6"]


def test_a_closed_study_and_an_mturk_preview_are_refused(monkeypatch, tmp_path, default_store_file):
    from evalcore.store import tasks as stored

    db, task_id, __ = _study(tmp_path, default_store_file)
    con = connect(db)
    stored.set_state(con, task_id, "closed")
    turk = service.create_task(con, dataset="demo-zh", mode="absolute", dimensions=["Info"], items=4, per_item=1,
                               lang="en")
    crowd.open_study(con, turk, platform="mturk", completion_code="OK1", units=2)
    con.close()
    at = _open(monkeypatch, db, task_id)
    assert ["This study is closed" in e.value for e in at.error] == [True]
    assert not at.radio and not at.selectbox
    at = run("annotate", monkeypatch, {"EVALCORE_DB": db}, lang="en", task=str(turk), workerId="A1B2C3",
             assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", hitId="H1")
    assert ["preview" in e.value for e in at.error] == [True]
    assert not [c for c in at.segmented_control if c.key.startswith(f"ann-{turk}-")]
