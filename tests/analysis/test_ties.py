"""Values equal up to float noise are ties (issue 61, item 17): 3 x (17/18) averages to 0.9444444444444443 and
2 x (17/18) to 0.9444444444444444, and ranking them apart gave Spearman -0.7379 (p 0.262) and Kendall -0.5477
where the exact values give -7/9 (p 0.222) and -0.6. The same case is built at turn level (a response's human
score is the mean of 3 or 2 annotators), dialogue level (a dialogue's metric value is the mean of 3 or 2 turns) and
system level (a model's metric value is the mean of 3 or 2 responses), and every statistic is checked against
scipy on the EXACT values: fractions.Fraction means converted to float once, so ties are real ties."""
import json
import shutil
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore.analysis.agreement import agreement_of, cohen_kappa, krippendorff_alpha
from evalcore.analysis.correlate import correlations, human_scores, metric_scores
from evalcore.analysis.leaderboard import leaderboard
from evalcore.analysis.rank_ci import bootstrap_ranks, competition_ranks
from evalcore.analysis.stats import correlate, permutation_test
from evalcore.analysis.ties import snap
from evalcore.analysis.trust import trust
from evalcore.ingest.formats.items import import_items
from evalcore.ingest.formats.ratings import import_ratings
from evalcore.ingest.formats.responses import import_responses
from evalcore.ingest.formats.scores import import_scores
from evalcore.store import connect

T = F(17, 18)
NOISY = (sum([17 / 18] * 3) / 3, sum([17 / 18] * 2) / 2)   # what averaging makes of the same number

# The case: x ties at its two largest values (one made of 3 values, one of 2), y = 0.1, 0.1, 0.3, 0.2.
# Per track: item -> (dialogue, {model: (metric value, [annotators' scores])}).
CASES = {
    # turn: the human score of a response is the mean of its annotators' (3 x 17/18 against 2 x 17/18)
    "tie/turn": {"t1": ("t1", {"m": (F(1, 10), [T, T, T])}), "t2": ("t2", {"m": (F(1, 10), [T, T])}),
                 "t3": ("t3", {"m": (F(3, 10), [F(1, 2)] * 2)}), "t4": ("t4", {"m": (F(2, 10), [F(1, 5)] * 2)})},
    # dialogue: a dialogue's metric value is the mean of its turns' (d1: 3 turns, d2: 2 turns)
    "tie/dialogue": {"a1": ("d1", {"m": (T, [F(1, 10)])}), "a2": ("d1", {"m": (T, [F(1, 10)])}),
                     "a3": ("d1", {"m": (T, [F(1, 10)])}), "b1": ("d2", {"m": (T, [F(1, 10)])}),
                     "b2": ("d2", {"m": (T, [F(1, 10)])}), "c1": ("d3", {"m": (F(1, 2), [F(3, 10)])}),
                     "e1": ("d4", {"m": (F(1, 5), [F(2, 10)])})},
    # system: a model's metric value is the mean of its responses' (m1: 3 responses, m2: 2)
    "tie/system": {"s1": ("s1", {"m1": (T, [F(1, 10)]), "m2": (T, [F(1, 10)]), "m3": (F(1, 2), [F(3, 10)]),
                                 "m4": (F(1, 5), [F(2, 10)])}),
                   "s2": ("s2", {"m1": (T, [F(1, 10)]), "m2": (T, [F(1, 10)])}),
                   "s3": ("s3", {"m1": (T, [F(1, 10)])})},
}
LEVEL = {"tie/turn": "turn", "tie/dialogue": "dialogue", "tie/system": "system"}


def _mean(values):
    return sum(values, F(0)) / len(values)


def exact_units(track: str) -> tuple[list[float], list[float]]:
    """(metric, human) per unit of the track's level, as exact means converted to float once."""
    units: dict = {}
    for item, (dialogue, answers) in CASES[track].items():
        for model, (value, scores) in answers.items():
            key = {"turn": (item, model), "dialogue": (dialogue, model), "system": model}[LEVEL[track]]
            units.setdefault(key, ([], []))
            units[key][0].append(value)
            units[key][1].append(_mean(scores))   # a response's score: the mean of its annotators'
    keys = sorted(units)
    return [float(_mean(units[k][0])) for k in keys], [float(_mean(units[k][1])) for k in keys]


