"""Per-worker quality of a crowd study (evalcore.analysis.crowd_quality): MACE against the published implementation's
output on the same answers (fixtures/mace, README.txt there says how it was made), the planted careless annotators
found, gold pass arithmetic, leave-one-out agreement against scipy and the krippendorff package, the speed and
straight-lining flags, the hourly pay, the reasons in English and Chinese, and USR's real annotators as a sanity check."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore.analysis import crowd_quality as Q
from evalcore.analysis.agreement import krippendorff_alpha
from evalcore.core import i18n
from support import shared

FIXTURES = Path(__file__).parent / "fixtures" / "mace"
# MACE.jar's random restarts are seeded from the clock; twenty runs of it differed by up to 3.7e-5 in a competence
# and 1.1e-3 in an entropy, ours from the kept run by at most 8.9e-6 and 4.1e-4 (fixtures/mace/README.txt)
TOLERANCE = 1e-3


def planted(seed, units, annotators, careless, labels, per_unit=None, right=0.8, liner=None):
    """Seeded answers: rows of one value per annotator (None: not asked), and the true labels. The careful answer the
    truth with probability `right` (else at random), the `careless` at random, `liner` always the middle label."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(len(labels), size=units)
    out = []
    for u in range(units):
        who = range(annotators) if per_unit is None else sorted(rng.choice(annotators, per_unit, replace=False))
        row = [None] * annotators
        for a in who:
            if a == liner:
                row[a] = labels[len(labels) // 2]
            elif a in careless or rng.random() > right:
                row[a] = labels[rng.integers(len(labels))]
            else:
                row[a] = labels[truth[u]]
        out.append(row)
    return out, [labels[t] for t in truth]


FIXTURE_DATA = {"planted": dict(seed=65, units=40, annotators=6, careless={4, 5}, labels=[0, 1, 2]),
                "sparse": dict(seed=2013, units=60, annotators=8, careless={6}, labels=[1, 2, 3, 4, 5], per_unit=4,
                               right=0.75, liner=7)}


def long_frame(rows, dimension="Coh") -> pd.DataFrame:
    """MACE's CSV layout (a row per unit, a column per annotator) as the long frame tasks.latest returns."""
    return pd.DataFrame([(u, f"a{j + 1}", dimension, float(v), np.nan) for u, row in enumerate(rows)
                         for j, v in enumerate(row) if v is not None],
                        columns=["unit", "annotator", "dimension", "value", "seconds"])


def read_csv(name):
    return [[None if v == "" else int(v) for v in line.rstrip("\n").split(",")]
            for line in (FIXTURES / f"{name}.csv").read_text().splitlines(keepends=True)]


@pytest.mark.parametrize("name", FIXTURE_DATA)
def test_fixture_is_the_planted_data(name):
    rows, truth = planted(**FIXTURE_DATA[name])
    assert read_csv(name) == rows
    assert (FIXTURES / f"{name}.key").read_text().split() == [str(t) for t in truth]


@pytest.mark.parametrize("name", FIXTURE_DATA)
@pytest.mark.parametrize("mode", ["vb", "em"])
def test_mace_equals_the_reference_output(name, mode):
    rows = read_csv(name)
    result = Q.mace(long_frame(rows), variational=mode == "vb")
    n = len(rows[0])
    ours = result.competence.set_index("annotator")["competence"].reindex([f"a{j + 1}" for j in range(n)])
    reference = [float(x) for x in (FIXTURES / f"{name}.{mode}.competence").read_text().split("\t")]
    np.testing.assert_allclose(ours.to_numpy(), reference, atol=TOLERANCE, rtol=0)
    labels = result.labels.sort_values("unit")
    assert [str(int(v)) for v in labels["label"]] == (FIXTURES / f"{name}.{mode}.prediction").read_text().split()
    entropies = [float(x) for x in (FIXTURES / f"{name}.{mode}.entropies").read_text().split()]
    np.testing.assert_allclose(labels["entropy"].to_numpy(), entropies, atol=TOLERANCE, rtol=0)


def test_mace_puts_the_careless_lowest_on_every_dimension():
    frames = []
    for k, dim in enumerate(["Coh", "Know"]):
        rows, _truth = planted(100 + k, units=80, annotators=8, careless={2, 6}, labels=[0, 1, 2], per_unit=5)
        frames.append(long_frame(rows, dim))
    result = Q.mace(pd.concat(frames, ignore_index=True))
    for _dim, comp in result.competence.groupby("dimension"):
        assert set(comp.nsmallest(2, "competence")["annotator"]) == {"a3", "a7"}
    per = result.per_annotator()
    assert set(per.nsmallest(2).index) == {"a3", "a7"} and per.drop(["a3", "a7"]).min() > 0.5
    assert set(result.labels["dimension"]) == {"Coh", "Know"}
    # seeded: the same answers give the same estimates
    again = Q.mace(pd.concat(frames, ignore_index=True))
    pd.testing.assert_frame_equal(result.competence, again.competence)


def answers(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["unit", "annotator", "dimension", "value", "seconds"])


def test_gold_agreement_by_hand():
    # gold: unit 1 Coh must be 0; unit 2 Know must be 2 and Coh in [1, 2]; unit 3 is not gold
    gold = pd.DataFrame({"unit": [1, 2, 2], "dimension": ["Coh", "Know", "Coh"], "low": [0, 2, 1], "high": [0, 2, 2]})
    frame = answers([
        (1, "ann", "Coh", 0, 5), (2, "ann", "Know", 2, 5), (2, "ann", "Coh", 1, 5), (3, "ann", "Coh", 0, 5),  # 2 of 2
        (1, "bob", "Coh", 1, 5), (2, "bob", "Know", 2, 5), (2, "bob", "Coh", 0, 5),                        # 0 of 2
        (1, "cat", "Coh", 0, 5), (2, "cat", "Know", 1, 5),                                                 # 1 of 2
        (3, "dan", "Coh", 2, 5)])                                                                          # none
    got = Q.gold_agreement(frame, gold).set_index("annotator")
    assert got.loc[["ann", "bob", "cat", "dan"], "gold_answered"].tolist() == [2, 2, 2, 0]
    assert got.loc[["ann", "bob", "cat", "dan"], "gold_passed"].tolist() == [2, 0, 1, 0]
    assert got.loc[["ann", "bob", "cat"], "gold_share"].tolist() == [1.0, 0.0, 0.5]
    assert math.isnan(got.loc["dan", "gold_share"])


def test_leave_one_out_equals_scipy_and_krippendorff():
    krippendorff = pytest.importorskip("krippendorff")
    # 5 units, three annotators; c skips unit 5, d rated only units 1-2
    table = {"a": [1, 2, 3, 4, 5], "b": [2, 2, 3, 5, 4], "c": [1, 3, 2, 5, None], "d": [4, 4, None, None, None]}
    frame = answers([(u + 1, who, "Coh", v, np.nan) for who, vals in table.items() for u, v in enumerate(vals)
                     if v is not None])
    got = Q.leave_one_out(frame).set_index("annotator")
    # a against the mean of the others on each unit: (2+1+4)/3, (2+3+4)/3, (3+2)/2, (5+5)/2, 4/1
    others = [7 / 3, 3.0, 2.5, 5.0, 4.0]
    assert got.loc["a", "units_shared"] == 5
    assert math.isclose(got.loc["a", "spearman"], stats.spearmanr(table["a"], others).statistic)
    pair = np.array([table["a"], others], float)
    assert math.isclose(got.loc["a", "alpha"], krippendorff.alpha(reliability_data=pair, level_of_measurement="interval"))
    assert math.isclose(got.loc["a", "alpha"], krippendorff_alpha(pair, "interval"))
    # d shares two units only: no value, and the reason says why
    assert got.loc["d", "units_shared"] == 2 and math.isnan(got.loc["d", "spearman"]) and math.isnan(got.loc["d", "alpha"])
    assert got.loc["d", "reason"] == "Fewer than 3 units shared with the others."
    assert got.loc["a", "reason"] == ""


def test_spearman_equals_scipy_with_ties():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, 40).astype(float)
    b = a + rng.integers(0, 2, 40) / 2
    assert math.isclose(Q.spearman(a, b), stats.spearmanr(a, b).statistic, rel_tol=1e-12)
    # a mean of others equal to another up to float noise is a tie (ties.snap), as everywhere ranks are taken
    assert Q.spearman([1, 2, 3], [0.1 + 0.2, 0.3, 0.5]) == Q.spearman([1, 2, 3], [0.3, 0.3, 0.5])
    assert math.isnan(Q.spearman([1, 2, 3], [2, 2, 2]))


