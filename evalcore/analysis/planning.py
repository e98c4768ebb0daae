"""How many human ratings a question needs, before a task is made, and what the ratings collected can settle
after it ran. Normal approximations with the t critical values the tool's intervals use (n - 1 degrees of freedom), with the spread of a unit's rating
taken from a pilot (the store's own ratings: variance between units and between raters of one unit) or from
stated assumptions, whichever the caller has; every plan says which.

Questions (Metric trust's, the leaderboard's and the judge audit's):
- difference: two systems' means on a dimension, each from n units (independent samples): power at `effect`;
- ranking: every adjacent pair of systems told apart: power at the smallest adjacent gap, Bonferroni over the
  m - 1 adjacent pairs;
- correlation: a metric's or judge's correlation with people at turn level (Fisher z: the interval and the power
  against r = 0 use n - 3);
- agreement: the share of units where a judge and the people agree (a binomial proportion).

A unit rated by K people has variance between + within / K (one-way random effects); a predictor correlated
rho with people's unit means, used by PPI (analysis.ppi), leaves (1 - rho^2) of it to the people's sample.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalcore.analysis.options import PLAN_QUESTIONS
from evalcore.analysis.ppi import stats, t_value, z_value

QUESTIONS = PLAN_QUESTIONS
POWER = 0.8
ALPHA = 0.05
MAX_UNITS = 1_000_000


@dataclass(frozen=True)
class Spread:
    """Where a unit's variance comes from: between units, within a unit (between its raters), and what said so:
    'pilot: ...' or 'assumed: ...'."""

    between: float
    within: float
    source: str
    units: int = 0          # pilot units behind it (0: assumed)

    def sd(self, raters: int = 1, rho: float = 0.0) -> float:
        """A unit's standard deviation when K raters are averaged, with a predictor of correlation rho beside."""
        return math.sqrt(max(self.between + self.within / max(raters, 1), 0.0) * (1 - rho * rho))


