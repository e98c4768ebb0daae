"""Which metric to trust for which skill: metric-human correlations per track, pooled per skill.

Cells are (metric, skill, track): the correlation of the metric with one human dimension, or with
the mean of the track's dimensions (`dimension="mean"`: units rated on every dimension of the track,
their scores averaged), at system, dialogue or turn level (see evalcore.correlate for the units).

- Track cell: r (Pearson, Spearman or Kendall, equal to scipy), two-sided p, n and a 95% interval
  from Fisher's z with standard error 1/sqrt(n - 3) (for Spearman and Kendall a common
  approximation, stated in the `ci` column).
- Pooled cell per skill: fixed-effect meta-analysis of Fisher z over the skill's tracks where the
  cell is defined, weights n - 3: z = sum((n_i - 3) z_i) / sum(n_i - 3), se = 1/sqrt(sum(n_i - 3)),
  r = tanh(z), CI tanh(z -+ 1.96 se), p from z / se against the normal.
- tied_with_best: the metric is not significantly worse than the best one (highest r) of the same
  track or skill. On a track: Williams' test of r(best, human) > r(metric, human) given
  r(best, metric), one-sided alpha 0.05, on the units where all three are known. Pooled: the
  tracks' one-sided p values combined by Stouffer's weighted Z (weights sqrt(n_i - 3)).
- rank: 1 = highest r within the track, or highest pooled r within the skill.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import special

from evalcore.correlate import Models, _check, _order, human_scores, metric_scores
from evalcore.leaderboard import HUMAN_ORDER, PAPER_ORDER
from evalcore.queries import require_dataset
from evalcore.stats import Correlation, correlate, fisher_interval, williams

POOLED = "pooled"
ALPHA = 0.05
Z95 = float(special.ndtri(0.975))
SKILL_ORDER = ["chitchat", "knowledge", "recommendation", "persona", "task-oriented"]
COLUMNS = ["metric", "skill", "track", "dimension", "r", "ci_low", "ci_high", "n", "p", "tied_with_best", "rank",
           "dimensions", "ci", "note"]
LOW_POWER_N = 30  # below this many units a Williams test rarely separates two metrics (say so)


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


def human_vector(wide: pd.DataFrame, dimension: str) -> tuple[pd.Series | None, str, str]:
    """(values per unit, dimensions used, reason when undefined) for one track's wide human frame."""
    if wide.empty:
        return None, "", "no human scores at this level"
    if dimension != "mean":
        if dimension not in wide.columns:
            return None, "", f"no {dimension} ratings on this track"
        return wide[dimension].dropna(), dimension, ""
    dims = _order(wide.columns, HUMAN_ORDER)
    complete = wide[dims].dropna()
    if complete.empty:
        return None, ",".join(dims), "no unit rated on every dimension"
    return complete.mean(axis=1), ",".join(dims), ""


def _track_cells(metrics: pd.DataFrame, human: pd.Series, method: str) -> dict[str, Correlation]:
    out = {}
    for metric in metrics.columns:
        m = metrics[metric].reindex(human.index)
        out[metric] = correlate(m.to_numpy(float), human.to_numpy(float), method)
    return out


class _Williams:
    """Williams' tests on the tracks' data, each (track, best, other) run once: the track's best and
    the skill's best are often the same metric."""

    def __init__(self, method: str):
        self.method = method
        self.data: dict[str, tuple[pd.DataFrame, pd.Series]] = {}  # track -> (metrics by unit, human by unit)
        self.done: dict[tuple[str, str, str], tuple[float, int]] = {}

    def p(self, track: str, best: str, other: str) -> tuple[float, int]:
        key = (track, best, other)
        if key not in self.done:
            metrics, human = self.data[track]
            self.done[key] = _williams_p(metrics, human, best, other, self.method)
        return self.done[key]


def _williams_p(metrics: pd.DataFrame, human: pd.Series, best: str, other: str, method: str) -> tuple[float, int]:
    """One-sided p of Williams' test that `best` correlates more with people than `other` does."""
    frame = pd.concat([human.rename("__h"), metrics[best].rename("__b"), metrics[other].rename("__o")],
                      axis=1, join="inner").dropna()
    n = len(frame)
    r12 = correlate(frame["__b"], frame["__h"], method)
    r13 = correlate(frame["__o"], frame["__h"], method)
    r23 = correlate(frame["__b"], frame["__o"], method)
    if not (r12.defined and r13.defined and r23.defined):
        return math.nan, n  # e.g. a metric constant on these units: the test says nothing
    return williams(r12.r, r13.r, r23.r, n).p, n


