"""The Annotate page in AppTest: an annotator gives the access code and their name, gets a personal key once
(kept out of every link the page shares), rates units with one click per dimension (stored at once), goes
back and changes a rating (kept as history), and, in a new session (another machine), resumes with name and
key; a wrong code, a taken name without its key, a click on a unit that filled up meanwhile, a task closed
or deleted under the annotator and a store that cannot be used are each one sentence, with the store
unchanged. The Rating tasks page confirms a new task, empties its form and hands out a real link."""
from __future__ import annotations

from functools import partial

import pytest

from evalcore.core.errors import StoreError
from evalcore.store import DiskFull, connect, history
from evalcore.store import annotators as people
from evalcore.store import tasks as stored
from support.apptest import demo_task_store, run

# These tests read the pages' English: the person picked English (a task on demo-zh is in Chinese otherwise)
run = partial(run, lang="en")


def _login(at, name: str, code: str, key: str = ""):
    at.text_input[0].input(name)
    at.text_input[1].input(code)
    at.text_input[2].input(key)
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _kept(at, task) -> str:
    """The personal key shown once after a first entry; the page moves on to rating when told it is kept."""
    key = at.session_state[f"ann-issued-{task.task_id}"]
    shown = [t.value for t in at.text]
    assert key in shown and any(t.endswith(f"/annotate?task={task.task_id}&name=ann&key={key}") for t in shown)
    assert dict(at.query_params) == {"task": str(task.task_id)}   # the page's own link carries no key
    at.button(key="ann-kept").click().run()
    assert not at.exception
    return key


def _rate(at, values: list[float]):
    for control, value in zip([c for c in at.segmented_control if c.key.startswith("ann-")], values):   # not the switch
        control.set_value(value).run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def _count(db) -> tuple:
    con = connect(db)
    try:
        # every answer but claims (a refused click moves on to a next unit, and showing it is a claim)
        return con.execute("SELECT (SELECT count(*) FROM task_answers WHERE kind <> 'claim'), "
                           "(SELECT count(*) FROM human_ratings), "
                           "(SELECT count(*) FROM annotators)").fetchall()[0]
    finally:
        con.close()


def test_an_annotator_rates_goes_back_and_resumes(monkeypatch, tmp_path, default_store_file):
    db, task = demo_task_store(tmp_path, default_store_file)
    env = {"EVALCORE_DB": db}
    at = run("annotate", monkeypatch, env, task=str(task.task_id))
    assert at.dataframe[0].value["dimension"].tolist() == ["Info", "Coh"]   # what they will rate, before starting
    _login(at, "ann", "wrong")
    assert any("access code" in e.value for e in at.error)
    at = _login(run("annotate", monkeypatch, env, task=str(task.task_id)), "ann", task.access_code)
    key = _kept(at, task)
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
    # a new session (another machine): the name alone, in any spelling, is refused; with the key it resumes
    before = _count(db)
    again = _login(run("annotate", monkeypatch, env, task=str(task.task_id)), "ANN", task.access_code)
    assert any("is taken" in e.value for e in again.error) and _count(db) == before
    again = _login(again, "ANN", task.access_code, "not-the-key")
    assert any("not ann" in e.value for e in again.error) and _count(db) == before
    again = _login(again, "ANN", task.access_code, key)
    assert again.session_state[f"ann-unit-{task.task_id}"] not in done_before
    assert any(c.value == "Rating as ann" for c in again.caption)


def test_a_personal_link_fills_the_form_and_leaves_the_address_bar(monkeypatch, tmp_path, default_store_file):
    db, task = demo_task_store(tmp_path, default_store_file)
    con = connect(db)
    name, key = people.enter(con, "Dora")
    con.close()
    at = run("annotate", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id), name="dora", key=key)
    assert dict(at.query_params) == {"task": str(task.task_id)}
    assert [t.value for t in at.text_input] == ["dora", "", key]
    at.text_input[1].input(task.access_code)
    at.button[0].click().run()
    assert not at.exception and at.session_state[f"ann-who-{task.task_id}"] == "Dora"
    assert all(key not in t.value for t in at.text)   # a returning person's key is never shown again


