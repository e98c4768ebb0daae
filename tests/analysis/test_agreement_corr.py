"""Correlation agreement by definition (pairwise, leave-one-out, item mean), FED's outlier rule, bootstrap
intervals that count resamples without a value, and Fleiss' kappa stating its targets: every expected value is
hand arithmetic written out here or an independent library (scipy, statsmodels)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore.analysis import agreement as A
from evalcore.analysis import agreement_corr as C
from evalcore.analysis.stats import interval

inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")


def frame(scores: dict[str, list[float]], dimension: str = "Coh", level: str = "turn") -> pd.DataFrame:
    """agreement.ratings' columns from {annotator: [score per unit]} (NaN: not rated), slots in annotator order."""
    rows = []
    for slot, (who, values) in enumerate(scores.items(), 1):
        rows += [{"track": "t", "dimension": dimension, "level": level, "unit": f"u{k}", "annotator": who,
                  "slot": slot, "score": float(v)} for k, v in enumerate(values) if not math.isnan(v)]
    return pd.DataFrame(rows)


def test_the_three_definitions_differ_as_worked_out_by_hand():
    """A = B = 1 2 3 4 and C = 2 1 4 3 on four targets, Pearson.
    pairwise: r(A,B) = 1; r(A,C) = r(B,C): deviations (-1.5 -.5 .5 1.5) and (-.5 -1.5 1.5 .5), products sum 3,
      squares 5 and 5, r = 3/5; mean (1 + .6 + .6) / 3 = 0.7333.
    leave-one-out: A against mean(B, C) = 1.5 1.5 3.5 3.5 (deviations -1 -1 1 1): products 4, r = 4/sqrt(5*4);
      B the same; C against mean(A, B) = 1 2 3 4: r = .6; mean (2 * 0.8944 + .6) / 3 = 0.7963.
    item mean: targets' means 4/3 5/3 10/3 11/3 (mean 2.5) each stands beside 3 annotations; covariance sum
      3 * sum (m - 2.5)^2 = 3 * 148/36 = y's own sum of squares; x's sum of squares 6 * 2.25 + 6 * .25 = 15;
      r = sqrt(12.333 / 15) = 0.9068: an annotation is correlated with a mean it is part of."""
    f = frame({"A": [1, 2, 3, 4], "B": [1, 2, 3, 4], "C": [2, 1, 4, 3]})
    out = C.correlation_agreement(f, methods=["pearson"], bootstrap=0).set_index("statistic")
    assert out.loc["corr_pairwise_pearson", "value"] == pytest.approx((1 + 0.6 + 0.6) / 3)
    assert out.loc["corr_loo_pearson", "value"] == pytest.approx((2 * 4 / math.sqrt(20) + 0.6) / 3)
    assert out.loc["corr_item_mean_pearson", "value"] == pytest.approx(math.sqrt((3 * 148 / 36) / 15))
    assert out.loc["corr_pairwise_pearson", "value"] < out.loc["corr_loo_pearson", "value"] \
        < out.loc["corr_item_mean_pearson", "value"]
    assert out.loc["corr_pairwise_pearson", "note"] == "3 pairs averaged"
    assert out.loc["corr_item_mean_pearson", "note"] == "12 annotations pooled"
    assert out["definition"].str.contains("USR|FED|ceiling").all()


def test_each_method_equals_scipy_on_each_pair():
    rng = np.random.default_rng(3)
    truth = rng.integers(1, 6, 40)
    scores = {a: np.clip(truth + rng.integers(-1, 2, 40), 1, 5) for a in "abc"}
    out = C.correlation_agreement(frame(scores), bootstrap=0).set_index("statistic")
    for method, fn in (("spearman", stats.spearmanr), ("pearson", stats.pearsonr), ("kendall", stats.kendalltau)):
        pairs = [fn(scores[x], scores[y])[0] for x, y in (("a", "b"), ("a", "c"), ("b", "c"))]
        assert out.loc[f"corr_pairwise_{method}", "value"] == pytest.approx(np.mean(pairs), abs=1e-12)