def trust(con, dataset: str, *, level: str = "system", method: str = "spearman", dimension: str = "mean",
          origin: str = "computed", flavor: str = "default", tokenizer: str | None = None,
          aggregate: str = "mean", models: Models = Models(), system_aggregate: str = "corpus") -> pd.DataFrame:
    """Long table (COLUMNS): one row per metric, skill and track, plus one `pooled` row per metric and skill."""
    _check(level, origin, [method], aggregate)
    require_dataset(con, dataset)
    tracks = con.execute("SELECT track, coalesce(skill, 'other') FROM tracks WHERE dataset = ? ORDER BY track",
                         [dataset]).fetchall()
    rows: list[dict] = []
    tests = _Williams(method)
    for track, skill in tracks:
        humans = models.apply(human_scores(con, dataset, track, level, aggregate), level)
        scores = models.apply(metric_scores(con, dataset, track, level, origin, flavor, tokenizer, system_aggregate),
                              level)
        if scores.empty:
            continue  # nothing to correlate on this track: no metric has values here
        metrics = scores.pivot_table(index="unit", columns="metric", values="value", aggfunc="first")
        metrics = metrics[_order(metrics.columns, PAPER_ORDER)]
        wide = (humans.pivot_table(index="unit", columns="dimension", values="value", aggfunc="first")
                if not humans.empty else pd.DataFrame())
        human, dims, reason = human_vector(wide, dimension)
        if human is None:
            rows += [_row(m, skill, track, dimension, dims, Correlation(method, 0, reason=reason)) for m in metrics]
            continue
        tests.data[track] = (metrics, human)
        cells = _track_cells(metrics, human, method)
        for metric, c in cells.items():
            rows.append(_row(metric, skill, track, dimension, dims, c))
        _mark_best(rows, track, cells, tests)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    if frame.empty or frame["r"].isna().all():
        raise ValueError(_nothing(con, dataset, level, origin, frame))
    frame = pd.concat([frame, _pooled(frame, tests)], ignore_index=True)
    frame = _sorted(frame)[COLUMNS]
    frame["rank"] = frame["rank"].astype("Int64")
    return frame


def _row(metric: str, skill: str, track: str, dimension: str, dims: str, c: Correlation) -> dict:
    low, high = fisher_ci(c.r, c.n) if c.defined else (math.nan, math.nan)
    return {"metric": metric, "skill": skill, "track": track, "dimension": dimension, "r": c.r if c.defined else math.nan,
            "ci_low": low, "ci_high": high, "n": c.n, "p": c.p if c.defined else math.nan,
            "tied_with_best": None, "rank": math.nan, "dimensions": dims,
            "ci": "fisher-z 95% se=1/sqrt(n-3)" if not math.isnan(low) else "",
            "note": c.reason or ("" if c.n > 3 else f"n = {c.n}: no interval")}


def _mark_best(rows: list[dict], track: str, cells: dict[str, Correlation], tests: _Williams) -> None:
    defined = {m: c.r for m, c in cells.items() if c.defined}
    if not defined:
        return
    best = max(defined, key=lambda m: defined[m])
    ranks = pd.Series(defined).rank(ascending=False, method="min")
    for row in rows:
        if row["track"] != track or row["metric"] not in defined:
            continue
        m = row["metric"]
        row["rank"] = int(ranks[m])
        if m == best:
            row["tied_with_best"] = True
            continue
        p, n = tests.p(track, best, m)
        row["tied_with_best"] = None if math.isnan(p) else bool(p >= ALPHA)
        if n < LOW_POWER_N:
            row["note"] = (row["note"] + "; " if row["note"] else "") + f"low power: Williams' test on n = {n}"


def _pooled_note(part: pd.DataFrame, ok: pd.DataFrame, pooled: dict) -> str:
    """Why a pooled cell is undefined (the tracks' own reason first), else how many tracks it pools."""
    if ok.empty:
        return part["note"].iloc[0]
    if pooled["note"]:
        return pooled["note"]
    return f"{len(ok)} track(s)" + (f"; undefined on {len(part) - len(ok)}" if len(part) > len(ok) else "")


