"""Which metric to trust for which skill: metric-human correlations per track, pooled per skill.

Cells are (metric, skill, track): the correlation of the metric with one human dimension, or with
the mean of the track's dimensions (`dimension="mean"`: units rated on every dimension of the track,
their scores averaged), at system, dialogue or turn level (see evalcore.analysis.correlate for the units).

- Track cell: r (Pearson, Spearman or Kendall, equal to scipy), two-sided p, n and a 95% interval
  from Fisher's z with standard error 1/sqrt(n - 3) (for Spearman and Kendall a common
  approximation, stated in the `ci` column).
- Pooled cell per skill: fixed-effect meta-analysis of Fisher z over the skill's tracks where the
  cell is defined, weights n - 3: z = sum((n_i - 3) z_i) / sum(n_i - 3), se = 1/sqrt(sum(n_i - 3)),
  r = tanh(z), CI tanh(z -+ 1.96 se), p from z / se against the normal. A skill with one track keeps
  that track's own p (its r and CI are the same either way).
- p_adjusted: the column's p values (a track's, or a skill's pooled ones) adjusted for comparing
  that many metrics, by Holm's step-down method (adjust="holm", the default) or not at all ("none").
- mark: `best` is the highest r among the significantly positive cells of the column (adjusted p <
  alpha and r > 0); a column with no such cell has no best, whatever its highest r. `tied`: a
  significantly positive cell not significantly worse than the best. `disagrees`: a significantly
  negative cell (people and metric disagree): never best, never tied.
- tied_with_best: not significantly worse than the column's best. On a track: Williams' test of
  r(best, human) > r(metric, human) given r(best, metric), one-sided alpha, on the units where all
  three are known. Pooled: the tracks' one-sided p values combined by Stouffer's weighted Z (weights
  sqrt(n_i - 3)). None where the column has no best.
- rank: 1 = highest r within the track, or highest pooled r within the skill (an order, not a verdict).


verdicts() (analysis.trust_verdicts) turns the pooled cells into one sentence per skill; opening()
(analysis.trust_opening) is where a view opens when nobody chose a level.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalcore.analysis.correlate import Models, check_options, human_scores, metric_scores
from evalcore.analysis.options import ADJUSTMENTS
from evalcore.analysis.stats import Correlation, correlate, correlate_prepared, prepare, williams
from evalcore.analysis.ties import snap
from evalcore.analysis.trust_levels import nothing_at
from evalcore.analysis.trust_stats import fisher_ci, holm, pool, stouffer
from evalcore.core import i18n
from evalcore.core.i18n import _, ngettext
from evalcore.metrics.registry import HUMAN_ORDER, PAPER_ORDER, ordered
from evalcore.store.queries import require_dataset

POOLED = "pooled"
ALPHA = 0.05
SKILL_ORDER = ["chitchat", "knowledge", "recommendation", "persona", "task-oriented"]
COLUMNS = ["metric", "skill", "track", "dimension", "r", "ci_low", "ci_high", "n", "p", "tied_with_best", "rank",
           "dimensions", "ci", "note", "p_adjusted", "mark"]
LOW_POWER_N = 30  # below this many units a Williams test rarely separates two metrics (say so)
VERDICT_N = 4  # a skill's verdict pools tracks with n > 3 (Fisher z's weight is n - 3): a track needs 4 units
UNIT = {"system": "model", "dialogue": "dialogue", "turn": "response"}  # what one unit is, at each level


def units(n: int, level: str) -> str:
    """n of a level's units as a sentence counts them ("1 model", "2,000 responses"), in a page's language (with
    Chinese's measure word: "3 个模型")."""
    if level == "system":
        said = ngettext("{n} model", "{n} models", n)
    elif level == "dialogue":
        said = ngettext("{n} dialogue", "{n} dialogues", n)
    else:
        said = ngettext("{n} response", "{n} responses", n)
    return said.format(n=i18n.number(n))


def human_vector(wide: pd.DataFrame, dimension: str) -> tuple[pd.Series | None, str, str]:
    """(values per unit, dimensions used, reason when undefined) for one track's wide human frame."""
    if wide.empty:
        return None, "", _("no human scores at this level")
    if dimension != "mean":
        if dimension not in wide.columns:
            return None, "", _("no {dimension} ratings on this track").format(dimension=dimension)
        return wide[dimension].dropna(), dimension, ""
    dims = ordered(wide.columns, HUMAN_ORDER)
    complete = wide[dims].dropna()
    if complete.empty:
        return None, ",".join(dims), _("no unit rated on every dimension")
    return complete.mean(axis=1), ",".join(dims), ""


def _track_cells(metrics: pd.DataFrame, human: pd.Series, method: str) -> dict[str, Correlation]:
    # the metrics on the human scores' units once, a column per metric contiguous for correlate (a reindex per
    # metric was a pandas lookup per cell: 87 cells took 1.5 s of the trust page's first visit)
    values = metrics.reindex(human.index).to_numpy(float).T.copy()
    h = human.to_numpy(float)
    ph = prepare(h) if not np.isnan(h).any() else None   # the human side's ranks and ties, once for every metric
    return {metric: correlate_prepared(method, prepare(values[j]), ph)
            if ph is not None and not np.isnan(values[j]).any() else correlate(values[j], h, method)
            for j, metric in enumerate(metrics.columns)}


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


@dataclass
class Track:
    """One track's units: metric values (unit x metric) and human scores (unit x dimension)."""

    track: str
    skill: str
    metrics: pd.DataFrame
    wide: pd.DataFrame


def load_tracks(con, dataset: str, level: str, origin: str, flavor: str, tokenizer: str | None, aggregate: str,
          models: Models, system_aggregate: str) -> list[Track]:
    """Every track's metric and human values at this level, read once (the verdicts' sweep over methods
    and dimensions reuses them)."""
    tracks = con.execute("SELECT track, coalesce(skill, 'other') FROM tracks WHERE dataset = ? ORDER BY track",
                         [dataset]).fetchall()
    out = []
    for track, skill in tracks:
        scores = models.apply(metric_scores(con, dataset, track, level, origin, flavor, tokenizer, system_aggregate),
                              level)
        if scores.empty:
            continue  # nothing to correlate on this track: no metric has values here
        humans = models.apply(human_scores(con, dataset, track, level, aggregate), level)
        metrics = scores.pivot_table(index="unit", columns="metric", values="value", aggfunc="first")
        wide = (humans.pivot_table(index="unit", columns="dimension", values="value", aggfunc="first")
                if not humans.empty else pd.DataFrame())
        out.append(Track(track, skill, metrics[ordered(metrics.columns, PAPER_ORDER)], wide))
    return out


def trust(con, dataset: str, *, level: str = "system", method: str = "spearman", dimension: str = "mean",
          origin: str = "computed", flavor: str = "default", tokenizer: str | None = None,
          aggregate: str = "mean", models: Models = Models(), system_aggregate: str = "corpus",
          alpha: float = ALPHA, adjust: str = "holm") -> pd.DataFrame:
    """Long table (COLUMNS): one row per metric, skill and track, plus one `pooled` row per metric and skill."""
    return read_and_table(con, dataset, level, method, dimension, origin, flavor, tokenizer, aggregate, models,
                           system_aggregate, alpha, adjust)[1]


def read_and_table(con, dataset: str, level: str, method: str, dimension: str, origin: str, flavor: str,
                    tokenizer: str | None, aggregate: str, models: Models, system_aggregate: str, alpha: float,
                    adjust: str) -> tuple[list[Track], pd.DataFrame]:
    """The options checked, the values read, and the table at one setting (an error that says what exists
    when there is nothing to correlate)."""
    check_options(level, origin, [method], aggregate)
    check_adjust(adjust, alpha)
    require_dataset(con, dataset)
    loaded = load_tracks(con, dataset, level, origin, flavor, tokenizer, aggregate, models, system_aggregate)
    frame = table(loaded, method, dimension, alpha=alpha, adjust=adjust)
    if frame.empty or frame["r"].isna().all():
        raise ValueError(nothing_at(con, dataset, level, origin, frame))
    return loaded, frame


def check_adjust(adjust: str, alpha: float) -> None:
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"unknown adjustment {adjust!r}; known: {', '.join(ADJUSTMENTS)}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")