def test_alpha_of_pairs_equals_the_coincidence_matrix():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 5, 30).astype(float)
    b = a + rng.normal(0, 1, 30)
    assert math.isclose(Q.alpha_interval_pairs(a, b), krippendorff_alpha(np.array([a, b]), "interval"), rel_tol=1e-9)
    assert math.isnan(Q.alpha_interval_pairs([1, 1], [1, 1]))


def test_too_fast_and_straight_lining_by_hand():
    chars = pd.Series({1: 250, 2: 500, 3: 50, 4: 100, 5: 100, 6: 100})   # floors at 25 a second: 10, 20, 2, 4, 4, 4 s
    rows = []
    for unit in range(1, 7):
        rows += [(unit, "steady", "Coh", unit % 3, 30.0), (unit, "steady", "Know", unit % 2, 31.0)]
        rows += [(unit, "liner", "Coh", 1, 3.0), (unit, "liner", "Know", unit % 3, 3.5)]   # the same Coh everywhere
    rows += [(u, "brief", "Coh", 2, np.nan if u == 3 else 1.0) for u in (1, 2, 3)]   # same value on 3 units only
    got = Q.care(answers(rows), text_chars=chars).set_index("annotator")
    assert got.loc["steady", "too_fast_share"] == 0.0
    # liner: answers at 3 and 3.5 s; floors 10, 20, 2, 4, 4, 4: fast on units 1, 2 (both answers) and 4-6 (both)
    assert got.loc["liner", "too_fast_share"] == 10 / 12
    assert got.loc["brief", "too_fast_share"] == 1.0   # the untimed answer is left out
    assert got["straight_lined"].to_dict() == {"brief": False, "liner": True, "steady": False}
    assert got.loc["liner", "units"] == 6 and got.loc["brief", "units"] == 3
    # a unit's time is its last answer's: steady 31 s a unit, liner 3.5 s
    assert got.loc["steady", "median_seconds"] == 31.0 and got.loc["steady", "total_seconds"] == 6 * 31.0
    assert got.loc["liner", "total_seconds"] == 6 * 3.5 and got.loc["brief", "total_seconds"] == 2.0
    # without the texts' lengths there is no floor
    assert Q.care(answers(rows))["too_fast_share"].isna().all()
    # a lower bar: brief straight-lined at 3 units
    assert Q.care(answers(rows), min_units=3).set_index("annotator").loc["brief", "straight_lined"]


