"""Agreement as dialogue papers report it: correlations between annotators, each paper with its own definition.

- corr_pairwise (USR, Mehri & Eskenazi, ACL 2020): for each pair of annotators, the correlation of their scores
  over the targets both rated; the mean over pairs.
- corr_loo (the judge audit's "human ceiling"; leave-one-out): for each annotator, the correlation of their
  scores with the mean of the other annotators' scores of the same targets; the mean over annotators.
- corr_item_mean (FED, Mehri & Eskenazi, SIGDIAL 2020, Table 3): every annotation against the mean of all
  annotations of its target, itself included, pooled over annotations: one correlation. Targets rated once
  are left out (an annotation equal to its own mean says nothing about agreement).

With Spearman, Pearson or Kendall (tau-b), per track, level (turn: responses; dialogue: whole dialogues) and
dimension. Raters are `ids` (the stored annotator names: people) or `slots` (the k-th rating stored for each
target: the columns of a file as released, such as USR's three lists, which are positions, not people).
Intervals: 95% percentile bootstrap over targets, seeded; resamples without a value are counted and past 5% the
interval is withheld (stats.interval).

Outlier rule 'fed' (FED §3.4): on each target, the one annotation farthest from the mean of the target's
annotations is removed (it removes annotations, never annotators). Among equally far ones the first stored goes.
Not applied to a target with fewer than 3 annotations or when all agree, nor to a dimension whose ratings take
only two values: FED's figures for its two yes/no questions are reproduced only without it.
"""
from __future__ import annotations

import warnings
from itertools import combinations

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.agreement import COLUMNS, agreement_of, ratings
from evalcore.analysis.options import AGREEMENT_RATERS as RATERS
from evalcore.analysis.options import AGREEMENT_STATISTICS, METHODS, OUTLIER_RULES
from evalcore.analysis.stats import Pair, correlate, interval, prepare

CHANCE, *STATISTICS = AGREEMENT_STATISTICS   # chance: Cohen's and Fleiss' kappa, Krippendorff's alpha (agreement.py)
MIN_N = 3   # a correlation over fewer points is not computed (stats.correlate's own floor)
DEFINITIONS = {
    "corr_pairwise": "per pair of annotators, r over the targets both rated; mean over pairs (USR, ACL 2020)",
    "corr_loo": "per annotator, r with the mean of the others on the same targets; mean over annotators (the judge "
                "audit's human ceiling)",
    "corr_item_mean": "every annotation against the mean of all annotations of its target, itself included, pooled "
                      "(FED, SIGDIAL 2020, Table 3)",
}
RULES = {"fed": "FED's outlier rule (§3.4)"}   # per target, the annotation farthest from its mean removed


def _r(x: np.ndarray, y: np.ndarray, method: str) -> float:
    return correlate(x, y, method).r if len(x) >= MIN_N else np.nan


def pairwise_rs(scores: np.ndarray, method: str) -> list[float]:
    """r per pair of raters (columns of targets x raters, NaN = not rated) over the targets both rated."""
    out = []
    for a, b in combinations(range(scores.shape[1]), 2):
        ok = ~np.isnan(scores[:, a]) & ~np.isnan(scores[:, b])
        r = _r(scores[ok, a], scores[ok, b], method)
        if not np.isnan(r):
            out.append(r)
    return out