def table(loaded: list[Track], method: str, dimension: str, *, alpha: float, adjust: str,
           ties: bool = True) -> pd.DataFrame:
    """The long table for one method and dimension. Without `ties`, no Williams test is run (the sweep
    over settings needs only each column's best). The cells are plain rows until the table is made: the trust
    page's first visit makes 17 tables (the sweep), and pandas lookups cell by cell took 3 s of it."""
    rows: list[dict] = []
    tests = _Williams(method)
    for t in loaded:
        human, dims, reason = human_vector(t.wide, dimension)
        if human is None:
            rows += [_row(m, t.skill, t.track, dimension, dims, Correlation(method, 0, reason=reason)) for m in t.metrics]
            continue
        tests.data[t.track] = (t.metrics, human)
        for metric, c in _track_cells(t.metrics, human, method).items():
            rows.append(_row(metric, t.skill, t.track, dimension, dims, c))
    if all(math.isnan(row["r"]) for row in rows):   # none defined (or no cell at all)
        return pd.DataFrame(rows, columns=COLUMNS)
    rows += _pooled(rows)
    _marks(rows, tests, alpha=alpha, adjust=adjust, ties=ties)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["tied_with_best"] = frame["tied_with_best"].astype(object)
    frame = _sorted(frame)[COLUMNS]
    frame["rank"] = frame["rank"].astype("Int64")
    return frame