def test_slots_compare_positions_where_ids_never_meet():
    """Crowd data: every target rated by two different workers. By ids no two workers share three targets (no
    value); by slots (first and second rating of each target) it is the correlation of the two columns."""
    first, second = [1, 2, 3, 4, 5, 1], [1, 3, 3, 5, 4, 2]
    rows = []
    for k, (x, y) in enumerate(zip(first, second)):
        rows += [{"track": "t", "dimension": "Coh", "level": "turn", "unit": f"u{k}", "annotator": f"w{2 * k}",
                  "slot": 1, "score": float(x)},
                 {"track": "t", "dimension": "Coh", "level": "turn", "unit": f"u{k}", "annotator": f"w{2 * k + 1}",
                  "slot": 2, "score": float(y)}]
    f = pd.DataFrame(rows)
    by_id = C.correlation_agreement(f, statistics=["corr_pairwise"], methods=["spearman"], bootstrap=0).iloc[0]
    assert np.isnan(by_id["value"]) and by_id["note"].startswith("no value")
    by_slot = C.correlation_agreement(f, statistics=["corr_pairwise"], methods=["spearman"], raters="slots",
                                      bootstrap=0).iloc[0]
    assert by_slot["value"] == pytest.approx(stats.spearmanr(first, second)[0])
    assert by_slot["annotators"] == "slots: 2"


def test_fed_outlier_rule_removes_one_annotation_per_target():
    """u0: 1 1 1 3 2, mean 1.6, distances .6 .6 .6 1.4 .4: the 3 goes. u1: all 2: nothing. u2: 1 3 2, mean 2,
    distances 1 1 0: the first stored of the two (the 1). u3: rated twice: left as it is. A yes/no question
    is left as it is (FED's own figures for those match only without the rule)."""
    rows = []
    for unit, scores in (("u0", [1, 1, 1, 3, 2]), ("u1", [2, 2, 2, 2, 2]), ("u2", [1, 3, 2]), ("u3", [0, 2])):
        rows += [{"track": "t", "dimension": "Coh", "level": "turn", "unit": unit, "annotator": f"a{k}",
                  "slot": k + 1, "score": float(s)} for k, s in enumerate(scores)]
    binary = [{"track": "t", "dimension": "Yes", "level": "turn", "unit": f"u{k}", "annotator": f"a{j}",
               "slot": j + 1, "score": float(j == 0)} for k in range(3) for j in range(4)]
    kept, removed = C.exclude_outliers(pd.DataFrame(rows + binary), "fed")
    left = kept[kept["dimension"] == "Coh"].groupby("unit")["score"].apply(list).to_dict()
    assert left == {"u0": [1, 1, 1, 2], "u1": [2] * 5, "u2": [3, 2], "u3": [0, 2]}
    counts = removed.set_index("dimension")
    assert counts.loc["Coh", "removed"] == 2 and counts.loc["Coh", "annotations"] == 15
    assert counts.loc["Yes", "removed"] == 0 and "two values" in counts.loc["Yes", "note"]
    assert (kept["dimension"] == "Yes").sum() == 12
    nothing, none_removed = C.exclude_outliers(pd.DataFrame(rows), "none")
    assert len(nothing) == len(rows) and none_removed.empty


def test_interval_counts_resamples_without_a_value_and_withholds_past_five_percent():
    values = np.arange(95, dtype=float)
    lo, hi, note = interval(np.concatenate([values, [np.nan] * 5]))   # 5 of 100: at the limit, computed
    assert (lo, hi) == pytest.approx(tuple(np.quantile(values, [0.025, 0.975])))
    assert note == "5 of 100 resamples had no value and are left out"
    lo, hi, note = interval(np.concatenate([values[:94], [np.nan] * 6]))
    assert np.isnan(lo) and np.isnan(hi)
    assert note == "interval withheld: 6 of 100 resamples (6.0%) had no value (more than 5%)"
    assert interval(values)[2] == ""