@pytest.fixture(scope="module")
def store(tmp_path_factory, empty_store_file):
    tmp = tmp_path_factory.mktemp("ties")
    shutil.copyfile(empty_store_file, tmp / "s.duckdb")
    con = connect(tmp / "s.duckdb")
    items = [{"item_id": item, "dataset": "tie", "track": track, "dialogue_id": dialogue, "context": ["你好"],
              "references": ["好"]} for track, case in CASES.items() for item, (dialogue, _) in case.items()]
    (tmp / "i.jsonl").write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    import_items(con, tmp / "i.jsonl")
    for track, case in CASES.items():
        rows = [(item, model, value, scores) for item, (_, answers) in case.items()
                for model, (value, scores) in answers.items()]
        (tmp / "r.csv").write_text("item_id,model,response\n" + "".join(f"{i},{m},答{i}{m}\n" for i, m, _, _ in rows),
                                   encoding="utf-8")
        import_responses(con, tmp / "r.csv", dataset="tie", track=track)
        (tmp / "s.csv").write_text("item_id,model,value\n" + "".join(f"{i},{m},{float(v)!r}\n" for i, m, v, _ in rows),
                                   encoding="utf-8")
        import_scores(con, tmp / "s.csv", dataset="tie", track=track, metric="M", signature="ties",
                      higher_is_better=True)
        (tmp / "h.csv").write_text("item_id,model,annotator,dimension,score\n" + "".join(
            f"{i},{m},a{k},Q,{float(s)!r}\n" for i, m, _, scores in rows for k, s in enumerate(scores)),
            encoding="utf-8")
        import_ratings(con, tmp / "h.csv", dataset="tie", track=track, scales={"Q": (0, 1)})
    # the same metric times 7: the same correlation, computed with other rounding (trust's ranks)
    rows = [(item, model, value) for item, (_, answers) in CASES["tie/turn"].items()
            for model, (value, _) in answers.items()]
    (tmp / "s7.csv").write_text("item_id,model,value\n" + "".join(f"{i},{m},{float(v) * 7!r}\n" for i, m, v in rows),
                                encoding="utf-8")
    import_scores(con, tmp / "s7.csv", dataset="tie", track="tie/turn", metric="M7", signature="ties",
                  higher_is_better=True)
    yield con
    con.close()


def test_averaging_breaks_the_tie_in_floats():
    """The case is real: the float means differ, and scipy on them gives the issue's wrong numbers."""
    assert NOISY == (0.9444444444444443, 0.9444444444444444)
    x, y = [*NOISY, 0.5, 0.2], [0.1, 0.1, 0.3, 0.2]
    assert stats.spearmanr(x, y).statistic == pytest.approx(-0.7379, abs=1e-4)
    assert stats.kendalltau(x, y).statistic == pytest.approx(-0.5477, abs=1e-4)
    exact = [float(T), float(T), 0.5, 0.2]
    assert stats.spearmanr(exact, y).statistic == pytest.approx(-7 / 9, abs=1e-12)
    assert stats.kendalltau(exact, y).statistic == pytest.approx(-0.6, abs=1e-12)


@pytest.mark.parametrize("track", sorted(CASES))
def test_store_values_carry_the_noise(store, track):
    """At each level the store's own aggregation makes the two tied values differ in the last digit (else the
    test below would prove nothing)."""
    level = LEVEL[track]
    side = (human_scores(store, "tie", track, level) if level == "turn"
            else metric_scores(store, "tie", track, level, "computed", "default", None))
    assert set(NOISY) <= set(side["value"])


@pytest.mark.parametrize("track", sorted(CASES))
def test_correlations_equal_scipy_on_exact_values(store, track):
    x, y = exact_units(track)
    assert len(x) == 4
    got = correlations(store, "tie", track, level=LEVEL[track], methods=["pearson", "spearman", "kendall"])
    got = got[(got.metric == "M") & (got.dimension == "Q")].set_index("method")
    for method, ref in (("pearson", stats.pearsonr(x, y)), ("spearman", stats.spearmanr(x, y)),
                        ("kendall", stats.kendalltau(x, y))):
        assert got.loc[method, "n"] == 4
        assert got.loc[method, "r"] == pytest.approx(ref.statistic, abs=1e-12), method
        assert got.loc[method, "p"] == pytest.approx(ref.pvalue, abs=1e-12), method
    assert got.loc["spearman", "r"] == pytest.approx(-7 / 9, abs=1e-12)
    assert got.loc["kendall", "r"] == pytest.approx(-0.6, abs=1e-12)


@pytest.mark.parametrize("track", sorted(CASES))
def test_trust_uses_the_tie(store, track):
    """Metric trust's cell at each level is the correlation on exact values, for every ranking method."""
    x, y = exact_units(track)
    for method, ref in (("spearman", stats.spearmanr(x, y)), ("kendall", stats.kendalltau(x, y))):
        frame = trust(store, "tie", level=LEVEL[track], method=method, dimension="Q")
        cell = frame[(frame.metric == "M") & (frame.track == track)].iloc[0]
        assert cell["r"] == pytest.approx(ref.statistic, abs=1e-12)
        assert cell["p"] == pytest.approx(ref.pvalue, abs=1e-12)