def _rating(monkeypatch, tmp_path, default_store_file, name="ann"):
    db, task = demo_task_store(tmp_path, default_store_file)
    at = _login(run("annotate", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id)), name, task.access_code)
    _kept(at, task) if name == "ann" else at.button(key="ann-kept").click().run()
    return db, task, at


@pytest.mark.parametrize("change", ["closed", "deleted"])
def test_a_task_closed_or_deleted_under_the_annotator_is_a_sentence(change, monkeypatch, tmp_path, default_store_file):
    """Skip, Flag and a rating click on a unit whose task was closed or deleted since it was drawn. (In AppTest
    every click reruns the whole page, which then finds the task gone: the task is opened again before each.)"""
    db, task, at = _rating(monkeypatch, tmp_path, default_store_file)
    unit = at.session_state[f"ann-unit-{task.task_id}"]
    clicks = {"skip": lambda: at.button(key=f"ann-skip-{unit}").click().run(),
              "flag": lambda: (at.text_area(key=f"ann-flag-{unit}").input("cut"),
                               at.button(key=f"ann-flag-button-{unit}").click().run()),
              "rating": lambda: at.segmented_control(key=f"ann-{task.task_id}-{unit}-Info").set_value(1.0).run()}
    for name, click in clicks.items():
        con = connect(db)
        deleted = con.execute("SELECT deleted_by FROM tasks WHERE task_id = ?", [task.task_id]).fetchall()[0][0]
        if deleted is not None:
            history.restore(con, deleted)
        stored.set_state(con, task.task_id, "open")
        con.close()
        at.run()
        assert at.session_state[f"ann-unit-{task.task_id}"] == unit
        con = connect(db)
        stored.set_state(con, task.task_id, "closed") if change == "closed" else stored.delete(con, task.task_id)
        con.close()
        before = _count(db)
        click()
        assert not at.exception, [e.value for e in at.exception]
        assert any(f"task {task.task_id} is {change}" in e.value for e in at.error), (name, [e.value for e in at.error])
        assert _count(db) == before


def test_a_store_that_cannot_be_used_is_a_sentence_for_every_action(monkeypatch, tmp_path, default_store_file):
    """Skip, Flag, a rating click, the next unit's draw and a login, each while the store fails (a full disk, a
    lock held too long: helper `store`'s StoreError, simulated here): one sentence, no traceback."""
    db, task, at = _rating(monkeypatch, tmp_path, default_store_file)
    unit = at.session_state[f"ann-unit-{task.task_id}"]
    full = DiskFull("the disk holding the store is full: nothing of this write was stored, and the store is as it "
                    "was; free some space and run it again")

    def fail(*args, **kwargs):
        raise full

    before = _count(db)
    for name, click in (("skip", lambda: at.button(key=f"ann-skip-{unit}").click().run()),
                        ("flag", lambda: (at.text_area(key=f"ann-flag-{unit}").input("cut"),
                                          at.button(key=f"ann-flag-button-{unit}").click().run())),
                        ("answer", lambda: at.segmented_control(key=f"ann-{task.task_id}-{unit}-Info").set_value(2.0)
                         .run())):
        with monkeypatch.context() as m:
            m.setattr(stored, name, fail)
            click()
        assert not at.exception, [e.value for e in at.exception]
        said = [e.value.replace("\\", "") for e in [*at.error, *at.warning]]
        assert any("The store cannot be used right now: the disk holding the store is full" in e for e in said), said
        assert any(b.label == "Try again" for b in at.button)   # and nothing else drawn from the store meanwhile
        at.button(key="ann-retry").click().run()                 # the store is back: the unit again
        assert at.session_state[f"ann-unit-{task.task_id}"] == unit and not at.warning
        assert _count(db) == before
    with monkeypatch.context() as m:   # the next unit's draw
        m.setattr(stored, "next_unit", lambda *a, **k: (_ for _ in ()).throw(StoreError("cannot open the store now")))
        at.session_state[f"ann-unit-{task.task_id}"] = None
        at.run()
        assert not at.exception and any("cannot open the store now" in w.value for w in at.warning)
    with monkeypatch.context() as m:   # a new login
        m.setattr(people, "enter", fail)
        fresh = _login(run("annotate", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id)), "newbie",
                       task.access_code)
        assert any("the disk holding the store is full" in e.value for e in fresh.error)
    assert _count(db) == before