def test_alpha_on_a_nearly_unanimous_question_withholds_its_interval():
    """40 targets, 2 raters, every rating 1 except one target rated (1, 0): a resample without that target has
    no disagreement to expect and no alpha. P(it is missed) = (39/40)^40 = 0.36, so about a third of the
    resamples have no value: the interval is withheld, the count named."""
    f = frame({"a": [1.0] * 40, "b": [1.0] * 39 + [0.0]}, dimension="Yes")
    out = A.agreement_of(f, bootstrap=1000, seed=0).set_index("statistic")
    row = out.loc["krippendorff_alpha_nominal"]
    assert not np.isnan(row["value"]) and np.isnan(row["ci_low"]) and np.isnan(row["ci_high"])
    failed = int(row["note"].split(" of ")[0].split()[-1].replace(",", ""))
    assert 300 < failed < 420 and row["note"].startswith("interval withheld:")
    assert (39 / 40) ** 40 == pytest.approx(0.363, abs=1e-3)


def test_fleiss_kappa_states_the_targets_it_used():
    """30 targets: 11 rated by 3 people, 10 by 2, 9 by 4. Fleiss' kappa needs one number of raters: it uses the
    11 (the most common) and says so; its value equals statsmodels' on those 11."""
    rng = np.random.default_rng(5)
    rows, counts = [], []
    for k, m in enumerate([3] * 11 + [2] * 10 + [4] * 9):
        scores = rng.integers(0, 3, m)
        rows += [{"track": "t", "dimension": "Coh", "level": "turn", "unit": f"u{k:02d}", "annotator": f"a{j}",
                  "slot": j + 1, "score": float(s)} for j, s in enumerate(scores)]
        if m == 3:
            counts.append(np.bincount(scores, minlength=3))
    out = A.agreement_of(pd.DataFrame(rows), bootstrap=0).set_index("statistic").loc["fleiss_kappa"]
    assert out["n_items"] == 11
    assert out["value"] == pytest.approx(inter_rater.fleiss_kappa(np.array(counts)), abs=1e-12)
    assert out["note"] == ("over the 11 of 30 targets rated by 3 people (the most common number; Fleiss' kappa needs "
                           "the same number of raters per target); left out: 10 by 2, 9 by 4")


def test_turn_and_dialogue_ratings_are_never_pooled():
    turns = frame({"a": [0, 1, 2, 2], "b": [0, 1, 2, 1]})
    dialogues = frame({"a": [2, 2, 0, 1], "b": [2, 1, 0, 1]}, level="dialogue")
    out = C.correlation_agreement(pd.concat([turns, dialogues]), statistics=["corr_pairwise"], methods=["pearson"],
                                  bootstrap=0).set_index("level")
    assert out.loc["turn", "value"] == pytest.approx(stats.pearsonr([0, 1, 2, 2], [0, 1, 2, 1])[0])
    assert out.loc["dialogue", "value"] == pytest.approx(stats.pearsonr([2, 2, 0, 1], [2, 1, 0, 1])[0])


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
@pytest.mark.parametrize("name", ["corr_pairwise", "corr_loo", "corr_item_mean"])
def test_all_draws_at_once_equal_one_draw_at_a_time(name, method):
    """The bootstrap's values computed for every draw together (draw_values: resampled targets as weights) equal
    the definition applied to each resampled matrix in turn, NaN for NaN: ratings with ties, targets some raters
    skipped, a rater who gave one score throughout, and few targets, so that some draws have no value."""
    from evalcore.analysis.agreement_corr import draw_values, statistic

    rng = np.random.default_rng(7)
    for targets, raters in ((40, 6), (5, 3), (12, 4)):
        scores = rng.integers(0, 3, size=(targets, raters)).astype(float)
        scores[rng.random(scores.shape) < 0.3] = np.nan
        scores[:, -1] = np.where(np.isnan(scores[:, -1]), np.nan, 1.0)   # a constant rater
        draws = rng.integers(0, targets, size=(200, targets))
        one_at_a_time = np.array([statistic(name, scores[d], method)[0] for d in draws])
        together = draw_values(name, scores, method, draws)
        assert np.array_equal(np.isnan(together), np.isnan(one_at_a_time))
        assert together[~np.isnan(together)] == pytest.approx(one_at_a_time[~np.isnan(one_at_a_time)], abs=1e-12)
