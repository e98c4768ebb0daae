"""Prediction-powered inference: a mean from a predictor's values on every unit (a judge, or a metric on the
dimension's scale) plus people's ratings of a random subset, with an interval that stays valid however wrong
the predictor is (Angelopoulos et al., Science 2023; power-tuned as PPI++, Angelopoulos, Duchi and Zrnic 2023).

Two forms:
- `ppi_mean`: ppi-python's `ppi_mean_ci` / `ppi_mean_pointestimate` (one dimension, unweighted), arithmetic
  for arithmetic, for a labelled sample and a separate unlabelled one drawn from one distribution. The tests hold
  the two equal to 1e-9.
- `finite_mean`: what the store needs. Its target is the mean of people's ratings over a finite set of units
  (a model's responses on a track), the predictor is known on every one of them, and people rated a sample drawn
  with known inclusion probabilities (uniform: n of M; active: each unit's own, Zrnic and Candes 2024). The
  predictor's part then has no sampling error; the people's part is the residual y - lam * f, weighted by 1/pi
  (Hajek: centred by its own weighted mean), with the finite-population variance (and a t quantile with Satterthwaite's degrees of freedom)
      sum_S (1 - pi_i) / pi_i^2 (r_i - r_bar)^2 / M^2 * n / (n - 1),
  which for a uniform sample is the textbook (1 - n/M) s^2 / n. lam is tuned to minimise that variance (the
  weighted regression slope of y on f, clipped to [0, 1]); lam = 0 is the people-only estimate. Tuning lam and
  centring on the sample make the estimate unbiased up to O(1/n), as PPI++'s tuned lam is.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from evalcore.core import lazy

stats = lazy.module("scipy.stats")


def z_value(alpha: float) -> float:
    """The two-sided normal quantile for level alpha (1.96 at 0.05)."""
    return float(stats.norm.ppf(1 - alpha / 2))


def t_value(alpha: float, df: int) -> float:
    """The two-sided Student t quantile: the store's intervals use it with n - 1 degrees of freedom, because at
    20 to 30 rated units the normal one covered 92-93% instead of 95% (a simulation in tests/analysis/test_ppi.py)."""
    return float(stats.t.ppf(1 - alpha / 2, df))


# ---------------------------------------------------------------- ppi-python's PPI++ mean, for parity
def ppi_lambda(y, yhat, yhat_unlabeled) -> float:
    """PPI++'s power-tuning parameter for a mean (ppi-python's _calc_lam_glm with an identity Hessian, clipped to
    [0, 1]): the covariance of the labelled residual gradients over (1 + n/N) times the predictions' variance."""
    y, yhat, yu = (np.asarray(v, float) for v in (y, yhat, yhat_unlabeled))
    n, big_n = len(y), len(yu)
    theta = yu.mean() + (y - yhat).mean()            # the PPI estimate at lam = 1
    grads, grads_hat = y - theta, yhat - theta
    cov = 2 * ((grads - grads.mean()) * (grads_hat - grads_hat.mean())).sum() / n
    var = np.cov(np.concatenate([grads_hat, yu - theta]))   # ddof 1, labelled and unlabelled together
    return float(np.clip(cov / (2 * (1 + n / big_n) * var), 0, 1))


def ppi_mean(y, yhat, yhat_unlabeled, *, alpha: float = 0.05, lam: float | None = None) -> tuple[float, float, float, float]:
    """(estimate, lower, upper, lam): PPI++ for a mean, as ppi-python computes it."""
    y, yhat, yu = (np.asarray(v, float) for v in (y, yhat, yhat_unlabeled))
    lam = ppi_lambda(y, yhat, yu) if lam is None else float(lam)
    estimate = float((lam * yu).mean() + (y - lam * yhat).mean())
    se = math.sqrt((lam * yu).std() ** 2 / len(yu) + (y - lam * yhat).std() ** 2 / len(y))
    half = z_value(alpha) * se
    return estimate, estimate - half, estimate + half, lam


# ---------------------------------------------------------------- the store's finite-population estimate
@dataclass(frozen=True)
class Estimate:
    """One mean with its interval. n: units people rated; big_n: units the predictor valued (the population);
    lam: the predictor's weight (0: people only); reason: why there is no value (then the numbers are NaN)."""

    estimate: float
    lower: float
    upper: float
    se: float
    n: int
    big_n: int
    lam: float
    reason: str = ""

    @property
    def width(self) -> float:
        return self.upper - self.lower


def unavailable(reason: str, n: int = 0, big_n: int = 0) -> Estimate:
    return Estimate(math.nan, math.nan, math.nan, math.nan, n, big_n, math.nan, reason)


