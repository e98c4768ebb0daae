"""Prediction-powered means (evalcore.analysis.ppi): PPI++ equal to ppi-python's on the same inputs (1e-9), the
arithmetic of three-item cases written out, and the store's finite-population form covering the truth."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evalcore.analysis import ppi


def test_ppi_mean_equals_ppi_python_on_random_inputs():
    ppi_py = pytest.importorskip("ppi_py", reason="pip install -r tests/requirements.txt (ppi-python)")
    rng = np.random.default_rng(0)
    for _ in range(100):
        n, big_n = int(rng.integers(3, 80)), int(rng.integers(5, 900))
        y = rng.integers(0, 3, size=n).astype(float)
        yhat = y * rng.uniform(0, 1) + rng.normal(size=n)
        yu = rng.normal(size=big_n) * rng.uniform(0.1, 3) + rng.uniform(-1, 1)
        for alpha in (0.05, 0.1):
            low, high = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=alpha)
            point = ppi_py.ppi_mean_pointestimate(y, yhat, yu)
            est, lo, hi, _ = ppi.ppi_mean(y, yhat, yu, alpha=alpha)
            assert est == pytest.approx(point[0], abs=1e-9)
            assert (lo, hi) == pytest.approx((low[0], high[0]), abs=1e-9)
        for lam in (0.0, 0.5, 1.0):   # fixed lam: PPI (1) and the classical interval (0)
            low, high = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05, lam=lam)
            assert ppi.ppi_mean(y, yhat, yu, lam=lam)[1:3] == pytest.approx((low[0], high[0]), abs=1e-9)


def test_three_items_written_out():
    y, yhat, yu = [1, 0, 2], [0.5, 0.5, 1.5], [1, 0, 1, 2]
    z = stats.norm.ppf(0.975)
    # lam = 1: mean(Yu) + mean(Y - Yhat) = 1 + (0.5 - 0.5 + 0.5) / 3; variances with ddof 0:
    # var(Yu) = (0 + 1 + 0 + 1) / 4 = 1/2; var(Y - Yhat) = ((1/3)^2 + (2/3)^2 + (1/3)^2) / 3 = 2/9
    est, lo, hi, lam = ppi.ppi_mean(y, yhat, yu, lam=1)
    se = math.sqrt(0.5 / 4 + (2 / 9) / 3)
    assert (est, lo, hi, lam) == pytest.approx((7 / 6, 7 / 6 - z * se, 7 / 6 + z * se, 1))
    # tuned lam: at theta = 7/6 the gradients Y - theta and Yhat - theta, centred, are (0, -1, 1) and
    # (-1/3, -1/3, 2/3): their covariance sums to 1, over n = 3; the predictions' variance (ddof 1, the seven
    # values 0.5 0.5 1.5 1 0 1 2) is 19/42; lam = (1/3) / ((1 + 3/4) * 19/42) = 8/19
    assert ppi.ppi_lambda(y, yhat, yu) == pytest.approx(8 / 19)
    lam = 8 / 19
    est = lam * 1 + np.mean(np.subtract(y, np.multiply(lam, yhat)))
    assert ppi.ppi_mean(y, yhat, yu)[0] == pytest.approx(est)


def test_finite_mean_three_rated_of_five_written_out():
    f_all = [0, 1, 2, 1, 1]       # the predictor on all five units; people rated the first three
    y, f = [1, 1, 2], [0, 1, 2]
    t = stats.t.ppf(0.975, 2)
    # people only (lam 0), uniform pi = 3/5: mean 4/3; s^2 (ddof 1) = ((1/3)^2 * 2 + (2/3)^2) / 2 = 1/3;
    # se^2 = (1 - 3/5) * (1/3) / 3
    e = ppi.finite_mean(y, f, f_all, lam=0)
    se = math.sqrt(0.4 / 9)
    assert (e.estimate, e.se, e.lower, e.upper) == pytest.approx((4 / 3, se, 4 / 3 - t * se, 4 / 3 + t * se))
    assert (e.n, e.big_n) == (3, 5)
    # lam 1: mean(f_all) = 1, residuals y - f = (1, 0, 0) with mean 1/3; same spread as above
    e = ppi.finite_mean(y, f, f_all, lam=1)
    assert (e.estimate, e.se) == pytest.approx((1 + 1 / 3, se))
    # a predictor exact on the rated units, or ratings all alike: no spread seen, so no interval (width 0 would
    # claim a certainty three ratings cannot give)
    for e in (ppi.finite_mean([0, 1, 2], [0, 1, 2], f_all), ppi.finite_mean([1, 1, 1], f, f_all, lam=0)):
        assert "no spread" in e.reason and math.isnan(e.estimate) and (e.n, e.big_n) == (3, 5)
    # unequal probabilities (0.5, 0.5, 1), lam 0: weights 2, 2, 1; Hajek mean (2 + 2 + 2) / 5 = 6/5;
    # variance weights (1 - pi) / pi^2 = 2, 2, 0: se^2 = (2 * (1/5)^2 * 2) / 5^2 * 3/2
    e = ppi.finite_mean(y, f, f_all, pi=[0.5, 0.5, 1.0], lam=0)
    assert (e.estimate, e.se) == pytest.approx((6 / 5, math.sqrt(0.16 / 25 * 1.5)))
    # every unit rated (pi 1): the people's mean exactly, no width
    e = ppi.finite_mean([1, 2, 0, 1, 1], f_all, f_all, pi=[1] * 5)
    assert (e.estimate, e.width) == (1.0, 0.0)


def test_unavailable_says_why():
    assert "at least 2" in ppi.finite_mean([1], [1], [1, 2, 3]).reason
    assert "every unit" in ppi.finite_mean([1, 2], [1, 2], [1, 2, math.nan]).reason
    assert math.isnan(ppi.finite_mean([1], [1], [1, 2, 3]).estimate)


def test_finite_mean_covers_the_truth_uniform_and_weighted():
    """A population of 300 ratings on 0-2 and a predictor correlated with them; 400 samples of 40: the 95% intervals
    cover the population mean 91-99% of the time (binomial noise of 400 draws: about 1.1 points), uniform and with
    probabilities favouring the predictor's middle, and PPI's are narrower than people-only ones."""
    rng = np.random.default_rng(3)
    size, n = 300, 40
    y = np.clip(np.round(rng.normal(1, 0.8, size)), 0, 2)
    f = 0.7 * y + rng.normal(0.3, 0.4, size)
    truth = y.mean()
    p = (f - f.min()) / (f.max() - f.min())
    u = p * (1 - p)
    pi = np.clip(u / u.sum() * n, 0.3 * n / size, 1)
    pi *= n / pi.sum()
    covered = {"uniform": 0, "active": 0, "people": 0}
    widths = {"uniform": 0.0, "people": 0.0}
    for _ in range(400):
        s = rng.choice(size, n, replace=False)
        e, people = ppi.finite_mean(y[s], f[s], f), ppi.finite_mean(y[s], f[s], f, lam=0)
        covered["uniform"] += e.lower <= truth <= e.upper
        covered["people"] += people.lower <= truth <= people.upper
        widths["uniform"] += e.width
        widths["people"] += people.width
        a = np.flatnonzero(rng.uniform(size=size) < pi)
        e = ppi.finite_mean(y[a], f[a], f, pi=pi[a])
        covered["active"] += e.lower <= truth <= e.upper
    for kind, hits in covered.items():
        assert 0.91 <= hits / 400 <= 0.99, (kind, hits / 400)
    assert widths["uniform"] < 0.9 * widths["people"]


def test_difference_rank_intervals_and_strata():
    a = ppi.Estimate(1.0, 0.9, 1.1, 0.05, 50, 100, 0.5)
    b = ppi.Estimate(0.5, 0.4, 0.6, 0.05, 50, 100, 0.5)
    c = ppi.Estimate(0.52, 0.42, 0.62, 0.05, 50, 100, 0.5)
    d = ppi.difference(a, b)
    assert d.estimate == pytest.approx(0.5) and d.se == pytest.approx(math.hypot(0.05, 0.05))
    # a is surely above b and c; b and c cannot be told apart: ranks 1, and 2-3 each
    assert ppi.rank_intervals({"a": a, "b": b, "c": c}) == {"a": (1, 1), "b": (2, 3), "c": (2, 3)}
    # two strata of 100 and 300 units: (100 * 1.0 + 300 * 0.5) / 400, se^2 = (1/4)^2 0.05^2 + (3/4)^2 0.05^2
    whole = ppi.combine([(100, a), (300, b)])
    assert whole.estimate == pytest.approx(0.625)
    assert whole.se == pytest.approx(math.sqrt((0.25 ** 2 + 0.75 ** 2) * 0.05 ** 2))
    assert whole.n == 100 and whole.big_n == 400


def test_uniform_se_is_the_uniform_samples_own():
    f_all = np.linspace(0, 2, 10)
    y, f = [1.0, 2.0, 0.0, 1.0], f_all[[1, 3, 5, 8]]
    e = ppi.finite_mean(y, f, f_all, lam=0.5)
    assert ppi.uniform_se(y, f, f_all, pi=[0.4] * 4, lam=0.5) == pytest.approx(e.se)


def test_a_confidence_sequence_survives_looking_after_every_rating():
    """400 streams of 300 ratings on 0-2 (true mean 1), looked at after every rating from the 10th: the fixed-size
    95% interval misses the truth at some look in far more than 5% of streams; the confidence sequence in at most
    5% (plus binomial noise), and at its planned size it is wider than the fixed one, by what peeking costs."""
    rng = np.random.default_rng(0)
    missed = {"fixed": 0, "anytime": 0}
    n = np.arange(1, 301)
    for _ in range(400):
        x = rng.choice([0.0, 1.0, 2.0], size=300, p=[0.3, 0.4, 0.3])
        mean = np.cumsum(x) / n
        var = (np.cumsum(x * x) - n * mean * mean) / np.maximum(n - 1, 1)
        se = np.sqrt(var / n)
        looks = slice(9, 300)
        missed["fixed"] += bool((abs(mean - 1) > 1.96 * se)[looks].any())
        half = np.array([ppi.anytime_half_width(s, k, planned=100) for s, k in zip(se[looks], n[looks])])
        missed["anytime"] += bool((abs(mean[looks] - 1) > half).any())
    assert missed["fixed"] / 400 > 0.2
    assert missed["anytime"] / 400 <= 0.06
    assert 1.2 < ppi.anytime_half_width(0.1, 100) / (1.96 * 0.1) < 2


def test_a_predictor_constant_on_the_rated_units_gets_no_weight():
    """Five-sixths stored once and computed once differ in the last bit: the tuned lam must not be their noise."""
    f = np.array([5 / 6, 0.8333333333333334, 5 / 6, 5 / 6 + 1e-16])
    e = ppi.finite_mean([2.0, 1.0, 2.0, 2.0], f, np.linspace(0, 1, 40))
    assert e.lam == 0.0
    assert e.estimate == pytest.approx(ppi.finite_mean([2.0, 1.0, 2.0, 2.0], f, np.linspace(0, 1, 40), lam=0).estimate)
    # f varies only on a unit drawn for sure (pi = 1, no weight in the variance): still constant where it counts
    e = ppi.finite_mean([2.0, 1.0, 2.0, 0.0], [5 / 6, 0.8333333333333334, 5 / 6, 0.1], np.linspace(0, 1, 40),
                        pi=[0.2, 0.2, 0.2, 1.0])
    assert e.lam == 0.0


def test_ratings_all_alike_under_unequal_weights_are_withheld_too():
    """Sixteen ratings of 3 with unequal probabilities: the weighted mean does not round back to 3 exactly, and an
    interval 1e-16 wide came out (the bench found it on USR); the residuals' range is what says 'no spread'."""
    rng = np.random.default_rng(0)
    pi = rng.uniform(0.1, 0.6, 16)
    e = ppi.finite_mean(np.full(16, 3.0), rng.uniform(0, 1, 16), rng.uniform(0, 1, 60), pi=pi, lam=0)
    assert "no spread" in e.reason