def test_hourly_pay_arithmetic():
    assert Q.hourly_pay(1800, 4.5) == 9.0               # 4.50 for half an hour
    assert math.isclose(Q.hourly_pay(20 * 60, 2.0), 6.0)
    assert math.isnan(Q.hourly_pay(0, 2.0)) and math.isnan(Q.hourly_pay(float("nan"), 2.0))
    seconds = pd.DataFrame({"annotator": ["x", "y", "z"], "total_seconds": [3600.0, 900.0, np.nan]})
    assert Q.pay_frame(seconds, 3.0)["hourly_pay"].tolist()[:2] == [3.0, 12.0]
    each = Q.pay_frame(seconds, pd.Series({"x": 1.0, "y": 2.0, "z": 3.0}))["hourly_pay"]
    assert each.tolist()[:2] == [1.0, 8.0] and math.isnan(each.iloc[2])


def study() -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """40 units by 6 workers on two dimensions; w5 answers at random in 2 s, w6 gives 1 everywhere; units 1-4 gold."""
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 3, size=(41, 2))
    rows = []
    for worker in range(1, 7):
        for unit in range(1, 41):
            for d, dim in enumerate(["Coh", "Know"]):
                if worker == 5:
                    value, secs = rng.integers(0, 3), 2.0 + d
                elif worker == 6:
                    value, secs = 1, 40.0 + d
                else:
                    value = truth[unit, d] if rng.random() < 0.85 else rng.integers(0, 3)
                    secs = 20.0 + 5 * d + rng.random()
                rows.append((unit, f"w{worker}", dim, float(value), secs))
    gold = pd.DataFrame([(u, dim, truth[u, d], truth[u, d]) for u in range(1, 5) for d, dim in enumerate(["Coh", "Know"])],
                        columns=["unit", "dimension", "low", "high"])
    return answers(rows), gold, pd.Series(200, index=range(1, 41))