def test_a_unit_filled_meanwhile_is_a_sentence_and_the_next_unit(monkeypatch, tmp_path, default_store_file):
    db, task, at = _rating(monkeypatch, tmp_path, default_store_file)
    unit = at.session_state[f"ann-unit-{task.task_id}"]
    con = connect(db)
    for who in ("x1", "x2"):   # K = 2 others answer it while it is on ann's screen
        stored.answer(con, task, unit, who, "Info", 1.0)
    con.close()
    before = _count(db)
    at.segmented_control(key=f"ann-{task.task_id}-{unit}-Info").set_value(2.0).run()
    assert not at.exception
    assert any(f"Unit {unit} already has its 2 annotators" in e.value for e in at.error)
    assert _count(db) == before and at.session_state[f"ann-unit-{task.task_id}"] not in (None, unit)


def test_nothing_left_while_units_are_held_says_when_they_free(monkeypatch, tmp_path, default_store_file):
    db, task = demo_task_store(tmp_path, default_store_file)
    con = connect(db)
    n = len(stored.units(con, task.task_id))
    for k in range(n * task.per_item):   # every place claimed by someone looking at it, none answered
        stored.next_unit(con, task, f"looker-{k}")
    # each unit frees when the first of its two claims lapses; the earliest of those is the first claim's
    frees = con.execute("SELECT min(given_at) FROM task_answers WHERE kind = 'claim'").fetchall()[0][0] + stored.CLAIM_TTL
    con.close()
    at = _login(run("annotate", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id)), "late", task.access_code)
    at.button(key="ann-kept").click().run()
    said = " ".join(i.value for i in at.info).replace("\\", "")
    assert f"{n} units are being looked at by other annotators" in said and f"frees at {frees:%H:%M}" in said


def test_creating_a_task_confirms_empties_the_form_and_links(monkeypatch, tmp_path, default_store_file):
    db, _ = demo_task_store(tmp_path, default_store_file)
    at = run("tasks", monkeypatch, {"EVALCORE_DB": db, "EVALCORE_ACCESS": None})
    at.text_input(key="tk-name-0").input("Chit-chat check")
    at.number_input(key="tk-items-0").set_value(16)
    next(b for b in at.button if b.label == "Create task").click().run()
    assert not at.exception, [e.value for e in at.exception]
    new = at.query_params["task"][0]
    assert any(s.value.startswith(f"Task {new} created") for s in at.success)
    assert any("lccc/chitchat" in w.value for w in at.warning)   # what its units cannot give, said at creation
    assert at.text_input(key="tk-name-1").value == ""             # a fresh form
    links = [b for b in at.get("link_button")]
    assert links and links[0].proto.url.endswith(f"/annotate?task={new}") and links[0].proto.url.startswith("http")


