"""Inclusion probabilities of an active rating task (Zrnic and Candes, "Active Statistical Inference", ICML 2024):
within one stratum (a track's responses of one model) of M candidates of which k are to be rated, each unit is
offered to people with a probability that grows with the predictor's uncertainty about it, and drawn on its own
(a Poisson draw). An estimate that weighs each rated unit by one over its probability stays unbiased
(evalcore.analysis.ppi.finite_mean), while the ratings go where the predictor is least sure.

- uncertainty: the spread of the judge's answers across its samples where it was asked several times (k
  samples at temperature > 0), else `boundary`: p (1 - p), p the value rescaled to [0, 1] by the predictor's
  range, largest in the middle of the scale (the decision boundary) and 0 at either end;
- `probabilities`: pi proportional to the uncertainty, summing to k, with a floor and a cap of 1;
- `draw`: each unit independently with its pi, so the number drawn varies around k.
"""
from __future__ import annotations

import numpy as np

# The floor, as a share of the uniform probability k / M. A unit the predictor is sure about must still be
# drawable (pi > 0, or the estimate is biased), and its weight 1 / pi bounded: a rated unit weighs at most
# 1 / FLOOR (~1.7) times what it would under uniform sampling, so one surprising rating of a "sure" unit cannot
# swing the estimate and its variance (Zrnic and Candes mix their rule with the uniform one for the same reason).
# Measured (bench/ppi_coverage.py, USR, FED and MSDE, 400 draws): at 20 rated responses per model a floor of 0.3
# covered 91.7-93.7% and one of 0.6 93.8-95.7%, and the weak predictors there gained nothing from active sampling
# that a lower floor would buy back.
FLOOR = 0.6


def boundary(values, lo: float, hi: float) -> np.ndarray:
    """p (1 - p) for p = (value - lo) / (hi - lo): the distance from the decision boundary (0.25 in the middle
    of the scale, 0 at its ends); all 0 when the range is empty (hi <= lo: no value says more than another)."""
    values = np.asarray(values, float)
    if not hi > lo:
        return np.zeros(len(values))
    p = np.clip((values - lo) / (hi - lo), 0.0, 1.0)
    return p * (1 - p)


def probabilities(uncertainty, k: int, *, floor: float = FLOOR, steps: int = 200) -> np.ndarray:
    """Each of the M units' inclusion probability: pi_i = min(1, max(f, c u_i)) with f = floor * k / M and c
    chosen so that the pi sum to k (bisection on c: the sum grows with c), so the units above the floor share
    what the capped ones cannot take in proportion to their uncertainty. k >= M: every unit (pi = 1); no
    uncertainty anywhere (all u = 0): uniform, k / M."""
    u = np.nan_to_num(np.asarray(uncertainty, float), nan=0.0).clip(min=0.0)
    m = len(u)
    if k <= 0 or m == 0:
        return np.zeros(m)
    if k >= m:
        return np.ones(m)
    if not u.sum() > 0:
        return np.full(m, k / m)
    low = floor * k / m
    pos = u > 0
    if pos.sum() + (~pos).sum() * low < k:   # even with every uncertain unit at 1: the sure ones share the rest
        return np.where(pos, 1.0, (k - pos.sum()) / (~pos).sum())
    a, b = 0.0, 1.0 / u[pos].min()          # at b every uncertain unit is capped at 1
    for _ in range(steps):
        c = (a + b) / 2
        if np.clip(c * u, low, 1.0).sum() < k:
            a = c
        else:
            b = c
    return np.clip(b * u, low, 1.0)


def draw(pi, rng: np.random.Generator) -> np.ndarray:
    """Which units are drawn: each one on its own with its probability (a Poisson draw), one uniform number per
    unit in order, so the same generator state draws the same units."""
    pi = np.asarray(pi, float)
    return rng.random(len(pi)) < pi
