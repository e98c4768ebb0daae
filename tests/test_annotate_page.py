"""The Annotate page in AppTest: an annotator gives name and access code, rates units with one click per
dimension (stored at once), goes back and changes a rating (kept as history), and, in a new session (another
machine), resumes at their next unit; a wrong code is refused."""
from __future__ import annotations

from test_app import run

from conftest import copy_default_store
from evalcore.services.defaults import DEMO_TASK
from evalcore.store import connect
from evalcore.store import tasks as stored


def _store(tmp_path, default_store_file):
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    con = connect(db)
    task = next(stored.get(con, int(t)) for t, n in con.execute("SELECT task_id, name FROM tasks").fetchall()
                if n == DEMO_TASK)
    con.close()
    return db, task


def _login(at, name: str, code: str):
    at.text_input[0].input(name)
    at.text_input[1].input(code)
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _rate(at, values: list[float]):
    for control, value in zip(at.segmented_control, values):
        control.set_value(value).run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def test_an_annotator_rates_goes_back_and_resumes(monkeypatch, tmp_path, default_store_file):
    db, task = _store(tmp_path, default_store_file)
    env = {"EVALCORE_DB": db}
    at = run("annotate", monkeypatch, env, task=str(task.task_id))
    assert at.dataframe[0].value["dimension"].tolist() == ["Info", "Coh"]   # what they will rate, before starting
    _login(at, "ann", "wrong")
    assert any("access code" in e.value for e in at.error)
    at = _login(run("annotate", monkeypatch, env, task=str(task.task_id)), "ann", task.access_code)
    first = at.session_state[f"ann-unit-{task.task_id}"]
    _rate(at, [2.0, 1.0])                  # two clicks: the unit is done and the next one drawn
    second = at.session_state[f"ann-unit-{task.task_id}"]
    assert second is not None and second != first
    _rate(at, [0.0, 0.0])
    con = connect(db)
    latest = stored.latest(con, task.task_id)
    assert sorted(latest["value"].tolist()) == [0.0, 0.0, 1.0, 2.0]
    con.close()
    # back to the first unit, change Info from 2 to 1: both answers kept, the latest counts
    at.button(key=f"ann-back-{at.session_state[f'ann-unit-{task.task_id}']}").click().run()
    assert at.session_state[f"ann-unit-{task.task_id}"] in (first, second)
    back = at.session_state[f"ann-unit-{task.task_id}"]
    at.segmented_control(key=f"ann-{task.task_id}-{back}-Info").set_value(1.0).run()
    con = connect(db)
    answers = stored.answers(con, task.task_id)
    assert len(answers[(answers["unit"] == back) & (answers["dimension"] == "Info")]) == 2
    done_before = set(stored.units_of(con, task, "ann"))
    con.close()
    # a new session (another machine): the same name resumes at a unit not rated yet
    again = _login(run("annotate", monkeypatch, env, task=str(task.task_id)), "ann", task.access_code)
    assert again.session_state[f"ann-unit-{task.task_id}"] not in done_before
