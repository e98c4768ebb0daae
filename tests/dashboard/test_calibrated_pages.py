"""People-calibrated estimates and the planner on the pages (issue 63): the Leaderboard's optional calibrated column,
the Judge audit's calibrated section, and on Rating tasks the planner, what a task's ratings settle and an active
task's width beside uniform sampling's. Each shows the numbers the services give (called here directly), a refusal
as its sentence and never a number, and a hostile model name as text."""
from __future__ import annotations

import shutil
import sys

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from evalcore.pagedata.calibration import apart
from evalcore.services import estimate as estimating
from evalcore.services import planner
from evalcore.store import connect
from evalcore.store import tasks as stored_tasks
from support import ROOT
from support.apptest import run
from support.calibration_store import HOSTILE, JUDGE, build

sys.path.insert(0, str(ROOT))
from pages.kit.text import md_escape  # noqa: E402

DATASET = "toy"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build(tmp_path_factory.mktemp("calibrated-pages"))


def service(db, *args, **kwargs):
    con = connect(db)
    try:
        return estimating.estimate(con, *args, **kwargs)
    finally:
        con.close()


def text(est, lo, hi) -> str:
    """The page's cell, written out: two decimals on this 0-2 scale."""
    return f"{est:.2f} [{lo:.2f}, {hi:.2f}]"


def shown(at) -> list[str]:
    return [e.value for e in [*at.markdown, *at.caption, *at.info, *at.warning, *at.error, *at.success]]


def no_markup(at) -> None:
    """Every piece of markdown holding the hostile name's parts holds them escaped (the name stays text)."""
    for value in shown(at):
        for part in ("<b>", "<img", "**b**", "](javascript"):
            assert part not in value, value


def frame_with(at, column):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_the_leaderboards_first_view_has_no_calibrated_column(monkeypatch, store):
    db, _ = store
    at = run("leaderboard", monkeypatch, {"EVALCORE_DB": db})
    assert not [d for d in at.dataframe if "calibrated 95%" in d.value.columns]
    assert not at.warning
    assert "cal_dim" not in at.query_params


def test_the_leaderboards_calibrated_column_is_the_services_estimate(monkeypatch, store):
    db, _ = store
    at = run("leaderboard", monkeypatch, {"EVALCORE_DB": db}, cal_dim="Q", cal_by="F1", cal_random="yes")
    want = service(db, DATASET, "Q", "F1", track="toy/chitchat", assume_random=True)["rows"].set_index("model")
    table = frame_with(at, "calibrated 95%").set_index("model")
    assert set(table.index) == set(want.index) and HOSTILE in table.index   # the name as the cell's text
    for model, row in want.iterrows():
        assert table.loc[model, "calibrated 95%"] == text(row["estimate"], row["lower"], row["upper"])
        assert table.loc[model, "people only 95%"] == text(row["people_estimate"], row["people_lower"],
                                                           row["people_upper"])
        assert table.loc[model, "rated / valued"] == f"{row['n_people']} / {row['n_predicted']}" == "20 / 60"
    words = " ".join(c.value for c in at.caption).replace("\\", "")
    for said in ("PPI++", "F1|tok:en-1", "declared random", "assume the number of ratings was fixed",
                 "anytime 95%"):
        assert said in words
    # the link reproduces the view
    assert {k: at.query_params[k] for k in ("cal_dim", "cal_by", "cal_random")} == \
        {"cal_dim": "Q", "cal_by": "F1", "cal_random": "yes"}
    no_markup(at)


def test_the_leaderboard_shows_a_refusal_as_its_sentence(monkeypatch, store):
    db, _ = store
    with pytest.raises(estimating.NotRandom):   # imported ratings, not declared random
        service(db, DATASET, "Q", "F1", track="toy/chitchat")
    at = run("leaderboard", monkeypatch, {"EVALCORE_DB": db}, cal_dim="Q", cal_by="F1")
    said = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "not from a rating task that sampled them at random" in said
    assert "the box 'Imported ratings are a random sample'" in said and "--assume-random" not in said
    assert not [d for d in at.dataframe if "calibrated 95%" in d.value.columns]
    # a predictor off the dimension's scale (CIDEr reaches past 2): refused, its reason shown
    with pytest.raises(ValueError, match="off the dimension's scale") as refused:
        service(db, DATASET, "Q", "CIDEr", track="toy/chitchat", assume_random=True)
    at = run("leaderboard", monkeypatch, {"EVALCORE_DB": db}, cal_dim="Q", cal_by="CIDEr", cal_random="yes")
    said = " ".join(w.value for w in at.warning).replace("\\", "")
    assert str(refused.value).split(":")[0].replace("\\", "") in said
    assert not [d for d in at.dataframe if "calibrated 95%" in d.value.columns]