def satterthwaite(terms: np.ndarray, most: int) -> float:
    """The degrees of freedom of a weighted sum of squares (Welch-Satterthwaite: (sum a)^2 / sum a^2), at most
    `most`: with unequal probabilities a few heavily weighted units carry the variance, and the t quantile must
    widen for it (active sampling at 20-40 rated units covered 91-93% with n - 1, 93-95% with this)."""
    total, squares = float(terms.sum()), float((terms * terms).sum())
    return max(1.0, min(float(most), total * total / squares)) if squares > 0 else float(max(most, 1))


def _tuned_lambda(y: np.ndarray, f: np.ndarray, c: np.ndarray) -> float:
    """The lam minimising sum c (r - r_bar_c)^2 for r = y - lam f: the c-weighted slope of y on f, in [0, 1]."""
    # a predictor constant on the rated units (up to float noise: one F1 of 5/6 stored and recomputed differs in its
    # last bit) says nothing about how people follow it: lam would be noise over noise, so people alone
    # (only the units with weight count: one drawn with pi = 1 has none, and its f would make a constant look varied)
    weighed = f[c > 0]
    if not len(weighed) or np.ptp(weighed) <= 1e-9 * max(1.0, float(np.abs(weighed).max())):
        return 0.0
    fc, yc = f - np.average(f, weights=c), y - np.average(y, weights=c)
    var = float((c * fc * fc).sum())
    return float(np.clip((c * fc * yc).sum() / var, 0, 1)) if var > 0 else 0.0


def finite_mean(y, f_labeled, f_all, *, pi=None, lam: float | None = None, alpha: float = 0.05,
                min_n: int = 2) -> Estimate:
    """The mean over M units of people's ratings y, from `f_all` (the predictor on all M units), `y` and
    `f_labeled` on the n rated ones, and `pi` their inclusion probabilities (None: a uniform sample, n / M).
    lam None: tuned; 0: people only (f unused but for its count)."""
    y, f_labeled, f_all = (np.asarray(v, float) for v in (y, f_labeled, f_all))
    n, big_n = len(y), len(f_all)
    if n < min_n:
        return unavailable(f"{n} unit{'s' if n != 1 else ''} rated by people: an interval needs at least {min_n}",
                           n, big_n)
    if np.isnan(f_all).any() or np.isnan(f_labeled).any():
        return unavailable("the predictor has no value on some units: it must value every unit it stands in for",
                           n, big_n)
    pi = np.full(n, n / big_n) if pi is None else np.asarray(pi, float)
    if ((pi <= 0) | (pi > 1)).any():
        return unavailable("an inclusion probability outside (0, 1]", n, big_n)
    w = 1 / pi
    c = (1 - pi) * w * w                      # each rated unit's weight in the variance
    tuned = lam is None and n > 2
    if lam is None:
        lam = _tuned_lambda(y, f_labeled, c) if c.sum() > 0 and n > 2 else 0.0
    r = y - lam * f_labeled
    r_bar = float(np.average(r, weights=w))   # Hajek: the weighted mean of the residual
    estimate = lam * float(f_all.mean()) + r_bar
    terms = c * (r - r_bar) ** 2
    # the residuals' own range, not the terms' sum: unequal weights leave a sum of ~1e-31 from rounding alone
    if np.ptp(r) <= 1e-12 * max(1.0, float(np.abs(r).max())) and (pi < 1).any():
        # a sample (not every unit) in which nothing varies: an interval of width 0 would claim a certainty these
        # ratings cannot give (on USR's Understandable, 0 or 1 and nearly always 1, such samples were 2-5% of draws
        # at 15-20 ratings, and every one of them missed)
        return unavailable(f"the {n} rated units leave no spread{'' if lam == 0 else ' beside the predictor'} (every "
                           "rating the same): the spread is unseen, so no interval; rate more units", n, big_n)
    # the residual's degrees of freedom: n - 1 for its mean, one more for a lam fitted on the same ratings
    se = math.sqrt(float(terms.sum()) / big_n ** 2 * n / (n - 1 - tuned))
    half = t_value(alpha, satterthwaite(terms, n - 1 - tuned)) * se
    return Estimate(estimate, estimate - half, estimate + half, se, n, big_n, float(lam))