def _pooled(frame: pd.DataFrame, tests: _Williams) -> pd.DataFrame:
    rows = []
    for (skill, metric), part in frame.groupby(["skill", "metric"], sort=False):
        ok = part[part["r"].notna()]
        pooled = pool(ok["r"].tolist(), ok["n"].astype(int).tolist())
        rows.append({"metric": metric, "skill": skill, "track": POOLED, "dimension": part["dimension"].iloc[0],
                     "r": pooled["r"], "ci_low": pooled["ci_low"], "ci_high": pooled["ci_high"], "n": pooled["n"],
                     "p": pooled["p"], "tied_with_best": None, "rank": math.nan,
                     "dimensions": ";".join(dict.fromkeys(d for d in part["dimensions"] if d)),
                     "ci": "fixed-effect fisher-z 95%, weights n-3" if not math.isnan(pooled["r"]) else "",
                     "note": _pooled_note(part, ok, pooled)})
    pooled = pd.DataFrame(rows, columns=frame.columns)
    for skill, part in pooled.groupby("skill"):
        defined = part[part["r"].notna()]
        if defined.empty:
            continue
        best = defined.loc[defined["r"].idxmax(), "metric"]
        pooled.loc[defined.index, "rank"] = defined["r"].rank(ascending=False, method="min")
        tracks = [t for t in dict.fromkeys(frame.loc[frame["skill"] == skill, "track"]) if t in tests.data]
        for idx in defined.index:
            metric = pooled.at[idx, "metric"]
            if metric == best:
                pooled.at[idx, "tied_with_best"] = True
                continue
            # per track: Williams against the skill's best metric (not the track's best)
            ps, ns = [], []
            for track in tracks:
                metrics, _ = tests.data[track]
                if best not in metrics or metric not in metrics:
                    continue
                p, n = tests.p(track, best, metric)
                ps.append(p)
                ns.append(n)
            p = stouffer(ps, ns)
            pooled.at[idx, "tied_with_best"] = None if math.isnan(p) else bool(p >= ALPHA)
    return pooled


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    skills = {s: i for i, s in enumerate(SKILL_ORDER)}
    order = frame.assign(_s=frame["skill"].map(lambda s: skills.get(s, len(skills))),
                         _t=frame["track"].eq(POOLED).map({True: 0, False: 1}),
                         _m=frame["metric"].map({m: i for i, m in enumerate(_order(frame["metric"], PAPER_ORDER))}))
    return order.sort_values(["_s", "skill", "_t", "track", "_m"]).reset_index(drop=True)


def choices(con, dataset: str) -> list[tuple[str, str]]:
    """The (level, origin) pairs with something to correlate in the dataset, most informative first:
    published system tables, computed system scores (three or more models on a track), then
    per-response scores at turn and dialogue level."""
    def count(sql: str) -> int:
        return con.execute(sql, [dataset]).fetchall()[0][0]

    rated = count("SELECT count(*) FROM human_ratings WHERE dataset = ?")
    per_response = count("SELECT count(*) FROM human_ratings WHERE dataset = ? AND target <> 'system'")
    published = count("SELECT count(*) FROM system_scores WHERE dataset = ? AND origin = 'published'")
    systems = count("""SELECT coalesce(max(k), 0) FROM (SELECT count(DISTINCT model) AS k FROM system_scores
                       WHERE dataset = ? AND origin = 'computed' GROUP BY track)""")
    out = []
    if rated and published:
        out.append(("system", "published"))
    if rated and systems >= 3:
        out.append(("system", "computed"))
    if per_response and systems:
        out += [("turn", "computed"), ("dialogue", "computed")]
    return out


def _nothing(con, dataset: str, level: str, origin: str, frame: pd.DataFrame) -> str:
    """Why a dataset has nothing to show at this level and origin, and what does work."""
    why = frame["note"].iloc[0] if not frame.empty else f"no {origin} metric values at {level} level"
    other = [f"--level {lv} --origin {o}" for lv, o in choices(con, dataset) if (lv, o) != (level, origin)]
    hint = f"; try {' or '.join(other)}" if other else "; it needs metric values and human ratings of the same units"
    return f"nothing to correlate in {dataset!r} at {level} level ({origin}): {why}{hint}"