def _row(metric: str, skill: str, track: str, dimension: str, dims: str, c: Correlation) -> dict:
    low, high = fisher_ci(c.r, c.n) if c.defined else (math.nan, math.nan)
    return {"metric": metric, "skill": skill, "track": track, "dimension": dimension, "r": c.r if c.defined else math.nan,
            "ci_low": low, "ci_high": high, "n": c.n, "p": c.p if c.defined else math.nan,
            "tied_with_best": None, "rank": math.nan, "dimensions": dims,
            "ci": "fisher-z 95% se=1/sqrt(n-3)" if not math.isnan(low) else "",
            "note": c.reason or ("" if c.n > 3 else _("n = {n}: no interval").format(n=c.n)), "p_adjusted": math.nan, "mark": ""}


def _groups(rows: list[dict], *keys: str) -> dict[tuple, list[dict]]:
    """The rows by the values of `keys`, in the order each group first appears (pandas' groupby(sort=False))."""
    out: dict[tuple, list[dict]] = {}
    for row in rows:
        out.setdefault(tuple(row[k] for k in keys), []).append(row)
    return out


def _marks(rows: list[dict], tests: _Williams, *, alpha: float, adjust: str, ties: bool) -> None:
    """Per column (a track, or a skill's pooled cells): rank by r, p adjusted over the column's metrics,
    and the marks, set on the rows. `best`: the highest r among the significantly positive cells (adjusted p <
    alpha, r > 0), none when there is no such cell; `tied`: significantly positive and not significantly worse
    than the best (Williams' test, one-sided alpha; pooled: the tracks' tests combined by Stouffer's Z);
    `disagrees`: significantly negative. tied_with_best is True for the best and its ties, False for
    the rest of the defined cells, None where the column has no best or the test says nothing."""
    tracks_of: dict[str, list[str]] = {}   # a skill's tracks, in the rows' order (the pooled cells' Stouffer)
    for row in rows:
        if row["track"] != POOLED and row["track"] not in tracks_of.setdefault(row["skill"], []):
            tracks_of[row["skill"]].append(row["track"])
    for (skill, track), part in _groups(rows, "skill", "track").items():
        defined = [row for row in part if not math.isnan(row["r"])]
        if not defined:
            continue
        r = snap(np.array([row["r"] for row in defined]))   # r equal up to float noise: one rank
        for row, above in zip(defined, (r[None, :] > r[:, None]).sum(axis=1)):
            row["rank"] = float(above + 1)   # pandas' rank(ascending=False, method="min")
        ps = [row["p"] for row in defined]
        padj = holm(ps) if adjust == "holm" else ps
        positive = []
        for row, p in zip(defined, padj):
            row["p_adjusted"] = p
            if p < alpha and row["r"] < 0:
                row["mark"] = "disagrees"
            elif p < alpha and row["r"] > 0:
                positive.append(row)
        if not positive:
            continue
        best = max(positive, key=lambda row: row["r"])["metric"]   # the first of equal highest r, as idxmax
        positive_ids = {id(row) for row in positive}
        for row in defined:
            if row["metric"] == best:
                row["tied_with_best"], row["mark"] = True, "best"
                continue
            if not ties:
                continue
            p = _tie_p(row, tests, tracks_of.get(skill, []), best)
            row["tied_with_best"] = None if math.isnan(p) else bool(p >= alpha)
            if row["tied_with_best"] is True and id(row) in positive_ids:
                row["mark"] = "tied"