def difference(a: Estimate, b: Estimate, *, alpha: float = 0.05) -> Estimate:
    """a - b from two independent samples (each system's units were sampled on their own): the variances add."""
    if a.reason or b.reason:
        return unavailable(a.reason or b.reason, min(a.n, b.n), min(a.big_n, b.big_n))
    est, se = a.estimate - b.estimate, math.hypot(a.se, b.se)
    half = t_value(alpha, min(a.n, b.n) - 1) * se   # the smaller sample's degrees of freedom: the cautious side
    return Estimate(est, est - half, est + half, se, min(a.n, b.n), min(a.big_n, b.big_n), math.nan)


def rank_intervals(estimates: dict[str, Estimate], *, alpha: float = 0.05) -> dict[str, tuple[int, int]]:
    """Each system's rank interval (1 = highest) from all pairwise differences at a Bonferroni-corrected level:
    a system ranks below every system surely above it and above every system surely below it. Systems without
    an estimate get no interval."""
    names = [k for k, e in estimates.items() if not e.reason]
    pairs = max(1, len(names) * (len(names) - 1) // 2)
    level = alpha / pairs
    out = {}
    for a in names:
        above = below = 0
        for b in names:
            if a == b:
                continue
            d = difference(estimates[b], estimates[a], alpha=level)
            above += d.lower > 0
            below += d.upper < 0
        out[a] = (1 + above, len(names) - below)
    return out


def combine(parts: list[tuple[int, Estimate]], *, alpha: float = 0.05) -> Estimate:
    """A mean over strata (tracks) from each stratum's estimate and size M_t: sum M_t theta_t / sum M_t, the
    variances added with the squared shares (the strata are sampled apart); t quantile with sum (n_t - 1) degrees
    of freedom. Unavailable when any stratum is."""
    bad = [e.reason for _, e in parts if e.reason]
    n, big_n = sum(e.n for _, e in parts), sum(m for m, _ in parts)
    if bad or not parts:
        return unavailable(bad[0] if bad else "no stratum", n, big_n)
    est = sum(m * e.estimate for m, e in parts) / big_n
    se = math.sqrt(sum((m / big_n) ** 2 * e.se ** 2 for m, e in parts))
    half = t_value(alpha, max(sum(e.n - 1 for _, e in parts), 1)) * se
    lam = parts[0][1].lam if len({e.lam for _, e in parts}) == 1 else math.nan
    return Estimate(est, est - half, est + half, se, n, big_n, lam)


def sample_mean(y, *, alpha: float = 0.05) -> Estimate:
    """A plain mean of a sample from a larger (unbounded) population: sd / sqrt(n), t interval; people only."""
    y = np.asarray(y, float)
    n = len(y)
    if n < 2:
        return unavailable(f"{n} unit{'s' if n != 1 else ''} rated: an interval needs at least 2", n, n)
    est, se = float(y.mean()), float(y.std(ddof=1)) / math.sqrt(n)
    half = t_value(alpha, n - 1) * se
    return Estimate(est, est - half, est + half, se, n, n, 0.0)


def uniform_se(y, f_labeled, f_all, *, pi, lam: float) -> float:
    """The standard error a uniform sample of the same size would have reached: the residual's population variance
    estimated from the weighted sample (Hajek), then (1 - n/M) s^2 / n. What an active task's page sets its own
    interval against."""
    y, f_labeled, f_all, pi = (np.asarray(v, float) for v in (y, f_labeled, f_all, pi))
    n, big_n = len(y), len(f_all)
    if n < 2:
        return math.nan
    w = 1 / pi
    r = y - lam * f_labeled
    var = float(np.average((r - np.average(r, weights=w)) ** 2, weights=w)) * n / (n - 1)
    return math.sqrt(max(1 - n / big_n, 0.0) * var / n)


# ---------------------------------------------------------------- looking after every rating
def anytime_half_width(se: float, n: int, *, alpha: float = 0.05, planned: int | None = None) -> float:
    """The half width of an asymptotic confidence sequence (Waudby-Smith, Arbour, Sinha, Kennedy and Ramdas,
    "Time-uniform central limit theory", 2021/2024, eq. for the Robbins normal mixture): an interval that stays valid
    when it is looked at after every rating and the rating stops when it looks settled. sigma = se * sqrt(n) is the
    per-unit spread; rho is tuned to be tightest at `planned` ratings (default n). Wider than the fixed-size
    interval: the price of peeking."""
    if n < 2 or not math.isfinite(se):
        return math.nan
    sigma2 = se * se * n
    t_star = planned or n
    log_a = -2 * math.log(alpha)
    rho2 = (log_a + math.log(log_a + 1)) / t_star
    v = n * sigma2 * rho2 + 1
    return math.sqrt(2 * v / (n * n * rho2) * math.log(math.sqrt(v) / alpha))