def _others_mean(scores: np.ndarray, a: int) -> np.ndarray:
    """Per target, the mean of the raters other than `a` (NaN where no one else rated it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # a target no one else rated: NaN, left out by the callers
        return np.nanmean(np.delete(scores, a, axis=1), axis=1)


def loo_rs(scores: np.ndarray, judge: np.ndarray | None, method: str) -> tuple[list[float], list[float]]:
    """Per rater (a column of `scores`) with at least 3 targets also rated by others: r(rater, the others' mean)
    and r(judge, the others' mean) on those targets; judge None: people only (both lists the people's)."""
    people, judged = [], []
    for a in range(scores.shape[1]):
        others = _others_mean(scores, a)
        ok = ~np.isnan(scores[:, a]) & ~np.isnan(others) & (True if judge is None else ~np.isnan(judge))
        if ok.sum() < MIN_N:
            continue
        h = correlate(scores[ok, a], others[ok], method).r   # NaN where undefined (a constant input)
        jr = h if judge is None else correlate(judge[ok], others[ok], method).r
        if not (np.isnan(h) or np.isnan(jr)):
            people.append(h)
            judged.append(jr)
    return people, judged


def item_mean_r(scores: np.ndarray, method: str) -> tuple[float, int]:
    """r of every annotation with its target's mean (itself included), over targets rated at least twice;
    and how many annotations that pooled."""
    rated = ~np.isnan(scores)
    keep = rated.sum(axis=1) >= 2
    scores, rated = scores[keep], rated[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.nanmean(scores, axis=1)
    x = scores[rated]
    y = np.broadcast_to(means[:, None], scores.shape)[rated]
    return _r(x, y, method), len(x)


def statistic(name: str, scores: np.ndarray, method: str) -> tuple[float, int]:
    """(value, how many correlations or annotations it averages or pools) of one definition."""
    if name == "corr_item_mean":
        return item_mean_r(scores, method)
    rs = pairwise_rs(scores, method) if name == "corr_pairwise" else loo_rs(scores, None, method)[0]
    return (float(np.mean(rs)) if rs else np.nan), len(rs)


def draw_values(name: str, scores: np.ndarray, method: str, draws: np.ndarray) -> np.ndarray:
    """statistic(name, scores[d], method)[0] for every draw d (a row of `draws`: target indices). The mean-of-r
    definitions are computed for all draws at once: a resampled target is a weight on its row, so each pair of
    vectors (two raters; a rater and the others' mean, which a row keeps in any resample) is one stats.Pair whose
    tables are counted for every draw together. Where a table would be too large, one draw at a time."""
    if name == "corr_item_mean" or not len(draws):
        return np.array([statistic(name, scores[d], method)[0] for d in draws])
    n = len(scores)
    weights = np.bincount((np.arange(len(draws))[:, None] * n + draws).ravel(), minlength=len(draws) * n)
    weights = weights.reshape(len(draws), n).astype(float)
    total, count = np.zeros(len(draws)), np.zeros(len(draws))
    for x, y, rows in _vector_pairs(name, scores):
        px, py = prepare(x), prepare(y)
        if px.constant or py.constant:
            continue   # constant in every resample too: no r
        rs = Pair(px, py).weighted_r(method, weights[:, rows])
        if rs is None:
            return np.array([statistic(name, scores[d], method)[0] for d in draws])
        defined = ~np.isnan(rs)
        total[defined] += rs[defined]
        count += defined
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _vector_pairs(name: str, scores: np.ndarray):
    """(x, y, rows) of each correlation a mean-of-r definition averages, over the rows where both have a value:
    pairwise, each pair of raters; leave-one-out, each rater against the others' mean."""
    if name == "corr_pairwise":
        for a, b in combinations(range(scores.shape[1]), 2):
            rows = np.flatnonzero(~np.isnan(scores[:, a]) & ~np.isnan(scores[:, b]))
            yield scores[rows, a], scores[rows, b], rows
        return
    for a in range(scores.shape[1]):
        others = _others_mean(scores, a)
        rows = np.flatnonzero(~np.isnan(scores[:, a]) & ~np.isnan(others))
        yield scores[rows, a], others[rows], rows


def exclude_outliers(frame: pd.DataFrame, rule: str = "none") -> tuple[pd.DataFrame, pd.DataFrame]:
    """`frame` (agreement.ratings' columns) without the annotations the rule removes, and per track, level and
    dimension how many it removed of how many (and why a dimension was left as it is)."""
    columns = ["track", "level", "dimension", "removed", "annotations", "note"]
    if rule == "none" or frame.empty:
        return frame, pd.DataFrame(columns=columns)
    if rule not in RULES:
        raise ValueError(f"unknown outlier rule {rule!r}; known: {', '.join(OUTLIER_RULES)}")
    keep = pd.Series(True, index=frame.index)
    counts = []
    for (tr, lvl, dim), group in frame.groupby(["track", "level", "dimension"], sort=True):
        note = ""
        if group["score"].nunique() <= 2:
            note = "not applied: the ratings take two values (a yes/no question)"
        else:
            ordered = group.sort_values(["unit", "slot"])
            mean = ordered.groupby("unit")["score"].transform("mean")
            size = ordered.groupby("unit")["score"].transform("size")
            gap = (ordered["score"] - mean).abs()
            farthest = gap.groupby(ordered["unit"]).transform("max")
            candidates = ordered[(gap == farthest) & (farthest > 0) & (size >= 3)]
            dropped = candidates.groupby("unit").head(1).index   # the first stored of equally far ones
            keep[dropped] = False
        counts.append({"track": tr, "level": lvl, "dimension": dim, "removed": int((~keep[group.index]).sum()),
                       "annotations": len(group), "note": note})
    return frame[keep], pd.DataFrame(counts, columns=columns)


def correlation_agreement(frame: pd.DataFrame, *, statistics=STATISTICS, methods=("spearman", "pearson", "kendall"),
                          raters: str = "ids", bootstrap: int = 1000, seed: int = 0,
                          outliers: pd.DataFrame | None = None, rule: str = "none") -> pd.DataFrame:
    """Rows of agreement.COLUMNS plus `definition`: one per track, level, dimension, statistic and method.
    `frame`: agreement.ratings' columns (after exclude_outliers, whose counts `outliers` names in each note)."""
    unknown = [m for m in methods if m not in METHODS] + [s for s in statistics if s not in STATISTICS]
    if unknown or raters not in RATERS:
        raise ValueError(f"unknown {', '.join(unknown) or raters!r}: statistics {', '.join(STATISTICS)}; methods "
                         f"{', '.join(METHODS)}; raters {', '.join(RATERS)}")
    rater = "annotator" if raters == "ids" else "slot"
    removed = {} if outliers is None else {(r.track, r.level, r.dimension): r for r in outliers.itertuples()}
    rows = []
    for (tr, dim, lvl), group in frame.groupby(["track", "dimension", "level"], sort=True):
        wide = group.pivot_table(index="unit", columns=rater, values="score", aggfunc="mean")
        scores = wide.to_numpy(float)
        rng = np.random.default_rng(seed)
        draws = np.array([rng.integers(0, len(scores), len(scores)) for _ in range(bootstrap)] if len(scores) else [],
                         dtype=np.int64)
        after = _rule_note(removed.get((tr, lvl, dim)), rule)
        for name in statistics:
            for method in methods:
                value, count = statistic(name, scores, method)
                lo, hi, left_out = interval(draw_values(name, scores, method, draws))
                what = "annotations pooled" if name == "corr_item_mean" else (
                    "pairs" if name == "corr_pairwise" else "annotators") + " averaged"
                why = "" if not np.isnan(value) else "no value: fewer than 3 targets rated by the raters compared"
                rows.append({"track": tr, "dimension": dim, "level": lvl, "statistic": f"{name}_{method}",
                             "annotators": f"{raters}: {wide.shape[1]}", "value": value, "ci_low": lo, "ci_high": hi,
                             "n_items": len(scores), "n_annotators": wide.shape[1],
                             "note": "; ".join(filter(None, [why, f"{count:,} {what}", after, left_out])),
                             "definition": DEFINITIONS[name]})
    return pd.DataFrame(rows, columns=[*COLUMNS, "definition"])


def agreement_table(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None, *,
                    statistics=(CHANCE,), methods=("spearman", "pearson", "kendall"), raters: str = "ids",
                    outliers: str = "none", bootstrap: int = 1000, seed: int = 0, origin: str | None = None,
                    dimension: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What `evalcore agreement` prints: the chosen statistics (CHANCE and/or STATISTICS) per track, level and
    dimension (or one dimension), computed after the outlier rule; and the rule's counts of removed annotations."""
    frame = ratings(con, dataset, track, origin)
    if dimension is not None:
        frame = frame[frame["dimension"] == dimension]
    frame, removed = exclude_outliers(frame, outliers)
    parts = []
    if CHANCE in statistics:
        chance = agreement_of(frame, bootstrap=bootstrap, seed=seed)
        if outliers != "none":
            notes = {(r.track, r.level, r.dimension): _rule_note(r, outliers) for r in removed.itertuples()}
            chance["note"] = ["; ".join(filter(None, [n if isinstance(n, str) else "", notes.get(k, "")]))
                              for n, k in zip(chance["note"], zip(chance["track"], chance["level"], chance["dimension"]))]
        parts.append(chance.assign(definition=""))
    chosen = [s for s in statistics if s != CHANCE]
    if chosen:
        parts.append(correlation_agreement(frame, statistics=chosen, methods=methods, raters=raters,
                                           bootstrap=bootstrap, seed=seed, outliers=removed, rule=outliers))
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[*COLUMNS, "definition"])
    return table.sort_values(["track", "level", "dimension"], kind="stable").reset_index(drop=True), removed


def _rule_note(count, rule: str) -> str:
    if rule == "none" or count is None:
        return ""
    if count.note:
        return f"{RULES[rule]} {count.note}"
    return f"after {RULES[rule]}: {count.removed:,} of {count.annotations:,} annotations removed"