def test_trust_ranks_equal_correlations_together(store):
    """M and 7 x M correlate equally with people; their r differ in the last digit, their rank does not."""
    frame = trust(store, "tie", level="turn", method="pearson", dimension="Q")
    cells = frame[frame.track == "tie/turn"].set_index("metric")
    assert cells.loc["M", "r"] == pytest.approx(cells.loc["M7", "r"], abs=1e-15)
    assert cells.loc["M", "rank"] == cells.loc["M7", "rank"] == 1


def test_correlate_bootstrap_and_permutation_see_the_tie():
    """The resampled statistics work on the same tie groups: the bootstrap interval and the permutation test of
    the noisy values equal those of the exact ones."""
    x_noisy, x_exact, y = [*NOISY, 0.5, 0.2, 0.7], [float(T), float(T), 0.5, 0.2, 0.7], [0.1, 0.1, 0.3, 0.2, 0.4]
    for method in ("pearson", "spearman", "kendall"):
        a = correlate(x_noisy, y, method, bootstrap=200, seed=3)
        b = correlate(x_exact, y, method, bootstrap=200, seed=3)
        assert (a.r, a.p, a.ci_low, a.ci_high) == pytest.approx((b.r, b.p, b.ci_low, b.ci_high), abs=1e-12)
        assert permutation_test(x_noisy, y, method, resamples=200, seed=3).p == \
            permutation_test(x_exact, y, method, resamples=200, seed=3).p


def test_leaderboard_ranks_tied_models_together(store):
    """m1 (three responses of 17/18) and m2 (two) have the same mean: they share rank 1, m3 and m4 follow."""
    board = leaderboard(store, "tie", "tie/system", rank_by="M", partial=True, resamples=0).set_index("model")
    assert board.loc["m1", "M"] != board.loc["m2", "M"]   # the stored means differ in the last digit
    assert board["rank"].to_dict() == {"m1": 1, "m2": 1, "m3": 3, "m4": 4}


def test_competition_ranks_and_rank_intervals_tie():
    assert competition_ranks(np.array([*NOISY, 0.5]), True).tolist() == [1, 1, 3]
    assert competition_ranks(np.array([[*NOISY, 0.5], [NOISY[1], NOISY[0], 0.99]]), False).tolist() == \
        [[2, 2, 1], [1, 1, 3]]
    # a and b have the value 17/18 on every item they answered (b on 3 of 5): every resample's mean of either is
    # 17/18 exactly, computed as different sums over different counts; they tie in every resample
    t = 17 / 18
    per_item = {"a": np.full((5, 1), t), "b": np.array([[t], [t], [t], [np.nan], [np.nan]]),
                "c": np.full((5, 1), 0.5)}
    got = bootstrap_ranks(per_item, "Q", True, resamples=300, seed=1)
    assert got == {"a": (1.0, 1.0), "b": (1.0, 1.0), "c": (3.0, 3.0)}


def test_agreement_categories_tie():
    """Two annotators who gave the same scores (one set written as sums that carry noise) agree perfectly:
    the noise makes no new category."""
    a = [0.1 + 0.2, 0.5, 1.0, 0.5]
    b = [0.3, 0.5, 1.0, 0.5]
    assert a[0] != b[0]
    for kind in ("unweighted", "linear", "quadratic"):
        assert cohen_kappa(a, b, kind) == pytest.approx(1.0, abs=1e-12)
    assert krippendorff_alpha(np.array([a, b]), "ordinal") == pytest.approx(1.0, abs=1e-12)
    frame = pd.DataFrame({"track": "t", "dimension": "Q", "unit": [f"u{k}" for k in range(4)] * 2,
                          "annotator": ["x"] * 4 + ["y"] * 4, "score": a + b})
    out = agreement_of(frame, bootstrap=0).set_index("statistic")["value"]
    assert out["cohen_kappa_unweighted"] == pytest.approx(1.0, abs=1e-12)
    assert out["krippendorff_alpha_nominal"] == pytest.approx(1.0, abs=1e-12)


def test_snap_ties_only_noise():
    t = 17 / 18
    got = snap(np.array([NOISY[0], t, np.nan, np.inf, 1e308, np.inf, 0.1 + 0.2, 0.3, 1e-300, 0.0, t * (1 + 1e-9)]))
    assert got[0] == got[1] == NOISY[0]              # one value for the tie
    assert np.isnan(got[2]) and got[3] == got[5] == np.inf and got[4] == 1e308
    assert got[6] == got[7] == 0.3
    assert got[8] == 1e-300 and got[9] == 0.0        # relative: tiny values are not noise of zero
    assert got[10] == t * (1 + 1e-9)                 # a difference of one part in 10^9 is a difference
    plain = np.array([0.5, 0.25, 0.5])
    assert snap(plain) is plain                      # nothing to snap: the array itself