def _tie_p(row: dict, tests: _Williams, tracks: list[str], best: str) -> float:
    """One-sided p that `best` correlates more with people than the row's metric does: Williams' test on a
    track (a low-power note below LOW_POWER_N units), the skill's `tracks`' tests by Stouffer's Z when pooled."""
    metric = row["metric"]
    if row["track"] != POOLED:
        p, n = tests.p(row["track"], best, metric)
        if n < LOW_POWER_N:
            low = _("low power: Williams' test on n = {n}").format(n=n)
            row["note"] = _("; ").join([row["note"], low]) if row["note"] else low
        return p
    ps, ns = [], []
    for t in tracks:
        if t not in tests.data:
            continue
        metrics, __ = tests.data[t]
        if best in metrics and metric in metrics:
            p, n = tests.p(t, best, metric)
            ps.append(p)
            ns.append(n)
    return stouffer(ps, ns)


def _pooled_note(part: list[dict], ok: list[dict], pooled: dict) -> str:
    """Why a pooled cell is undefined (the tracks' own reason first), else how many tracks it pools."""
    if not ok:
        return part[0]["note"]
    if pooled["note"]:
        return pooled["note"]
    if len(part) > len(ok):
        return ngettext("pools {n} track; undefined on {undefined}", "pools {n} tracks; undefined on {undefined}",
                        len(ok)).format(n=i18n.number(len(ok)), undefined=len(part) - len(ok))
    return ngettext("pools {n} track", "pools {n} tracks", len(ok)).format(n=i18n.number(len(ok)))


def _pooled(rows: list[dict]) -> list[dict]:
    out = []
    for (skill, metric), part in _groups(rows, "skill", "metric").items():
        ok = [row for row in part if not math.isnan(row["r"])]
        pooled = pool([row["r"] for row in ok], [int(row["n"]) for row in ok])
        if len(ok) == 1:  # one track: its own test (exact, as scipy's), not the normal approximation of Fisher z
            pooled["p"] = float(ok[0]["p"])
        out.append({"metric": metric, "skill": skill, "track": POOLED, "dimension": part[0]["dimension"],
                    "r": pooled["r"], "ci_low": pooled["ci_low"], "ci_high": pooled["ci_high"], "n": pooled["n"],
                    "p": pooled["p"], "tied_with_best": None, "rank": math.nan,
                    "dimensions": ";".join(dict.fromkeys(row["dimensions"] for row in part if row["dimensions"])),
                    "ci": "fixed-effect fisher-z 95%, weights n-3" if not math.isnan(pooled["r"]) else "",
                    "note": _pooled_note(part, ok, pooled), "p_adjusted": math.nan, "mark": ""})
    return out


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    skills = {s: i for i, s in enumerate(SKILL_ORDER)}
    order = frame.assign(_s=frame["skill"].map(lambda s: skills.get(s, len(skills))),
                         _t=frame["track"].eq(POOLED).map({True: 0, False: 1}),
                         _m=frame["metric"].map({m: i for i, m in enumerate(ordered(frame["metric"], PAPER_ORDER))}))
    return order.sort_values(["_s", "skill", "_t", "track", "_m"]).reset_index(drop=True)
