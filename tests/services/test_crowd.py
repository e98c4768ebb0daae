"""Crowd studies (issue 65) at the service level, on a copy of the default store: a rating task opened for Prolific,
with gold units and a comprehension question; workers enter by identifier (no name), rate their share with the gold
units at places of their own, and finish with the completion code or the other one. A careless worker (fast,
straight-lined, failing gold) and one who tried a second identity from their browser are excluded by the pass rule,
their ratings moved out of human_ratings and back by `include`; the identifiers are stored once and nowhere else."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from evalcore.services import crowd
from evalcore.services import tasks as service
from evalcore.store import connect
from evalcore.store import crowd as crowd_store
from evalcore.store import tasks as stored
from support import copy_default_store, tables_holding

UNITS, GOLD, K = 6, 2, 3


@pytest.fixture()
def study(tmp_path, default_store_file):
    con = connect(copy_default_store(default_store_file, tmp_path / "s.duckdb"))
    task_id = service.create_task(con, dataset="demo-zh", mode="absolute", dimensions=["Info", "Coh"], items=24,
                                  per_item=K, lang="en")
    opened = crowd.open_study(con, task_id, platform="prolific", completion_code="DONE42", failed_code="FAIL42",
                              units=UNITS, gold=GOLD, pay=1.2, currency="GBP")
    crowd.make_gold(con, task_id, why="nonsense", dimension="Coh", low=0, count=2)
    crowd.make_gold(con, task_id, why="copies-knowledge", dimension="Info", low=2, count=1)
    crowd_store.add_question(con, task_id, "What do you rate?", ["grammar only", "the reply in its context"], 1)
    yield con, opened, stored.get(con, task_id)
    con.close()


def pid(n: int) -> str:
    return f"{n:024x}"   # Prolific's ids are 24 hex digits


def rate_all(con, study, task, worker, *, careless: bool, start: datetime) -> list[int]:
    """The worker's whole share: claim, answer every dimension (gold right unless careless), 300 s a unit (1 s if
    careless); the units they rated. 300 s: the reading floor of a long unit (25 characters a second) is over
    100 s, and the salted pseudonyms draw other units each run."""
    golds = crowd_store.gold(con, task.task_id).set_index(["unit", "dimension"])
    now, seen = start, []
    while (unit := crowd.next_unit(con, study, task, worker.annotator, now=now)) is not None:
        now += timedelta(seconds=1 if careless else 300)
        for d in task.dimensions:
            if careless:
                value = d.max
            elif (unit, d.dimension) in golds.index:
                value = golds.loc[(unit, d.dimension), "low"]
            else:
                # by place, not unit number (drawn anew each run): any 4 of 6 places hold two residues mod 3,
                # so a careful worker never straight-lines by chance
                value = float((len(seen) + len(d.dimension)) % 3)
            stored.answer(con, task, unit, worker.annotator, d.dimension, value, now=now)
        seen.append(unit)
    return seen


def test_a_study_from_entry_to_codes(study):
    con, opened, task = study
    start = datetime(2026, 11, 28, 12, 0)
    assert crowd.link(opened, "https://lab.example/") == (
        f"https://lab.example/annotate?task={task.task_id}&PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    ids = {n: crowd.ids_from(opened, {"PROLIFIC_PID": pid(n), "STUDY_ID": "s1", "SESSION_ID": f"sess{n}"})
           for n in range(8)}
    workers = {n: crowd.enter(con, opened, ids[n], client=f"10.0.0.{n}|Firefox", now=start) for n in range(8)}
    assert all(w.annotator.startswith("prolific-") and pid(n) not in w.annotator for n, w in workers.items())
    # the same worker again: the same person, resumed
    assert crowd.enter(con, opened, ids[0], client="10.0.0.0|Firefox").annotator == workers[0].annotator
    # worker 7 edits the link to come back as someone else: refused, and counted on them
    with pytest.raises(crowd.Refused, match="another worker"):
        crowd.enter(con, opened, crowd.ids_from(opened, {"PROLIFIC_PID": pid(99), "SESSION_ID": "sess99"}),
                    client="10.0.0.7|Firefox")
    # an identifier no platform gives is refused
    with pytest.raises(crowd.Refused, match="identifier"):
        crowd.ids_from(opened, {"PROLIFIC_PID": "<script>"})
    # the comprehension question: worker 6 fails twice, the others pass (worker 1 at the second attempt)
    for n, w in workers.items():
        if n == 6:
            assert crowd.check(con, opened, w.worker, [0]) == (False, 1)
            assert crowd.check(con, opened, w.worker, [0]) == (False, 0)
            with pytest.raises(crowd.Refused):
                crowd.check(con, opened, w.worker, [1])
        elif n == 1:
            assert crowd.check(con, opened, w.worker, [0]) == (False, 1)
            assert crowd.check(con, opened, w.worker, [1]) == (True, 0)
        else:
            assert crowd.check(con, opened, w.worker, [1]) == (True, 1)
    rated = {n: rate_all(con, opened, task, w, careless=(n == 5), start=start) for n, w in workers.items() if n != 6}
    golds = crowd_store.gold_units(con, task.task_id)
    for n, units in rated.items():
        assert len(units) == UNITS and len(set(units)) == UNITS, n           # their share, never more
        assert len(set(units) & golds) == GOLD, n                             # their gold units, among the real ones
        assert units[0] not in golds                                          # never first
        assert crowd.position(con, opened, task, workers[n].annotator) == (UNITS, UNITS)
    other = next(u for u in stored.units(con, task.task_id)["unit"] if u not in rated[0])
    with pytest.raises(stored.UnitFull, match="units this study gives"):   # a unit beyond their share: refused
        stored.answer(con, task, int(other), workers[0].annotator, "Info", 1.0)
    per_unit = stored.latest(con, task.task_id).groupby("unit")["annotator"].nunique()
    assert per_unit.max() <= K                                                # K holds on the real units
    endings = {n: crowd.finish(con, opened, w.worker) for n, w in workers.items()}
    assert {n for n, e in endings.items() if not e.passed} == {5, 6, 7}, {n: e.reasons for n, e in endings.items()}
    assert endings[0].code == "DONE42" and endings[0].redirect == "https://app.prolific.com/submissions/complete?cc=DONE42"
    assert endings[5].code == "FAIL42" and any("gold" in r for r in endings[5].reasons)
    assert any("same answer" in r for r in endings[5].reasons) and any("faster" in r for r in endings[5].reasons)
    assert any("comprehension" in r for r in endings[6].reasons)
    assert any("another worker" in r for r in endings[7].reasons)
    assert crowd.finish(con, opened, workers[0].worker) == endings[0]   # asked again: the same, nothing decided twice
    # the excluded workers' ratings left human_ratings; put back, they return
    careless = workers[5].annotator
    assert careless not in set(stored.latest(con, task.task_id)["annotator"])   # results, export and ranking read it
    assert careless in set(stored.latest(con, task.task_id, excluded=True)["annotator"])
    mine = "SELECT count(*) FROM {table} WHERE origin = ? AND annotator = ?"
    assert con.execute(mine.format(table="human_ratings"), [task.origin, careless]).fetchall()[0][0] == 0
    kept = con.execute(mine.format(table="excluded_ratings"), [task.origin, careless]).fetchall()[0][0]
    assert kept == (UNITS - GOLD) * len(task.dimensions)   # gold answers never were human ratings
    crowd.include(con, task.task_id, careless, reason="checked by hand", by="lab")
    assert con.execute(mine.format(table="human_ratings"), [task.origin, careless]).fetchall()[0][0] == kept
    assert careless not in crowd_store.excluded(con, task.task_id)
    crowd.exclude(con, task.task_id, careless, reason="after all", by="lab")
    assert list(crowd_store.decisions(con, task.task_id).query("annotator == @careless")["decided_by"]) == [
        "pass rule", "lab", "lab"]
    # identifiers: stored once, in crowd_workers.platform_id, listed only when asked
    assert "platform_id" not in crowd_store.workers(con, "rating", task.task_id).columns
    assert set(crowd_store.workers(con, "rating", task.task_id, identifiers=True)["platform_id"]) == {
        pid(n) for n in range(8)}
    from evalcore.services import record
    assert not [t for t in record.TABLES if t.startswith(("crowd", "gold", "excluded"))]   # a record carries none
    assert tables_holding(con, [pid(n) for n in range(8)]) == ["crowd_workers"]   # the scan finds it where it is
    assert tables_holding(con, [pid(n) for n in range(8)], skip=("crowd_workers",)) == []


def test_a_typed_name_cannot_be_a_crowd_worker(study):
    from evalcore.store import annotators

    con, opened, task = study
    w = crowd.enter(con, opened, crowd.Ids(pid(1), None, None), client=None)
    with pytest.raises(annotators.NotThem, match="crowd workers"):
        annotators.enter(con, w.annotator, None)
    with pytest.raises(ValueError, match="crowd worker"):
        annotators.reset(con, w.annotator)


def test_mturk_preview_and_way_back(study):
    con, opened, task = study
    other = service.create_task(con, dataset="demo-zh", mode="absolute", dimensions=["Info"], items=4, per_item=1)
    turk = crowd.open_study(con, other, platform="mturk", completion_code="OK1", units=2,
                            redirect="https://example.org/done?code={code}")
    ids = crowd.ids_from(turk, {"workerId": "A1B2C3", "assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "H1"})
    with pytest.raises(crowd.Refused, match="preview"):
        crowd.enter(con, turk, ids, client=None)
    assert crowd.way_back(turk, "OK1") == "https://example.org/done?code=OK1"
    with pytest.raises(crowd.Refused, match="https"):
        crowd.open_study(con, other, platform="generic", completion_code="X", units=2, redirect="javascript:alert(1)")