def unit_summary(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per unit (ratings' columns unit, annotator, score): its mean, its number of ratings and their variance."""
    by_unit = ratings.groupby("unit")["score"]
    return pd.DataFrame({"mean": by_unit.mean(), "count": by_unit.size(), "var": by_unit.var(ddof=1)})


def spread_of(ratings: pd.DataFrame, *, source: str, summary: pd.DataFrame | None = None) -> Spread:
    """Variance components from ratings (columns unit, annotator, score), or from their unit_summary: within = the
    mean variance between raters of one unit (units rated twice or more); between = the variance of unit means less
    within's share of it (one-way random-effects ANOVA by moments, floored at 0)."""
    summary = unit_summary(ratings) if summary is None else summary
    if summary.empty:
        raise ValueError("no ratings to plan from")
    twice = summary["var"][summary["count"] >= 2].dropna()
    within = float(twice.mean()) if len(twice) else 0.0
    total = float(summary["mean"].var(ddof=1)) if len(summary) > 1 else 0.0
    between = max(total - within * float((1 / summary["count"]).mean()), 0.0)
    note = "" if len(twice) else "; no unit rated twice, so rater noise is not separated"
    return Spread(between, within, f"{source}: {len(summary):,} units, {int(summary['count'].sum()):,} ratings{note}",
                  len(summary))


def assumed(sd: float, *, rater_sd: float = 0.0) -> Spread:
    return Spread(sd * sd, rater_sd * rater_sd, f"assumed: a unit's sd {sd:g}"
                  + (f", a rater's sd {rater_sd:g}" if rater_sd else ""))


def _fpc(n: float, population: int | None) -> float:
    """The finite-population factor (1 - n / M); 1 where M is unknown."""
    return max(1 - n / population, 0.0) if population else 1.0


def power_at(effect: float, se: float, alpha: float = ALPHA, df: float | None = None) -> float:
    """A two-sided test's power at `effect` with standard error se: the normal approximation, with the critical
    value of the t quantile the tool's intervals use when `df` is given (n - 1). With the z quantile instead, the
    power predicted for 10-20 rated units per system was 0.04-0.09 above the power the intervals realised on the
    released data (bench/ppi_coverage.py); with t, within 0.01 on average."""
    if se <= 0:
        return 1.0 if effect else alpha
    crit = t_value(alpha, df) if df else z_value(alpha)
    d = abs(effect) / se
    return float(stats.norm.cdf(d - crit) + stats.norm.cdf(-d - crit))


def se_difference(sd_a: float, sd_b: float, n: int, population: int | None = None) -> float:
    return math.sqrt((sd_a ** 2 + sd_b ** 2) / n * _fpc(n, population))


def smallest_n(power_of, target: float = POWER, most: int = MAX_UNITS) -> int | None:
    """The least n in 2..most whose power_of(n) reaches target (bisection: power grows with n); None if none."""
    if power_of(most) < target:
        return None
    lo, hi = 2, most
    while lo < hi:
        mid = (lo + hi) // 2
        if power_of(mid) >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def mde(se: float, *, power: float = POWER, alpha: float = ALPHA, df: float | None = None) -> float:
    """The smallest effect detected with `power` at standard error se: (crit + z_power) * se, crit the t quantile
    at `df` (else z)."""
    return ((t_value(alpha, df) if df else z_value(alpha)) + float(stats.norm.ppf(power))) * se


def fisher_power(r: float, n: int, alpha: float = ALPHA) -> float:
    """Power of the Fisher-z test of r = 0 at true correlation r with n pairs."""
    return power_at(math.atanh(max(min(r, 0.999999), -0.999999)), 1 / math.sqrt(n - 3), alpha) if n > 3 else 0.0


def fisher_interval(r: float, n: int, alpha: float = ALPHA) -> tuple[float, float]:
    h = z_value(alpha) / math.sqrt(n - 3)
    z = math.atanh(max(min(r, 0.999999), -0.999999))
    return math.tanh(z - h), math.tanh(z + h)


@dataclass
class Plan:
    """One question's plan: the units per system (or in all, for correlation and agreement) for the target
    power, the power and interval half-width a budget of units reaches, and what it assumed."""

    question: str
    units_needed: int | None
    budget: int | None
    power_at_budget: float
    half_width_at_budget: float
    mde_at_budget: float
    raters: int
    source: str
    notes: list[str] = field(default_factory=list)

    def as_row(self) -> dict:
        return {"question": self.question, "units_needed": self.units_needed, "budget": self.budget,
                "power_at_budget": self.power_at_budget, "half_width_at_budget": self.half_width_at_budget,
                "mde_at_budget": self.mde_at_budget, "raters": self.raters, "source": self.source,
                "notes": " ".join(self.notes)}


def plan_difference(spread_a: Spread, spread_b: Spread, effect: float, *, raters: int = 1, budget: int | None = None,
                    population: int | None = None, rho: float = 0.0, power: float = POWER,
                    alpha: float = ALPHA) -> Plan:
    """Units per system to tell two systems' means apart when they differ by `effect`."""
    sd_a, sd_b = spread_a.sd(raters, rho), spread_b.sd(raters, rho)
    most = population or MAX_UNITS
    needed = smallest_n(lambda n: power_at(effect, se_difference(sd_a, sd_b, n, population), alpha, n - 1), power, most)
    notes = [] if needed else [f"no number of units up to {most:,} per system reaches power {power:g} at {effect:g}"]
    return _at_budget("difference", needed, budget, lambda n: se_difference(sd_a, sd_b, n, population), effect,
                      raters, _sources(spread_a, spread_b), notes, power, alpha, rho)


def plan_ranking(spreads: dict[str, Spread], means: dict[str, float] | None = None, *, gap: float | None = None,
                 raters: int = 1, budget: int | None = None, population: int | None = None, rho: float = 0.0,
                 power: float = POWER, alpha: float = ALPHA) -> Plan:
    """Units per system to order every adjacent pair: the smallest adjacent gap (from the pilot's means, or
    `gap`), at alpha / (m - 1)."""
    m = len(spreads)
    if m < 2:
        raise ValueError("a ranking needs at least two systems")
    if gap is None:
        if not means:
            raise ValueError("a ranking plan needs the systems' means (a pilot) or the smallest gap to resolve")
        ordered = sorted(means.values())
        gap = min(b - a for a, b in zip(ordered, ordered[1:]))
    level = alpha / (m - 1)
    sd = max(s.sd(raters, rho) for s in spreads.values())
    notes = [f"the smallest adjacent gap is {gap:.3g}; each adjacent pair tested at {level:.3g} (Bonferroni over "
             f"{m - 1} pairs), with the largest system's sd"]
    if gap <= 0:
        return Plan("ranking", None, budget, math.nan, math.nan, math.nan, raters,
                    _sources(*spreads.values()), notes + ["two systems have equal means: no number of units orders them"])
    most = population or MAX_UNITS
    needed = smallest_n(lambda n: power_at(gap, se_difference(sd, sd, n, population), level, n - 1), power, most)
    return _at_budget("ranking", needed, budget, lambda n: se_difference(sd, sd, n, population), gap, raters,
                      _sources(*spreads.values()), notes, power, level, rho)


def plan_correlation(r: float, *, budget: int | None = None, source: str, power: float = POWER,
                     alpha: float = ALPHA) -> Plan:
    """Rated units to show a correlation of r with people is not zero (Fisher z), and the interval a budget gives."""
    needed = smallest_n(lambda n: fisher_power(r, n, alpha), power) if abs(r) > 0 else None
    plan = Plan("correlation", needed, budget, math.nan, math.nan, math.nan, 1, source,
                [] if needed else ["a correlation of 0 cannot be told from 0"])
    if budget and budget > 3:
        low, high = fisher_interval(r, budget, alpha)
        plan.power_at_budget = fisher_power(r, budget, alpha)
        plan.half_width_at_budget = (high - low) / 2
        plan.mde_at_budget = math.tanh(mde(1 / math.sqrt(budget - 3), power=power, alpha=alpha))
    return plan


def plan_agreement(p: float, half_width: float, *, budget: int | None = None, source: str,
                   alpha: float = ALPHA) -> Plan:
    """Rated units for a judge-people agreement rate near p to be known within +-half_width."""
    z = z_value(alpha)
    var = max(p * (1 - p), 1e-12)
    needed = max(2, math.ceil(z * z * var / (half_width * half_width)))
    plan = Plan("agreement", needed, budget, math.nan, math.nan, math.nan, 1, source,
                [f"planned for an agreement rate of {p:.2f} known within +-{half_width:g}"])
    if budget:
        plan.half_width_at_budget = z * math.sqrt(var / budget)
    return plan


def _sources(*spreads: Spread) -> str:
    return "; ".join(dict.fromkeys(s.source for s in spreads))


def _at_budget(question, needed, budget, se_of, effect, raters, source, notes, power, alpha, rho) -> Plan:
    if rho:
        notes = notes + [f"with a predictor of correlation {rho:.2f} with people calibrated by them (PPI): a unit's "
                         f"variance times {1 - rho * rho:.2f}"]
    plan = Plan(question, needed, budget, math.nan, math.nan, math.nan, raters, source, notes)
    if budget and budget >= 2:
        se, df = se_of(budget), budget - 1
        plan.power_at_budget = power_at(effect, se, alpha, df)
        plan.half_width_at_budget = t_value(alpha, df) * se
        plan.mde_at_budget = mde(se, power=power, alpha=alpha, df=df)
    return plan


def resampled_needs(ratings_a: pd.DataFrame, ratings_b: pd.DataFrame, effect: float, *, raters: int = 1,
                    draws: int = 200, seed: int = 0, **kwargs) -> tuple[float, float]:
    """How unsure the pilot makes the plan: the units needed, planned again from `draws` resamples of the pilot's
    units (with replacement, each unit with all its ratings); the 10th and 90th percentiles (NaN when most
    resamples reach no plan)."""
    rng = np.random.default_rng(seed)
    summaries = [unit_summary(r).reset_index(drop=True) for r in (ratings_a, ratings_b)]
    out = []
    for _ in range(draws):
        a, b = (spread_of(None, source="resample", summary=s.iloc[rng.integers(0, len(s), len(s))]) for s in summaries)
        need = plan_difference(a, b, effect, raters=raters, **kwargs).units_needed
        out.append(np.nan if need is None else need)
    values = np.asarray(out, float)
    if np.isnan(values).mean() > 0.5:
        return math.nan, math.nan
    low, high = np.nanpercentile(values, [10, 90])
    return float(low), float(high)
