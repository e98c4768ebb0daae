"""People-calibrated estimates over a store (evalcore.services.estimate): the numbers are analysis.ppi's on the
store's values (recomputed here from the raw tables), imported ratings count only when declared random, a rating
task's ratings count with their probabilities, and a predictor off the dimension's scale or without values is
refused with the reason."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcore.analysis import ppi
from evalcore.services import estimate as estimating
from evalcore.services import planner
from evalcore.services.tasks import create_task
from evalcore.store import connect
from evalcore.store import tasks as stored_tasks
from support import fingerprint
from support.estimate_store import DATASET, MODELS, build

@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db, ratings, f1 = build(tmp_path_factory.mktemp("estimate"))
    con = connect(db)
    yield con, ratings, f1
    con.close()


def test_imported_ratings_are_refused_unless_declared_random(store):
    con, _, _ = store
    with pytest.raises(estimating.NotRandom, match="not from a rating task.*--assume-random") as refused:
        estimating.estimate(con, DATASET, "Q", "F1")
    assert str(refused.value).startswith("the ratings come from ratings.csv, not from")   # the file, not its rows


def test_the_estimate_is_ppi_on_the_stores_values(store):
    con, ratings, f1 = store
    got = estimating.estimate(con, DATASET, "Q", "F1", assume_random=True)
    rows = got["rows"].set_index("model")
    assert "declared random" in got["assumption"] and "F1" in got["signature"]
    assert set(rows.index) == set(MODELS)
    for m in MODELS:
        y = ratings[ratings["model"] == m].groupby("item_id")["score"].mean()
        f_all = f1.xs(m, level="model")
        e = ppi.finite_mean(y.to_numpy(), f_all[y.index].to_numpy(), f_all.to_numpy(), pi=np.full(20, 20 / 60))
        people = ppi.finite_mean(y.to_numpy(), f_all[y.index].to_numpy(), f_all.to_numpy(), lam=0)
        row = rows.loc[m]
        assert (row["estimate"], row["lower"], row["upper"]) == pytest.approx((e.estimate, e.lower, e.upper))
        assert (row["people_lower"], row["people_upper"]) == pytest.approx((people.lower, people.upper))
        assert (row["n_people"], row["n_predicted"]) == (20, 60)
        assert row["sampling"].startswith("assumed random")
    bounds = got["rows"][["lower", "upper", "people_lower", "people_upper", "anytime_lower", "anytime_upper"]]
    assert ((bounds >= 0) & (bounds <= 2)).all().all()   # a mean of 0-2 ratings: its intervals stay on 0-2
    # alpha's responses copy the reference most: it is first, surely above gamma
    assert rows.loc["alpha", "rank_low"] == 1 and rows.loc["gamma", "rank_high"] == 3
    diffs = got["differences"].set_index(["model_a", "model_b"])
    assert diffs.loc[("alpha", "gamma"), "settled"]


def test_a_predictor_off_the_scale_or_without_values_is_refused(store):
    con, _, _ = store
    with pytest.raises(ValueError, match="no per-response values.*computed there: .*F1"):
        estimating.estimate(con, DATASET, "Q", "NoSuchJudge", assume_random=True)
    con.execute("UPDATE dimensions SET scale_max = 0.5 WHERE dataset = ? AND dimension = 'Q'", [DATASET])
    try:
        with pytest.raises(ValueError, match="off the dimension's scale 0-0.5"):
            estimating.estimate(con, DATASET, "Q", "F1", assume_random=True)
    finally:
        con.execute("UPDATE dimensions SET scale_max = 2 WHERE dataset = ? AND dimension = 'Q'", [DATASET])


def test_a_rating_tasks_ratings_count_with_their_probabilities(store):
    con, _, f1 = store
    before = fingerprint(con)
    task_id = create_task(con, dataset=DATASET, mode="absolute", dimensions=["Coh"], items=30, per_item=1, seed=3,
                          name="calibrate")
    task = stored_tasks.get(con, task_id)
    units = stored_tasks.units(con, task_id)
    for unit in units["unit"][:24]:   # people rate 24 of the 30 drawn units
        row = units[units["unit"] == unit].iloc[0]
        stored_tasks.answer(con, task, int(unit), "ann-9", "Coh", float(round(2 * f1[(row["item_id"], row["model_a"])])))
    got = estimating.estimate(con, DATASET, "Coh", "F1")
    rows = got["rows"].set_index("model")
    assert got["assumption"].startswith("the people's ratings are a random sample drawn by the tool")
    assert rows["n_people"].sum() == 24 and (rows["n_predicted"] == 60).all()
    assert rows["sampling"].str.startswith(f"task {task_id} (stratified").all()
    assert before != fingerprint(con)   # (the task wrote; the estimate itself writes nothing)
    after = fingerprint(con)
    only = estimating.estimate(con, DATASET, "Coh", "F1", task=task_id)   # the task's ratings named: the same
    pd.testing.assert_frame_equal(only["rows"], got["rows"])
    with pytest.raises(ValueError, match="no one rated Coh"):
        estimating.estimate(con, DATASET, "Coh", "F1", task=task_id + 100)
    assert fingerprint(con) == after


def test_a_disagreement_task_is_not_a_random_sample(store):
    con, _, f1 = store
    task_id = create_task(con, dataset=DATASET, mode="absolute", dimensions=["Info"], items=12, per_item=1, seed=1,
                          sampling="disagreement", name="where metrics disagree")
    task = stored_tasks.get(con, task_id)
    for unit in stored_tasks.units(con, task_id)["unit"][:6]:
        stored_tasks.answer(con, task, int(unit), "ann-9", "Info", 1.0)
    with pytest.raises(estimating.NotRandom, match="where the metrics disagree"):
        estimating.estimate(con, DATASET, "Info", "F1")


def test_an_active_tasks_ratings_are_weighted_by_their_stored_probabilities(store):
    con, _, f1 = store
    task_id = create_task(con, dataset=DATASET, mode="absolute", dimensions=["Know"], items=30, per_item=1, seed=5,
                          name="active", sampling="active", judge="F1")
    task = stored_tasks.get(con, task_id)
    units = stored_tasks.units(con, task_id)
    assert units["probability"].notna().all() and task.judge == "F1"
    given = {}   # near 2 x F1, one point off at every third unit: ratings with some spread in every model
    for row in units.itertuples():
        value = float(round(2 * f1[(row.item_id, row.model_a)]))
        given[(row.item_id, row.model_a)] = value if row.unit % 3 else (1.0 if value != 1 else 2.0)
        stored_tasks.answer(con, task, int(row.unit), "ann-7", "Know", given[(row.item_id, row.model_a)])
    got = estimating.estimate(con, DATASET, "Know", "F1")
    rows = got["rows"].set_index("model")
    assert rows["sampling"].str.startswith(f"task {task_id} (active").all()
    for m in MODELS:   # the service's figures are finite_mean's with the stored probabilities (every unit rated)
        mine = units[units["model_a"] == m]
        y = np.array([given[(i, m)] for i in mine["item_id"]], float)
        f_all = f1.xs(m, level="model")
        e = ppi.finite_mean(y, f_all[mine["item_id"]].to_numpy(), f_all.to_numpy(), pi=mine["probability"].to_numpy())
        assert (rows.loc[m, "estimate"], rows.loc[m, "lower"]) == pytest.approx((e.estimate, e.lower), nan_ok=True)
        if e.reason:   # alpha copies its references: every rating 2, no spread seen, no interval, and the row says why
            assert rows.loc[m, "note"] == e.reason and "no spread" in e.reason
            continue
        width = rows.loc[m, "upper"] - rows.loc[m, "lower"]
        assert rows.loc[m, "uniform_width"] > 0 and width > 0
        assert rows.loc[m, "anytime_upper"] - rows.loc[m, "anytime_lower"] >= width
    # what the task's ratings settle (the planner) weighs them the same way: its differences are the people-only ones
    settles = planner.plan(con, "ranking", task=task_id, sd=1.0)["settles"].set_index(["model_a", "model_b"])
    people = rows["people_estimate"].dropna()
    assert len(people) >= 2
    a, b = sorted(people.index)[:2]
    assert settles.loc[(a, b), "difference"] == pytest.approx(people[a] - people[b])
