"""MME-CRS metric ensembling (seed 003) with held-out evaluation.

For a human dimension, each metric i gets, on every fitting track t, its correlation r_ti with the
human scores (Spearman by default), and the weight w_ti = max(r_ti, 0)^p / sum_j max(r_tj, 0)^p
(p = 2). A metric's weight is the mean of w_ti over the fitting tracks (0 on a track where it is
missing or has no positive correlation). The ensemble score of a unit (a model at system level,
a response at turn level) on a held-out track is sum_i w_i z_i over the metrics present there,
weights renormalised to sum to 1, where z_i is metric i z-normalised within that track (mean 0,
standard deviation 1 over the track's units), so metrics on different scales add up.
Baselines: Avg, the plain mean of the z-normalised metrics; and the best single metric, the one
with the highest mean correlation on the fitting tracks.
Held out: each track in turn (`track`), or each competition's tracks together (`competition`).
"""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.correlate import Models, human_scores, metric_scores
from evalcore.analysis.options import HOLDOUTS
from evalcore.analysis.stats import correlate

RESULT_COLUMNS = ["holdout", "track", "dimension", "method", "metrics", "pearson", "spearman", "n"]
WEIGHT_COLUMNS = ["holdout", "dimension", "metric", "weight"]


def _zscore(frame: pd.DataFrame) -> pd.DataFrame:
    sd = frame.std(ddof=0)
    keep = sd[sd > 0].index
    return (frame[keep] - frame[keep].mean()) / sd[keep]


def crs_weights(r: pd.Series, power: float = 2.0) -> pd.Series:
    pos = r.clip(lower=0).fillna(0) ** power
    total = pos.sum()
    return pos / total if total > 0 else pos


def load(con, dataset: str, level: str, origin: str, aggregate: str = "mean", flavor: str = "default",
         models: Models = Models()):
    """Per track: (z-normalised metrics by unit, human scores by unit), and each track's competition."""
    tracks = con.execute("SELECT track, coalesce(competition, split_part(track, '/', 1)) FROM tracks "
                         "WHERE dataset = ? ORDER BY 1", [dataset]).fetchall()
    data, competition = {}, {}
    for tr, comp in tracks:
        m = models.apply(metric_scores(con, dataset, tr, level, origin, flavor, None), level)
        h = models.apply(human_scores(con, dataset, tr, level, aggregate), level)
        if m.empty or h.empty:
            continue
        m = m.pivot_table(index="unit", columns="metric", values="value", aggfunc="first")
        h = h.pivot_table(index="unit", columns="dimension", values="value", aggfunc="first")
        common = m.index.intersection(h.index)
        if len(common) < 3:
            continue
        data[tr] = (_zscore(m.loc[common]), h.loc[common])
        competition[tr] = comp
    return data, competition


def _corr(x, y, method: str) -> float:
    c = correlate(np.asarray(x, float), np.asarray(y, float), method)
    return c.r if c.defined else np.nan


def ensemble(con: duckdb.DuckDBPyConnection, dataset: str, *, level: str = "system", holdout: str = "competition",
             origin: str = "auto", method: str = "spearman", power: float = 2.0, aggregate: str = "mean",
             flavor: str = "default", models: Models = Models()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(held-out results, weights). origin auto: published at system level when nothing is computed."""
    if holdout not in HOLDOUTS:
        raise ValueError(f"unknown holdout {holdout!r}; known: {', '.join(HOLDOUTS)}")
    if origin == "auto":
        computed = con.execute("SELECT count(*) FROM system_scores WHERE dataset = ? AND origin = 'computed'",
                               [dataset]).fetchall()[0][0]
        origin = "computed" if computed or level != "system" else "published"
    data, competition = load(con, dataset, level, origin, aggregate, flavor, models)
    groups: dict[str, list[str]] = {}
    for tr in data:
        groups.setdefault(tr if holdout == "track" else competition[tr], []).append(tr)
    results, weights = [], []
    for name, held in groups.items():
        fitting = [t for t in data if t not in held]
        dims = sorted({d for t in held for d in data[t][1].columns})
        for dim in dims:
            fit = [t for t in fitting if dim in data[t][1].columns]
            if not fit:
                continue
            per_track = {}
            for t in fit:
                z, h = data[t]
                per_track[t] = pd.Series({m: _corr(z[m], h[dim], method) for m in z.columns})
            r = pd.DataFrame(per_track)                       # metrics x fitting tracks
            w = pd.DataFrame({t: crs_weights(r[t], power) for t in r.columns}).fillna(0).mean(axis=1)
            best = r.mean(axis=1, skipna=True).idxmax() if r.notna().any().any() else None
            weights += [{"holdout": name, "dimension": dim, "metric": m, "weight": float(v)} for m, v in w.items()]
            for t in held:
                z, h = data[t]
                if dim not in h.columns:
                    continue
                human = h[dim]
                present = [m for m in w.index if m in z.columns and w[m] > 0]
                candidates = {}
                if present:
                    ww = w[present] / w[present].sum()
                    candidates["CRS"] = (z[present] @ ww, len(present))
                candidates["Avg"] = (z.mean(axis=1), z.shape[1])
                if best is not None and best in z.columns:
                    candidates[f"best:{best}"] = (z[best], 1)
                for label, (score, k) in candidates.items():
                    ok = human.notna() & score.notna()
                    results.append({"holdout": name, "track": t, "dimension": dim, "method": label, "metrics": k,
                                    "pearson": _corr(score[ok], human[ok], "pearson"),
                                    "spearman": _corr(score[ok], human[ok], "spearman"), "n": int(ok.sum())})
    return pd.DataFrame(results, columns=RESULT_COLUMNS), pd.DataFrame(weights, columns=WEIGHT_COLUMNS)