@pytest.mark.slow   # 5 s or more on 2 cores: the fast set keeps tests under that
def test_wrong_access_codes_and_personal_keys_are_guesses_held_back(monkeypatch, tmp_path, default_store_file):
    """Issue 46, item 8: the task's access code and a personal key are throttled as the upload password is (five
    free wrong guesses, then locks; evalcore.pagedata.access). A sixth wrong code in a new session (a new tab) is held,
    with its sentence; so is the right one while locked. A taken name without its key is not a guess."""
    from evalcore.pagedata.access import BUDGET, THROTTLE
    monkeypatch.setattr(THROTTLE, "wrong", {})
    monkeypatch.setattr(THROTTLE, "until", {})
    monkeypatch.setattr(BUDGET, "wrong", {})
    monkeypatch.setattr(THROTTLE, "_clock", lambda: 1000.0)   # a lock lasts while the test looks at it
    db, task = demo_task_store(tmp_path, default_store_file)
    env = {"EVALCORE_DB": db}
    for k in range(5):   # each in a tab of its own: the address ('local' here) is counted, not only the session
        at = _login(run("annotate", monkeypatch, env, task=str(task.task_id)), "ann", f"wrong{k}")
        assert [e.value for e in at.error] == ["That is not this task's access code."]
    at = _login(run("annotate", monkeypatch, env, task=str(task.task_id)), "ann", "wrong5")
    assert [e.value for e in at.error] == ["That is not this task's access code."]   # checked, and now locked
    at = _login(run("annotate", monkeypatch, env, task=str(task.task_id)), "ann", task.access_code)
    assert [e.value for e in at.error][0].startswith("Too many wrong access codes: the next guess is checked in")
    assert f"ann-who-{task.task_id}" not in at.session_state
    monkeypatch.setattr(THROTTLE, "wrong", {})
    monkeypatch.setattr(THROTTLE, "until", {})
    at = _login(run("annotate", monkeypatch, env, task=str(task.task_id)), "ann", task.access_code)
    key = _kept(at, task)
    for k in range(3):   # the name without a key: told it is taken, not counted
        at = _login(run("annotate", monkeypatch, env, task=str(task.task_id)), "ANN", task.access_code)
        assert "is taken" in at.error[0].value
    assert not any(k.startswith("personal-key") for k in THROTTLE.wrong)
    for k in range(6):
        at = _login(run("annotate", monkeypatch, env, task=str(task.task_id)), "ann", task.access_code, f"x{k}")
        assert "That is not ann's personal key" in at.error[0].value.replace("\\", "")
    at = _login(run("annotate", monkeypatch, env, task=str(task.task_id)), "ann", task.access_code, key)
    assert at.error[0].value.startswith("Too many wrong personal keys: the next guess is checked in")
    assert f"ann-who-{task.task_id}" not in at.session_state


def test_a_side_by_side_task_shows_its_ranking_per_dimension(monkeypatch, tmp_path, default_store_file):
    """Issue 46, item 4: Bradley-Terry ratings to one decimal with their notes as sentences under the table (not a
    column cut at 1400 px), and one win-rate matrix per dimension, the dimension named in it."""
    from evalcore.services.tasks import create_task
    db, _ = demo_task_store(tmp_path, default_store_file)
    con = connect(db)
    task = stored.get(con, create_task(con, dataset="demo-zh", mode="pairwise", dimensions=["Info", "Coh"], items=4,
                                       per_item=1, seed=3))
    for _ in range(4):
        unit = stored.next_unit(con, task, "ann")
        stored.answer(con, task, unit, "ann", "Info", 1.0)
        stored.answer(con, task, unit, "ann", "Coh", 0.0)
    con.close()
    at = run("tasks", monkeypatch, {"EVALCORE_DB": db, "EVALCORE_ACCESS": None}, task=str(task.task_id))
    tables = [d.value for d in at.dataframe]
    ranking = next(t for t in tables if "rating" in t.columns)
    assert "note" not in ranking.columns and set(ranking["dimension"]) == {"Info", "Coh"}
    wins = next(t for t in tables if list(t.columns[:2]) == ["dimension", "model"])
    assert set(wins["dimension"]) == {"Info", "Coh"}
    # every vote one way: no finite fit, said as a sentence per dimension under the table
    notes = [t.value for t in at.text if t.value.startswith(("Info: ", "Coh: "))]
    assert sorted(n.split(":")[0] for n in notes) == ["Coh", "Info"]


def test_the_task_picker_and_header_never_show_the_tasks_name(monkeypatch, tmp_path, default_store_file):
    """A rating task's name is the lab's free text and may name a model ("gpt-secret vs llama-secret"): raters see
    'Rating task N (mode, units)' in the picker and above the task, never the name (issue 61, C12)."""
    db, task = demo_task_store(tmp_path, default_store_file)
    con = connect(db)
    con.execute("UPDATE tasks SET name = ? WHERE task_id = ?", ["gpt-secret vs llama-secret", task.task_id])
    con.close()
    env = {"EVALCORE_DB": db}
    for params in ({}, {"task": str(task.task_id)}):
        at = run("annotate", monkeypatch, env, **params)
        shown = [t.value for t in at.text] + [c.value for c in at.caption] + [m.value for m in at.markdown]
        shown += [str(o) for box in at.selectbox for o in box.options]
        assert not any("secret" in str(s) for s in shown), shown
        assert any(f"Rating task {task.task_id} (" in str(s) for s in shown), shown
