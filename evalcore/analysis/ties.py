"""When two values are the same number: values equal up to float noise are ties, in every statistic that ranks.

A dialogue's metric value is the mean of its turns': three turns of 17/18 average to 0.9444444444444443 and two to
0.9444444444444444 (numpy, pandas, DuckDB's avg and even math.fsum(...) / n all give these), so equal values come
out of aggregation one unit in the last place apart, and ranking them as different breaks a true tie (Spearman,
Kendall, rank intervals and agreement categories all moved). Means cannot be made exact where they are computed
(the store's SQL, pandas group means, resampled sums), so ties are formed where values become tie groups: `snap`
runs here before every np.unique, rank and comparison that decides ties (stats.Prepared, rank_ci.competition_ranks,
the agreement categories, the trust ranks, the ranking of candidates; pandas' rank through `snapped`: a judge's rank
intervals, the disagreement sorts of the drill-down and of a rating task's sampling). Values keep their stored
digits wherever they are shown.

Two values tie when they are at most RTOL apart relative to the larger magnitude (12 significant digits): the
rounding noise of a mean of a million values, measured with DuckDB's avg on shuffled copies, is about 3e-14, and
a real difference under one part in 10^12 says nothing about a dialogue system. Values are compared with their
neighbour in sorted order, so a run of such near neighbours is one group, represented by its smallest value.
The tolerance is relative only: a value near 0 ties only with values as close relative to itself.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:   # no pandas import at run time: stats imports this module without it (frames come built)
    import pandas as pd

RTOL = 1e-12


def snap(values) -> np.ndarray:
    """`values` (a float array; along the last axis when it has several) with each run of values that tie with
    their neighbour in sorted order set to the run's smallest value, so exact comparisons, np.unique and ranks
    see equal numbers. NaN stays NaN; inf ties only with inf. The input itself when nothing needs snapping."""
    v = np.asarray(values, dtype=float)
    if v.ndim == 0 or v.shape[-1] < 2:
        return v
    order = np.argsort(v, axis=-1, kind="stable")
    s = np.take_along_axis(v, order, axis=-1)
    low, high = s[..., :-1], s[..., 1:]
    with np.errstate(invalid="ignore", over="ignore"):
        gap = high - low
        near = np.isfinite(gap) & (gap <= RTOL * np.maximum(np.abs(low), np.abs(high)))
    if not (near & (gap != 0)).any():   # only exact equalities (or none): nothing to change
        return v
    tied = near | (low == high)
    positions = np.broadcast_to(np.arange(s.shape[-1]), s.shape)
    starts = np.concatenate([np.zeros(s.shape[:-1] + (1,), dtype=bool), tied], axis=-1)
    first = np.maximum.accumulate(np.where(starts, 0, positions), axis=-1)   # where each value's run begins
    out = np.empty_like(v)
    np.put_along_axis(out, order, np.take_along_axis(s, first, axis=-1), axis=-1)
    return out


def snapped(frame: pd.Series | pd.DataFrame) -> pd.Series | pd.DataFrame:
    """A pandas Series, or a DataFrame column by column, with its values snapped (`snap`): what pandas' `rank` is
    given, so noise-apart values share a rank. Same index and columns; NaN (and pd.NA) become NaN."""
    values = frame.to_numpy(dtype=float, na_value=np.nan)
    if values.ndim == 1:
        return type(frame)(snap(values), index=frame.index, name=frame.name)
    return type(frame)(snap(values.T).T, index=frame.index, columns=frame.columns)