def test_the_judge_audit_calibrates_a_chosen_judge(monkeypatch, store):
    db, _ = store
    at = run("judges", monkeypatch, {"EVALCORE_DB": db}, dataset=DATASET, cal_dim="Q", cal_by=JUDGE, cal_random="yes")
    want = service(db, DATASET, "Q", JUDGE, assume_random=True)["rows"].set_index("model")
    table = frame_with(at, "calibrated 95%").set_index("model")
    assert HOSTILE in table.index
    for model, row in want.iterrows():
        assert table.loc[model, "calibrated 95%"] == text(row["estimate"], row["lower"], row["upper"])
        assert table.loc[model, "people only 95%"] == text(row["people_estimate"], row["people_lower"],
                                                           row["people_upper"])
        assert table.loc[model, "gain"] == pytest.approx(row["gain"])
    assert any(f"{JUDGE}|" in c.value.replace("\\", "") for c in at.caption)   # its signature named
    no_markup(at)
    # without the box: the refusal's sentence, no table
    at = run("judges", monkeypatch, {"EVALCORE_DB": db}, dataset=DATASET, cal_dim="Q", cal_by=JUDGE)
    assert any("not from a rating task" in w.value.replace("\\", "") for w in at.warning)
    assert not [d for d in at.dataframe if "calibrated 95%" in d.value.columns]


