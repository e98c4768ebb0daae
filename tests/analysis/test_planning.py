"""The planner (evalcore.analysis.planning): sample sizes equal to the textbook formulas written out here, variance
components recovered from simulated ratings, and predicted power equal to the power realised by the tool's own
intervals on simulated data (the bench measures it on released data: bench/ppi_coverage.py)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore.analysis import planning, ppi


def t_power(effect: float, se: float, df: int, alpha: float = 0.05) -> float:
    """Normal power with the t critical value at df (what the tool's intervals use), written out with scipy."""
    crit = stats.t.ppf(1 - alpha / 2, df)
    return stats.norm.cdf(effect / se - crit) + stats.norm.cdf(-effect / se - crit)


def test_units_for_a_difference_are_the_normal_formula_with_the_t_critical_value():
    # the z formula, (z_0.975 + z_0.8)^2 (sd_a^2 + sd_b^2) / effect^2 = 7.849 * 2 / 0.25 = 62.8, says 63 per system;
    # with the t critical value at n - 1 (the intervals' own) the least n reaching 0.8 is 65
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert math.ceil(z * z * 2 / 0.25) == 63
    spread = planning.assumed(1.0)
    got = planning.plan_difference(spread, spread, 0.5)
    expected = next(n for n in range(2, 1000) if t_power(0.5, math.sqrt(2 / n), n - 1) >= 0.8)
    assert got.units_needed == expected == 65
    assert "assumed" in got.source
    # at a budget: power, half width t * se and the smallest detectable effect (t + z_0.8) * se
    got = planning.plan_difference(spread, spread, 0.5, budget=100)
    se, t = math.sqrt(2 / 100), stats.t.ppf(0.975, 99)
    assert got.half_width_at_budget == pytest.approx(t * se)
    assert got.mde_at_budget == pytest.approx((t + stats.norm.ppf(0.8)) * se)
    assert got.power_at_budget == pytest.approx(t_power(0.5, se, 99))
    # a finite population of 100 per system: the factor (1 - n/M) lowers what is needed
    assert planning.plan_difference(spread, spread, 0.5, population=100).units_needed < 65
    # K raters: between 0.5 + within 1.0 / K; a predictor of correlation rho leaves (1 - rho^2) of it
    spread = planning.Spread(0.5, 1.0, "assumed")
    assert spread.sd(raters=2) == pytest.approx(1.0)
    assert spread.sd(raters=2, rho=0.6) == pytest.approx(0.8)


def test_correlation_and_agreement_are_the_textbook_numbers():
    # Fisher z: n = ((z_0.975 + z_0.8) / atanh(0.3))^2 + 3 = 84.3 -> 85
    assert planning.plan_correlation(0.3, source="assumed").units_needed == 85
    # a proportion near 0.7 within +-0.05: 1.96^2 * 0.21 / 0.0025 = 322.7 -> 323
    assert planning.plan_agreement(0.7, 0.05, source="assumed").units_needed == 323
    got = planning.plan_ranking({"a": planning.assumed(1), "b": planning.assumed(1), "c": planning.assumed(1)},
                                {"a": 1.0, "b": 1.5, "c": 1.6})
    # the gap 0.1 at alpha 0.05 / 2 (Bonferroni over the two adjacent pairs)
    expected = next(n for n in range(1800, 2100) if t_power(0.1, math.sqrt(2 / n), n - 1, alpha=0.025) >= 0.8)
    assert got.units_needed == expected


def test_variance_components_from_ratings():
    """Units with a true value (sd 0.6) rated by three raters each with noise sd 0.8: the moments estimator finds
    both within sampling error."""
    rng = np.random.default_rng(0)
    truth = rng.normal(0, 0.6, 2000)
    rows = pd.DataFrame({"unit": np.repeat(np.arange(2000), 3), "annotator": np.tile([0, 1, 2], 2000),
                         "score": np.repeat(truth, 3) + rng.normal(0, 0.8, 6000)})
    spread = planning.spread_of(rows, source="pilot")
    assert spread.between == pytest.approx(0.36, abs=0.05)
    assert spread.within == pytest.approx(0.64, abs=0.05)
    assert spread.source.startswith("pilot: 2,000 units, 6,000 ratings")


def test_predicted_power_is_the_power_realised_by_the_intervals():
    """Two systems' populations of 400 ratings differing by about 0.2; 600 samples of n = 80 from each: the share of
    people-only difference intervals that exclude 0 is within 0.05 of the planner's power."""
    rng = np.random.default_rng(1)
    size, n = 400, 80
    a = np.clip(np.round(rng.normal(1.2, 0.7, size)), 0, 2)
    b = np.clip(np.round(rng.normal(0.95, 0.7, size)), 0, 2)
    frame = lambda v: pd.DataFrame({"unit": np.arange(size), "annotator": 0, "score": v})
    got = planning.plan_difference(planning.spread_of(frame(a), source="pilot"), planning.spread_of(frame(b), source="pilot"),
                                   a.mean() - b.mean(), budget=n, population=size)
    hits = 0
    for _ in range(600):
        sa, sb = rng.choice(size, n, replace=False), rng.choice(size, n, replace=False)
        d = ppi.difference(ppi.finite_mean(a[sa], a[sa], a, lam=0), ppi.finite_mean(b[sb], b[sb], b, lam=0))
        hits += d.lower > 0 or d.upper < 0
    assert 0.2 < got.power_at_budget < 0.95
    assert hits / 600 == pytest.approx(got.power_at_budget, abs=0.05)


def test_a_pilot_resampled_gives_a_range_of_needs():
    rng = np.random.default_rng(2)
    rows = lambda mu: pd.DataFrame({"unit": np.repeat(np.arange(80), 2), "annotator": np.tile([0, 1], 80),
                                    "score": np.clip(np.round(rng.normal(mu, 0.7, 160)), 0, 2)})
    low, high = planning.resampled_needs(rows(1.0), rows(1.2), 0.2, raters=2, draws=60)
    point = planning.plan_difference(planning.spread_of(rows(1.0), source="p"), planning.spread_of(rows(1.2), source="p"),
                                     0.2, raters=2).units_needed
    assert low < high and low <= point * 1.5 and high >= point / 1.5
