"""Paired comparisons of two systems on the same units: the bootstrap interval of the mean difference."""
from __future__ import annotations

import numpy as np


def mean_difference_interval(diff: np.ndarray, resamples: int, rng: np.random.Generator) -> tuple[float, float]:
    """The 95% percentile-bootstrap interval of diff.mean() (diff: b minus a per unit), resampling the units with
    replacement `resamples` times from `rng`; NaN bounds with fewer than two units or no resamples. With fewer than
    two units nothing is drawn from `rng`, which a caller may share across several differences."""
    means = [diff[rng.integers(0, len(diff), len(diff))].mean() for _ in range(resamples)] if len(diff) > 1 else []
    low, high = (np.quantile(means, [0.025, 0.975]) if means else (np.nan, np.nan))
    return low, high
