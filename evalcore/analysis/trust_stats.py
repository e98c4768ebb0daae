"""The statistics the trust table combines its cells with: Fisher's z and its interval, the fixed-effect pool of
tracks' correlations, Stouffer's combination of one-sided p values, and Holm's adjustment."""
from __future__ import annotations

import math

import numpy as np

from evalcore.analysis.stats import fisher_interval, special

Z95 = 1.959963984540054   # scipy.special.ndtri(0.975), written out so importing this module imports no scipy (a test)


def fisher_z(r: float) -> float:
    """atanh(r), with |r| = 1 kept finite (a perfect correlation on few points is still a point)."""
    return math.atanh(max(-1 + 1e-12, min(1 - 1e-12, r)))


def fisher_ci(r: float, n: int) -> tuple[float, float]:
    return (math.nan, math.nan) if n <= 3 or math.isnan(r) else fisher_interval(r, n)


def pool(rs: list[float], ns: list[int]) -> dict:
    """Fixed-effect meta-analysis of Fisher z with weights n - 3 (cells with n <= 3 carry no weight)."""
    cells = [(r, n) for r, n in zip(rs, ns) if n > 3 and not math.isnan(r)]
    if not cells:
        return {"r": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": sum(ns), "p": math.nan,
                "note": "no track with n > 3"}
    w = np.array([n - 3 for _, n in cells], dtype=float)
    z = float(np.dot(w, [fisher_z(r) for r, _ in cells]) / w.sum())
    se = 1 / math.sqrt(w.sum())
    return {"r": math.tanh(z), "ci_low": math.tanh(z - Z95 * se), "ci_high": math.tanh(z + Z95 * se),
            "n": int(sum(n for _, n in cells)), "p": float(2 * special.ndtr(-abs(z / se))), "note": ""}


def stouffer(ps: list[float], ns: list[int]) -> float:
    """One-sided p values combined by Stouffer's Z with weights sqrt(n - 3)."""
    cells = [(p, n) for p, n in zip(ps, ns) if not math.isnan(p) and n > 3]
    if not cells:
        return math.nan
    w = np.sqrt([n - 3 for _, n in cells])
    z = np.array([special.ndtri(1 - min(max(p, 1e-300), 1 - 1e-16)) for p, _ in cells])
    return float(special.ndtr(-(w @ z) / math.sqrt(float(w @ w))))


def holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjusted p values (Holm 1979): the i-th smallest of m p values becomes
    max over j <= i of min(1, (m - j + 1) p_(j)). NaN stays NaN and is not counted in m."""
    idx = [i for i, p in enumerate(ps) if not math.isnan(p)]
    out = [math.nan] * len(ps)
    m, running = len(idx), 0.0
    for j, i in enumerate(sorted(idx, key=lambda i: ps[i])):
        running = max(running, min(1.0, (m - j) * ps[i]))
        out[i] = running
    return out