def test_quality_one_row_per_worker_with_every_column():
    frame, gold, chars = study()
    got = Q.quality(frame, gold=gold, text_chars=chars, pay=2.0).set_index("annotator")
    assert list(got.reset_index().columns) == Q.QUALITY_COLUMNS and len(got) == 6
    assert got["units"].eq(40).all() and got["gold_answered"].eq(4).all()
    assert got.loc["w5", "too_fast_share"] == 1.0 and got.drop("w5")["too_fast_share"].eq(0).all()
    assert got["straight_lined"].to_dict() == {f"w{i}": i == 6 for i in range(1, 7)}
    assert set(got["competence"].nsmallest(2).index) == {"w5", "w6"}
    assert got.loc["w1", "loo_spearman"] > got.loc["w5", "loo_spearman"]
    # w5: 40 units of 3 s (its last answer) = 120 s for 2.00: 60.00 an hour
    assert got.loc["w5", "total_seconds"] == 120.0 and math.isclose(got.loc["w5", "hourly_pay"], 60.0)
    rule = {"gold_min": 0.75, "too_fast_max": 0.1, "straight_lining": False, "competence_min": 0.3}
    assert {name for name, row in got.iterrows() if Q.reasons(row, rule)} == {"w5", "w6"}
    # without the agreement with others, one worker's own answers give the same row
    alone = Q.quality(frame[frame["annotator"] == "w6"], gold=gold, text_chars=chars, pay=2.0, agreement=False)
    assert alone[["loo_spearman", "loo_alpha", "competence"]].isna().all(axis=None)
    own = ["units", "gold_answered", "gold_passed", "gold_share", "too_fast_share", "straight_lined", "median_seconds",
           "total_seconds", "hourly_pay"]
    pd.testing.assert_series_equal(alone.set_index("annotator").loc["w6", own], got.loc["w6", own])


def test_reasons_in_english_and_chinese():
    row = pd.Series({"annotator": "w5", "units": 40, "gold_answered": 4, "gold_passed": 1, "gold_share": 0.25,
                     "too_fast_share": 0.9, "straight_lined": True, "competence": 0.05})
    rule = {"gold_min": 0.75, "too_fast_max": 0.1, "straight_lining": False, "competence_min": 0.3}
    english = Q.reasons(row, rule)
    assert english == [
        "Passed 1 of 4 gold units (25%); the task asks for at least 75%.",
        "Gave 90% of their answers faster than the text can be read; the task allows at most 10%.",
        "Gave the same answer on every unit of a dimension (40 units answered).",
        "Their competence estimate (MACE) is 0.05, below the task's minimum of 0.30."]
    with i18n.speaking("zh-CN"):
        chinese = Q.reasons(row, rule)
    assert len(chinese) == 4 and all(zh != en for zh, en in zip(chinese, english))
    assert "金标准单元" in chinese[0] and "25%" in chinese[0] and "MACE" in chinese[3]
    # a rule that allows all of it, and unknown figures, fail nothing
    assert Q.reasons(row, {"straight_lining": True}) == []
    assert Q.reasons(pd.Series({"gold_share": np.nan, "too_fast_share": np.nan, "competence": np.nan}),
                     rule) == []


def test_usr_annotators_real_data():
    """USR-TopicalChat's five named annotators (three per response): MACE's labels agree with the majority on most
    responses where a majority exists, every competence is a probability, and leave-one-out agreement is positive."""
    data = json.loads(shared("usr", "tc_usr_data.json").read_text())
    rows, unit = [], 0
    for context in data:
        for response in context["responses"]:
            unit += 1
            for dim in ("Understandable", "Uses Knowledge", "Overall"):
                for who, value in zip(context["annotators"], response[dim]):
                    rows.append((unit, who, dim, float(value), np.nan))
    frame = answers(rows)
    result = Q.mace(frame)
    assert result.competence["competence"].between(0, 1).all() and len(result.competence) == 15
    votes = frame.groupby(["dimension", "unit"])["value"].agg(lambda v: v.mode().iloc[0] if v.value_counts().iloc[0] >= 2
                                                              else np.nan)
    merged = result.labels.set_index(["dimension", "unit"])["label"].to_frame().join(votes.rename("majority")).dropna()
    assert (merged["label"] == merged["majority"]).mean() > 0.9
    loo = Q.leave_one_out(frame)
    assert (loo.loc[loo["dimension"] == "Overall", "spearman"] > 0).all()
