"""Inclusion probabilities stored with a rating task's units (issue 63): a stratified task's are units taken over
candidates in each track and model; an active task's (`--sampling active --judge J`) favour the responses the
predictor is unsure about, sum to each model's share before the Poisson draw, keep the floor and the cap, are
seeded, and the draw takes each response as often as its probability says. Refusals leave the store as it was.
The predictor is F1 on a tiny store (support.active_store); the expected shares are worked out below."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcore.analysis import inclusion
from evalcore.core.names import UnknownName
from evalcore.scoring import response_scores
from evalcore.services import active
from evalcore.services import tasks as service
from evalcore.store import connect
from evalcore.store import tasks as stored
from support import fingerprint
from support.active_store import MODELS, RATED, SIZES, build

# 12 units over the two rated tracks (24 and 18 candidates): 4 each first, the other 4 by the room left (20 and
# 14: 2.35 and 1.65, the larger remainder to knowledge) -> 6 and 6, which the round robin gives 2 per model
N = 12
PER_MODEL = {"lab/chitchat": 2, "lab/knowledge": 2}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("active")
    con = connect(folder / "lab.duckdb")
    build(con, folder)
    yield con
    con.close()


def _create(con, **kw) -> int:
    settings = dict(dataset="lab", mode="absolute", dimensions=["Info"], items=N, per_item=1, tracks=RATED, seed=0)
    return service.create_task(con, **{**settings, **kw})


def _f1(con) -> pd.DataFrame:
    frames = [response_scores(con, "lab", t).assign(track=t) for t in RATED]
    values = pd.concat(frames, ignore_index=True)
    return values[values["metric"] == "F1"].rename(columns={"model": "model_a"})


def test_a_stratified_task_stores_taken_over_candidates(lab):
    units = stored.units(lab, _create(lab))
    assert len(units) == N
    for (track, model), part in units.groupby(["track", "model_a"]):
        assert len(part) == PER_MODEL[track]
        assert part["probability"].tolist() == pytest.approx([PER_MODEL[track] / SIZES[track]] * len(part))
    assert set(units.groupby(["track", "model_a"]).groups) == {(t, m) for t in RATED for m in MODELS}


@pytest.mark.parametrize("kw", [dict(sampling="disagreement"), dict(mode="pairwise")])
def test_no_probability_where_the_sample_is_not_a_known_random_one(lab, kw):
    units = stored.units(lab, _create(lab, **kw))
    assert len(units) and units["probability"].isna().all()


def test_the_round_robin_share_per_model_is_what_the_stratified_sample_takes(lab):
    pool = service.candidates(lab, "lab", "absolute", RATED, None)
    for seed in range(3):
        units = service.sample(lab, "lab", "absolute", 17, tracks=RATED, seed=seed)
        per_track = service.shares(pool.groupby("track").size(), 17)
        for track, group in pool.groupby("track"):
            expected = active.per_model(group.groupby("model_a").size(), per_track[track])
            got = units[units["track"] == track].groupby("model_a").size().reindex(MODELS, fill_value=0)
            assert got.to_dict() == expected


def test_active_probabilities_sum_to_the_share_and_favour_the_uncertain(lab):
    pool = service.candidates(lab, "lab", "absolute", RATED, None).reset_index(drop=True)
    pi = active.plan(lab, "lab", pool, service.shares(pool.groupby("track").size(), N), "F1")
    f1 = pool.merge(_f1(lab), on=["track", "item_id", "model_a"], how="left")
    assert f1["value"].notna().all()
    lo, hi = f1["value"].min(), f1["value"].max()   # lab/open has no F1: the range is the rated tracks'
    p = (f1["value"] - lo) / (hi - lo)
    u = p * (1 - p)
    for (track, model), part in pool.groupby(["track", "model_a"]):
        mine, k, m = pi[part.index].to_numpy(), PER_MODEL[track], SIZES[track]
        assert mine.sum() == pytest.approx(k, abs=1e-9)
        assert mine.min() >= inclusion.FLOOR * k / m - 1e-12 and mine.max() <= 1 + 1e-12
        ui = u[part.index].to_numpy()
        order = np.argsort(ui, kind="stable")
        assert (np.diff(mine[order]) >= -1e-12).all()         # more uncertain, never less likely
        assert mine[ui.argmax()] > k / m > mine[ui.argmin()]  # the most uncertain above uniform, the surest below


def test_an_active_task_stores_its_judge_and_each_drawn_units_probability(lab):
    pool = service.candidates(lab, "lab", "absolute", RATED, None).reset_index(drop=True)
    pi = active.plan(lab, "lab", pool, service.shares(pool.groupby("track").size(), N), "F1")
    task_id = _create(lab, sampling="active", judge="F1", seed=5)
    task = stored.get(lab, task_id)
    assert (task.sampling, task.judge, service.describe(task)["judge"]) == ("active", "F1", "F1")
    units = stored.units(lab, task_id)
    expected = pool.assign(probability=pi)[inclusion.draw(pi.to_numpy(), np.random.default_rng(5))]
    key = ["track", "item_id", "model_a", "probability"]
    assert sorted(map(tuple, units[key].to_numpy())) == sorted(map(tuple, expected[key].to_numpy()))
    again = stored.units(lab, _create(lab, sampling="active", judge="F1", seed=5))
    assert again[key].equals(units[key])                          # the same seed, the same units in the same order
    other = stored.units(lab, _create(lab, sampling="active", judge="F1", seed=6))
    assert sorted(map(tuple, other[key].to_numpy())) != sorted(map(tuple, units[key].to_numpy()))


def test_over_many_seeds_each_response_is_drawn_as_often_as_its_probability(lab):
    pool = service.candidates(lab, "lab", "absolute", RATED, None).reset_index(drop=True)
    pi = active.plan(lab, "lab", pool, service.shares(pool.groupby("track").size(), N), "F1").to_numpy()
    for seed in range(3):   # the task's draw is this one: the seeded generator's first numbers, one per candidate
        units = service.sample(lab, "lab", "absolute", N, tracks=RATED, seed=seed, sampling="active", judge="F1")
        drawn = pool[inclusion.draw(pi, np.random.default_rng(seed))]
        assert sorted(zip(units["item_id"], units["model_a"])) == sorted(zip(drawn["item_id"], drawn["model_a"]))
    n = 3000
    draws = np.array([inclusion.draw(pi, np.random.default_rng(s)) for s in range(n)])
    se = np.sqrt(pi * (1 - pi) / n)
    assert (np.abs(draws.mean(axis=0) - pi) <= 4 * se + 1e-12).all()
    sizes = draws.sum(axis=1)   # the realised number of units varies around the 12 asked for
    assert sizes.mean() == pytest.approx(N, abs=4 * np.sqrt((pi * (1 - pi)).sum() / n))
    assert sizes.min() < N < sizes.max()


def test_a_judge_asked_several_times_steers_by_the_spread_of_its_answers(monkeypatch):
    sig = "J|judge:model@host|t:0.7"
    rows = [{"item_id": item, "model": "m1", "judge": "J", "signature": f"{sig}|sample:{s}", "value": v,
             "stats": None} for item, answers in (("a", (1, 1, 1)), ("b", (0, 2, 1)), ("c", (1, 2, 1)), ("d", (2, 2, 2)))
            for s, v in enumerate(answers)]
    monkeypatch.setattr(active, "judge_names", lambda con: ["J"])
    monkeypatch.setattr(active, "tracks", lambda con, dataset: [("t", "chitchat")])
    monkeypatch.setattr(active, "judge_values", lambda con, dataset, track, judge: pd.DataFrame(rows))
    values = active.predictor(None, "lab", "J").set_index("item_id")
    assert values["value"].tolist() == [1, 1, pytest.approx(4 / 3), 2]
    assert values["spread"].tolist() == pytest.approx([0, 1, np.std([1, 2, 1], ddof=1), 0])
    pool = pd.DataFrame({"item_id": list("abcd"), "track": "t", "model_a": "m1", "model_b": None})
    pi = active.plan(None, "lab", pool, {"t": 2}, "J")
    # u = (0, 1, 1/sqrt(3), 0): the sure ones at the floor FLOOR * 2 / 4; the other two share what is left in
    # proportion to u: c (1 + 1/sqrt(3)) = 2 - 2 * floor (neither reaches the cap of 1)
    floor = inclusion.FLOOR * 2 / 4
    c = (2 - 2 * floor) / (1 + 1 / np.sqrt(3))
    assert c < 1
    assert pi.tolist() == pytest.approx([floor, c, c / np.sqrt(3), floor])
    # the same judge at two temperatures is two judges: which one steers must be said
    rows += [{**r, "signature": r["signature"].replace("t:0.7", "t:1.0")} for r in rows]
    with pytest.raises(ValueError, match="2 configurations"):
        active.predictor(None, "lab", "J")
    assert len(active.predictor(None, "lab", sig)) == 4   # one configuration named: its three samples


def _refused(con, match, exc=ValueError, **kw):
    before = fingerprint(con)
    with pytest.raises(exc, match=match):
        _create(con, **kw)
    assert fingerprint(con) == before


def test_refusals_leave_the_store_as_it_was(lab):
    _refused(lab, "no value on 6 of the 48 candidate responses", sampling="active", judge="F1", tracks=None)
    _refused(lab, "needs --judge", sampling="active")
    _refused(lab, "--sampling active only", judge="F1")
    _refused(lab, "single responses", sampling="active", judge="F1", mode="pairwise")
    _refused(lab, "single responses", sampling="active", judge="F1", level="dialogue")
    _refused(lab, "unknown judge or metric", UnknownName, sampling="active", judge="NoSuchMetric")