def tasks_page(monkeypatch, db, **query) -> AppTest:
    monkeypatch.setenv("EVALCORE_DB", str(db))
    monkeypatch.delenv("EVALCORE_ACCESS", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page("pages/views/tasks.py")
    for key, value in query.items():
        at.query_params[key] = value
    at.session_state["tk-plan-open"] = True   # the planner opened
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_planner_gives_the_services_plan_and_says_where_the_spread_came_from(monkeypatch, store):
    db, _ = store
    at = tasks_page(monkeypatch, db)
    at.selectbox(key="tk-plan-dim-toy").select("Q").run()
    at.number_input(key="tk-plan-effect").set_value(0.3).run()
    at.number_input(key="tk-plan-budget").set_value(20).run()
    at.selectbox(key="tk-plan-by-toy").select("F1").run()
    assert not at.exception, [e.value for e in at.exception]
    con = connect(db)
    try:
        models = sorted({m for (m,) in con.execute("SELECT DISTINCT model FROM human_ratings WHERE dimension = 'Q'")
                         .fetchall()})[:2]
        want = planner.plan(con, "difference", dataset=DATASET, dimension="Q", effect=0.3, budget=20, predictor="F1",
                            models=models)
    finally:
        con.close()
    table = frame_with(at, "units needed")
    assert table["units needed"].tolist() == want["rows"]["units_needed"].tolist()
    assert table["power at budget"].tolist() == pytest.approx(want["rows"]["power_at_budget"].tolist())
    assert table["± at budget"].tolist() == pytest.approx(want["rows"]["half_width_at_budget"].tolist())
    assert table["smallest detectable"].tolist() == pytest.approx(want["rows"]["mde_at_budget"].tolist())
    assert table["with"].tolist() == ["people only", "F1 calibrated by people"]
    assert any("pilot: 20 units, 40 ratings" in c.value.replace("\\", "") for c in at.caption)
    # a dimension nobody rated: the spread is assumed, and the page asks for it
    at.selectbox(key="tk-plan-dim-toy").select("Rec").run()
    at.selectbox(key="tk-plan-by-toy").select("(none)").run()
    assert at.number_input(key="tk-plan-sd").value == 1.0
    assert any("assumed: a unit's sd 1" in c.value.replace("\\", "") for c in at.caption)
    # what a question needs and was not given: the sentence, in the page's words
    at.selectbox(key="tk-plan-question").select("correlation").run()
    said = " ".join(i.value for i in at.info).replace("\\", "")
    assert "'Expected correlation' is needed" in said and "--r" not in said


def test_an_active_task_shows_its_width_beside_uniform_samplings_and_never_says_stop(monkeypatch, store):
    db, task_id = store
    at = tasks_page(monkeypatch, db, task=str(task_id))
    # the task's judge is the predictor the page calibrates by, unasked
    assert at.selectbox(key=f"tk-cal-by-{task_id}").value == "F1"
    want = service(db, DATASET, "Know", "F1")["rows"].set_index("model")
    widths = frame_with(at, "uniform width").set_index("model")
    assert HOSTILE in widths.index
    for model, row in want.iterrows():
        assert widths.loc[model, "rated"] == row["n_people"]
        if row["upper"] == row["upper"]:   # an interval where the service has one
            assert widths.loc[model, "width"] == pytest.approx(row["upper"] - row["lower"])
            assert widths.loc[model, "uniform width"] == pytest.approx(row["uniform_width"])
    table = frame_with(at, "anytime 95%").set_index("model")
    for model, row in want.iterrows():
        if row["anytime_lower"] == row["anytime_lower"]:
            assert table.loc[model, "anytime 95%"] == f"[{row['anytime_lower']:.2f}, {row['anytime_upper']:.2f}]"
    # a blank estimate's reason, whole, under the table
    captions = [c.value for c in at.caption]
    for model, row in want[want["note"] != ""].iterrows():
        assert md_escape(f"{model}: {row['note']}") in captions
    # "settled" only where two models' anytime intervals do not overlap
    rows = want.reset_index().sort_values("estimate", ascending=False)
    pairs = [f"{a.model} above {b.model}" for i, a in enumerate(rows.itertuples())
             for b in list(rows.itertuples())[i + 1:] if a.anytime_lower > b.anytime_upper]
    line = next(c.value for c in at.caption if c.value.startswith("Settled whatever the number of looks"))
    assert line.endswith(": " + (md_escape("; ".join(pairs)) if pairs else "none yet."))
    # what the ratings settle: people only, their fixed-size intervals said to be so; nothing says "stop" from them
    settles = frame_with(at, "excludes 0 (fixed size)")
    assert len(settles) == 6   # four models' pairs
    # a pair whose difference has no interval (a side with no spread) is not "no": its cell stays blank
    blank = settles["a - b"].isna()
    assert blank.any() and settles.loc[blank, "excludes 0 (fixed size)"].isna().all()
    assert set(settles.loc[~blank, "excludes 0 (fixed size)"]) <= {"yes", "no"}
    words = " ".join(shown(at)).replace("\\", "").lower()
    assert "you can stop" not in words and "assume the number of ratings was fixed" in words
    no_markup(at)


def test_the_create_form_offers_active_sampling_with_a_judge(monkeypatch, store, tmp_path):
    db = shutil.copy(store[0], tmp_path / "copy.duckdb")
    at = tasks_page(monkeypatch, db)
    at.selectbox(key="tk-sampling-0").select("active")
    at.selectbox(key="tk-judge-0").select("F1")
    at.multiselect(key="tk-dims-0").set_value(["Info"])
    at.number_input(key="tk-items-0").set_value(12)
    next(b for b in at.button if b.label == "Create task").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    con = connect(db)
    try:
        made = stored_tasks.get(con, int(at.query_params["task"]))
        units = stored_tasks.units(con, made.task_id)
    finally:
        con.close()
    assert (made.sampling, made.judge) == ("active", "F1") and units["probability"].notna().all()


def test_settled_is_said_only_of_models_whose_anytime_intervals_do_not_overlap():
    rows = pd.DataFrame({"track": ["t"] * 3, "model": ["a", "b", "c"], "estimate": [1.5, 1.0, 0.2],
                         "anytime_lower": [1.3, 0.5, 0.0], "anytime_upper": [1.7, 1.35, 0.4]})
    # a [1.3, 1.7] overlaps b [0.5, 1.35]; both lie above c [0.0, 0.4]
    assert apart(rows) == ["a above c", "b above c"]
