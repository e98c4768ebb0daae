"""Correlation statistics against scipy and arithmetic written out here."""
import math

import numpy as np
import pytest
from scipy import stats

from evalcore.analysis.stats import METHODS, correlate, permutation_test, williams

SCIPY = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}


def samples():
    rng = np.random.default_rng(11)
    for trial in range(120):
        n = int(rng.integers(3, 300))
        x = rng.normal(size=n)
        if trial % 3 == 0:
            x = np.round(x, 1)  # ties in the metric
        if trial % 2:
            y = rng.integers(0, 3, n).astype(float)  # a 0-2 human scale: heavy ties
        else:
            y = np.round(0.5 * x + rng.normal(size=n), 1 if trial % 4 else 5)
        yield x, y


@pytest.mark.parametrize("method", METHODS)
def test_r_and_p_equal_scipy(method):
    for x, y in samples():
        got, ref = correlate(x, y, method), SCIPY[method](x, y)
        if np.isnan(ref.statistic):
            assert not got.defined
            continue
        assert got.r == pytest.approx(ref.statistic, abs=1e-12)
        assert got.p == pytest.approx(ref.pvalue, abs=1e-12)
        assert got.n == len(x)


def test_fisher_interval_equals_scipy():
    rng = np.random.default_rng(3)
    x = rng.normal(size=40)
    y = x + rng.normal(size=40)
    got = correlate(x, y, "pearson", confidence=0.9)
    ci = stats.pearsonr(x, y).confidence_interval(confidence_level=0.9)
    assert (got.ci_low, got.ci_high) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert got.ci_method == "fisher-z 90%"


@pytest.mark.parametrize("method", METHODS)
def test_bootstrap_equals_plain_resampling(method):
    """Our weighted-table bootstrap equals resampling indices and asking scipy, draw for draw."""
    rng = np.random.default_rng(5)
    x = np.round(rng.normal(size=80), 1)
    y = rng.integers(0, 3, 80).astype(float)
    got = correlate(x, y, method, bootstrap=200, seed=42)
    draws_rng = np.random.default_rng(42)
    draws = []
    for _ in range(200):
        idx = draws_rng.integers(0, 80, 80)
        draws.append(SCIPY[method](x[idx], y[idx]).statistic)
    draws = np.array(draws)
    low, high = np.quantile(draws[~np.isnan(draws)], [0.025, 0.975])
    assert (got.ci_low, got.ci_high) == pytest.approx((low, high), abs=1e-9)
    assert got.seed == 42 and got.ci_method == "bootstrap-percentile 95% B=200 seed=42"
    assert correlate(x, y, method, bootstrap=200, seed=42) == got  # same seed, same interval


def test_bootstrap_needs_a_seed():
    with pytest.raises(ValueError, match="explicit seed"):
        correlate([1, 2, 3, 4], [1, 3, 2, 4], bootstrap=10)


@pytest.mark.parametrize("x, y, reason", [
    ([1, 2], [2, 1], "n = 2 < 3"),
    ([1, 1, 1, 1], [1, 2, 3, 4], "the metric is constant"),
    ([1, 2, 3, 4], [2, 2, 2, 2], "the human scores are constant"),
    ([np.nan] * 4, [1, 2, 3, 4], "no complete pairs"),
    ([1, np.nan, 3, np.nan], [1, 2, 3, 4], "n = 2 < 3"),
])
def test_degenerate_input_is_undefined_with_a_reason(x, y, reason):
    for method in METHODS:
        got = correlate(x, y, method)
        assert not got.defined and got.reason == reason and math.isnan(got.r)


def test_nan_pairs_are_dropped():
    got = correlate([1, 2, np.nan, 4, 5], [2, 1, 3, np.nan, 6], "spearman")
    ref = stats.spearmanr([1, 2, 5], [2, 1, 6])
    assert got.n == 3 and got.r == pytest.approx(ref.statistic)


def test_williams_by_hand():
    r12, r13, r23, n = 0.8, 0.6, 0.5, 30
    k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(
        2 * k * (n - 1) / (n - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3)
    got = williams(r12, r13, r23, n)
    assert got.t == pytest.approx(t) and got.df == 27
    assert got.p == pytest.approx(stats.t.sf(t, 27))
    assert williams(0.5, 0.4, 0.3, 3).reason == "n = 3 <= 3"


def test_permutation_test():
    x = np.arange(20.0)
    got = permutation_test(x, x * 2 + 1, "spearman", resamples=199, seed=1)
    assert got.r == pytest.approx(1.0) and got.p == pytest.approx(1 / 200)
    again = permutation_test(x, np.sin(x), "pearson", resamples=199, seed=1)
    assert again == permutation_test(x, np.sin(x), "pearson", resamples=199, seed=1)
    assert 0 < again.p <= 1
