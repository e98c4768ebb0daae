"""Inter-annotator agreement per track and dimension, with seeded bootstrap CIs over rated targets.

- Cohen's kappa for each annotator pair on the targets both rated: unweighted, linear and quadratic
  weights on category ranks (as statsmodels' cohens_kappa and sklearn do);
- Fleiss' kappa over the targets rated by the most common number of annotators (it needs a fixed
  number of raters per target; the note says how many targets it used and how many it left out);
- Krippendorff's alpha, nominal / ordinal / interval, from the coincidence matrix (any number of
  annotators per target, missing ratings allowed; targets with one rating do not pair);
- per annotator: mean score and bias (their mean minus the mean of all ratings of the same targets).
Every statistic is a function of a sum of per-target tables, so a bootstrap resample of targets
is one weighted sum: 1,000 resamples cost little more than one estimate. A resample where a statistic has
no value is counted in the row's note; past 5% of resamples the interval is withheld (stats.interval).
Correlations between annotators, as dialogue papers report agreement, are in agreement_corr.
"""
from __future__ import annotations

from itertools import combinations

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.stats import interval
from evalcore.analysis.ties import snap

COLUMNS = ["track", "dimension", "level", "statistic", "annotators", "value", "ci_low", "ci_high", "n_items",
           "n_annotators", "note"]
MIN_UNITS = 2   # a chance-corrected statistic over one unit says nothing (Fleiss' kappa of one unit can be -1)
WEIGHTS = ("unweighted", "linear", "quadratic")
LEVELS = ("nominal", "ordinal", "interval")


# ---------------------------------------------------------------- the statistics
def _kappa_weights(k: int, kind: str) -> np.ndarray:
    i, j = np.indices((k, k))
    if kind == "unweighted" or k == 1:
        return (i != j).astype(float)
    d = np.abs(i - j) / (k - 1)
    return d if kind == "linear" else d ** 2


def kappa_from_table(table: np.ndarray, kind: str = "unweighted") -> float:
    """Cohen's kappa from a k x k confusion table of counts: 1 - sum(W O) / sum(W E)."""
    n = table.sum()
    if n == 0:
        return float("nan")
    obs = table / n
    exp = np.outer(obs.sum(1), obs.sum(0))
    w = _kappa_weights(len(table), kind)
    denom = (w * exp).sum()
    return float(1 - (w * obs).sum() / denom) if denom > 0 else float("nan")


def cohen_kappa(a, b, kind: str = "unweighted", categories=None) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if categories is None:   # scores equal up to float noise are one category (ties.snap)
        both = snap(np.concatenate([a, b]))
        a, b = both[:len(a)], both[len(a):]
    cats = np.unique(np.concatenate([a, b])) if categories is None else np.asarray(categories, float)
    table = np.zeros((len(cats), len(cats)))
    np.add.at(table, (np.searchsorted(cats, a), np.searchsorted(cats, b)), 1)
    return kappa_from_table(table, kind)


def fleiss_from_counts(counts: np.ndarray) -> float:
    """Fleiss' kappa from an items x categories matrix of rater counts (same raters per item)."""
    n_items = len(counts)
    if n_items == 0:
        return float("nan")
    m = counts.sum(1)[0]
    if m < 2:
        return float("nan")
    p_j = counts.sum(0) / (n_items * m)
    p_i = ((counts * (counts - 1)).sum(1)) / (m * (m - 1))
    p_bar, p_e = p_i.mean(), (p_j ** 2).sum()
    return float((p_bar - p_e) / (1 - p_e)) if p_e < 1 else float("nan")


def _unit_coincidences(units: list[np.ndarray], cats: np.ndarray) -> np.ndarray:
    """Per unit, its k x k coincidence table: ordered pairs of its values, each weighted 1/(m - 1)."""
    k = len(cats)
    out = np.zeros((len(units), k, k))
    for u, vals in enumerate(units):
        m = len(vals)
        if m < 2:
            continue
        c = np.bincount(np.searchsorted(cats, vals), minlength=k).astype(float)
        out[u] = (np.outer(c, c) - np.diag(c)) / (m - 1)
    return out


def _alpha_delta(cats: np.ndarray, marg: np.ndarray, level: str) -> np.ndarray:
    i, j = np.indices((len(cats), len(cats)))
    if level == "nominal":
        return (i != j).astype(float)
    if level == "interval":
        return (cats[i] - cats[j]) ** 2
    cum = np.concatenate([[0], np.cumsum(marg)])
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    return (cum[hi + 1] - cum[lo] - (marg[i] + marg[j]) / 2) ** 2


def alpha_from_coincidences(o: np.ndarray, cats: np.ndarray, level: str) -> float:
    marg = o.sum(1)
    n = marg.sum()
    if n <= 1:
        return float("nan")
    delta = _alpha_delta(cats, marg, level)
    expected = (np.outer(marg, marg) * delta).sum()
    if expected == 0:
        return float("nan")
    return float(1 - (n - 1) * (o * delta).sum() / expected)


def krippendorff_alpha(data, level: str = "interval") -> float:
    """data: annotators x units, NaN for a missing rating (the krippendorff package's layout)."""
    data = np.asarray(data, float)
    data = snap(data.ravel()).reshape(data.shape)   # scores equal up to float noise are one category (ties.snap)
    units = [col[~np.isnan(col)] for col in data.T]
    cats = np.unique(data[~np.isnan(data)])
    return alpha_from_coincidences(_unit_coincidences(units, cats).sum(0), cats, level)


# ---------------------------------------------------------------- from the store
def ratings(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None,
            origin: str | None = None) -> pd.DataFrame:
    """One row per rating: track, dimension, level (turn: a response; dialogue: a whole dialogue), unit (the rated
    target and model), annotator, slot (1, 2, ...: the rating's position among its unit's ratings, in the order
    they were stored: a file's column or list position), score; `origin`: only those of one source (a rating
    task's: 'task:<id>')."""
    return con.execute("""
        SELECT track, dimension, CASE target WHEN 'dialogue' THEN 'dialogue' ELSE 'turn' END AS level,
               target || ':' || coalesce(item_id, dialogue_id, '') || chr(31) || model AS unit, annotator,
               row_number() OVER (PARTITION BY track, dimension, target, item_id, dialogue_id, model
                                  ORDER BY rowid) AS slot, score
        FROM human_ratings WHERE dataset = ? AND (? IS NULL OR track = ?) AND target <> 'system'
          AND (? IS NULL OR origin = ?)
        ORDER BY track, dimension, unit, annotator
    """, [dataset, track, track, origin, origin]).df()


def _ci(stat, tables: np.ndarray, draws: np.ndarray) -> tuple[float, float, str]:
    """`stat` maps a (resamples, k, k) stack of summed tables to one value per resample: (low, high, note)."""
    if draws is None or len(tables) == 0:
        return float("nan"), float("nan"), ""
    # draws: resamples x units counts; each resample's table is a weighted sum of unit tables,
    # all of them in one matrix product
    summed = (draws @ tables.reshape(len(tables), -1)).reshape(len(draws), *tables.shape[1:])
    return interval(stat(summed))


def _kappa_batch(tables: np.ndarray, kind: str) -> np.ndarray:
    """kappa_from_table over a (B, k, k) stack of tables."""
    n = tables.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        obs = tables / n[:, None, None]
        exp = obs.sum(2)[:, :, None] * obs.sum(1)[:, None, :]
        w = _kappa_weights(tables.shape[1], kind)
        denom = (w * exp).sum(axis=(1, 2))
        out = 1 - (w * obs).sum(axis=(1, 2)) / denom
    out[(n == 0) | ~(denom > 0)] = np.nan
    return out


def _alpha_batch(o: np.ndarray, cats: np.ndarray, level: str) -> np.ndarray:
    """alpha_from_coincidences over a (B, k, k) stack of coincidence matrices."""
    marg = o.sum(axis=2)
    n = marg.sum(axis=1)
    k = len(cats)
    i, j = np.indices((k, k))
    if level == "ordinal":
        cum = np.concatenate([np.zeros((len(o), 1)), np.cumsum(marg, axis=1)], axis=1)
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        delta = (cum[:, hi + 1] - cum[:, lo] - (marg[:, i] + marg[:, j]) / 2) ** 2
    else:
        delta = np.broadcast_to(_alpha_delta(cats, marg[0], level), o.shape)
    expected = (marg[:, :, None] * marg[:, None, :] * delta).sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 1 - (n - 1) * (o * delta).sum(axis=(1, 2)) / expected
    out[(n <= 1) | (expected == 0)] = np.nan
    return out


def _draws(n_units: int, bootstrap: int, rng: np.random.Generator) -> np.ndarray | None:
    if bootstrap <= 0 or n_units == 0:
        return None
    return rng.multinomial(n_units, np.full(n_units, 1 / n_units), size=bootstrap).astype(float)


def agreement(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None, *,
              bootstrap: int = 1000, seed: int = 0, origin: str | None = None) -> pd.DataFrame:
    """The table of the `agreement` command: COLUMNS, one row per statistic (per pair for Cohen)."""
    return agreement_of(ratings(con, dataset, track, origin), bootstrap=bootstrap, seed=seed)


def agreement_of(frame: pd.DataFrame, *, bootstrap: int = 1000, seed: int = 0) -> pd.DataFrame:
    """agreement() over any frame of ratings (track, dimension, unit, annotator, score): a task's votes too."""
    rows = []
    frame = frame if "level" in frame else frame.assign(level="turn")
    for (tr, dim, lvl), group in frame.groupby(["track", "dimension", "level"], sort=True):
        rng = np.random.default_rng(seed)
        group = group.assign(score=snap(group["score"].to_numpy(float)))   # noise-apart scores: one category
        wide = group.pivot_table(index="unit", columns="annotator", values="score", aggfunc="mean")
        cats = np.unique(group["score"].to_numpy(float))
        k = len(cats)
        annotators = list(wide.columns)
        base = {"track": tr, "dimension": dim, "level": lvl}
        for a, b in combinations(annotators, 2):
            both = wide[[a, b]].dropna()
            if both.empty:  # crowd data: most pairs of workers never rated the same target
                continue
            ia, ib = np.searchsorted(cats, both[a].to_numpy()), np.searchsorted(cats, both[b].to_numpy())
            tables = np.zeros((len(both), k, k))
            tables[np.arange(len(both)), ia, ib] = 1
            draws = _draws(len(both), bootstrap, rng)
            for kind in WEIGHTS:
                lo, hi, note = _ci(lambda t, kind=kind: _kappa_batch(t, kind), tables, draws)
                rows.append({**base, "statistic": f"cohen_kappa_{kind}", "annotators": f"{a}|{b}",
                             "value": kappa_from_table(tables.sum(0), kind), "ci_low": lo, "ci_high": hi,
                             "n_items": len(both), "n_annotators": 2, "note": note})
        per_unit = wide.notna().sum(axis=1)
        if len(per_unit) and per_unit.max() >= 2:
            m = int(per_unit[per_unit >= 2].mode().max())
            units = wide[per_unit == m]
            counts = np.stack([np.bincount(np.searchsorted(cats, r[~np.isnan(r)]), minlength=k)
                               for r in units.to_numpy(float)]).astype(float)
            draws = _draws(len(counts), bootstrap, rng)
            lo, hi, note = interval([fleiss_from_counts(np.repeat(counts, w.astype(int), axis=0))
                                     for w in (draws if draws is not None else [])])
            rows.append({**base, "statistic": "fleiss_kappa", "annotators": f"{m} per item",
                         "value": fleiss_from_counts(counts), "ci_low": lo, "ci_high": hi,
                         "n_items": len(counts), "n_annotators": len(annotators),
                         "note": "; ".join(filter(None, [_fleiss_items(per_unit, m), note]))})
        units = [r[~np.isnan(r)] for r in wide.to_numpy(float)]
        tables = _unit_coincidences(units, cats)
        paired = tables.sum(axis=(1, 2)) > 0
        tables = tables[paired]
        draws = _draws(len(tables), bootstrap, rng)
        for level in LEVELS:
            lo, hi, note = _ci(lambda t, level=level: _alpha_batch(t, cats, level), tables, draws)
            rows.append({**base, "statistic": f"krippendorff_alpha_{level}", "annotators": "all",
                         "value": alpha_from_coincidences(tables.sum(0), cats, level), "ci_low": lo, "ci_high": hi,
                         "n_items": int(paired.sum()), "n_annotators": len(annotators), "note": note})
    return _withheld(pd.DataFrame(rows, columns=COLUMNS))


def vote_agreement(frame: pd.DataFrame, *, bootstrap: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Pairwise votes (score 1 = model_a, 0 = model_b, 0.5 = tie): per track and dimension, the share of
    pairs of votes by two annotators on the same unit that agree (MT-Bench's human-human agreement), over
    all pairs ('with ties') and over the pairs where neither voted a tie ('without ties'); the CI resamples
    units."""
    rows = []
    for (tr, dim), group in frame.groupby(["track", "dimension"], sort=True):
        rng = np.random.default_rng(seed)
        per_unit = []   # per unit: agreeing pairs, pairs; the same without ties
        for _, votes in group.groupby("unit"):
            v = votes["score"].to_numpy(float)
            if len(v) < 2:
                continue
            decided = v[v != 0.5]
            per_unit.append((sum(a == b for a, b in combinations(v, 2)), len(v) * (len(v) - 1) / 2,
                             sum(a == b for a, b in combinations(decided, 2)), len(decided) * (len(decided) - 1) / 2))
        if not per_unit:
            continue
        counts = np.array(per_unit)
        draws = _draws(len(counts), bootstrap, rng)
        for name, num, den in (("vote_agreement_with_ties", 0, 1), ("vote_agreement_without_ties", 2, 3)):
            total = counts[:, den].sum()
            if total == 0:
                continue
            lo, hi, note = (np.nan, np.nan, "")
            if draws is not None:
                sums = draws @ counts
                with np.errstate(invalid="ignore", divide="ignore"):
                    lo, hi, note = interval(sums[:, num] / sums[:, den])
            rows.append({"track": tr, "dimension": dim, "level": "turn", "statistic": name, "annotators": "all",
                         "value": counts[:, num].sum() / total, "ci_low": lo, "ci_high": hi,
                         "n_items": int((counts[:, den] > 0).sum()), "n_annotators": group["annotator"].nunique(),
                         "note": note})
    return _withheld(pd.DataFrame(rows, columns=COLUMNS), chance_corrected=False)


def _fleiss_items(per_unit: pd.Series, m: int) -> str:
    """Which targets Fleiss' kappa used: it needs the same number of raters on every target."""
    rated = per_unit[per_unit >= 2]
    others = rated[rated != m]
    if others.empty:
        return f"over all {len(rated):,} targets rated by {m} people"
    sizes = ", ".join(f"{n:,} by {k}" for k, n in others.value_counts().sort_index().items())
    return (f"over the {len(rated) - len(others):,} of {len(rated):,} targets rated by {m} people (the most common "
            f"number; Fleiss' kappa needs the same number of raters per target); left out: {sizes}")


def _withheld(frame: pd.DataFrame, *, chance_corrected: bool = True) -> pd.DataFrame:
    """Rows over fewer than MIN_UNITS units: a kappa's or alpha's value and interval are withheld (NaN) with the
    reason in `note`; a share of agreeing votes keeps its value (a plain proportion) but not its interval (a
    resample of one unit is that unit)."""
    few = frame["n_items"] < MIN_UNITS
    if not few.any():
        return frame
    frame = frame.astype({"note": object})
    cols = ["value", "ci_low", "ci_high"] if chance_corrected else ["ci_low", "ci_high"]
    frame.loc[few, cols] = np.nan
    why = "" if chance_corrected else " for an interval"
    frame.loc[few, "note"] = [f"withheld: over {n} unit(s); agreement needs at least {MIN_UNITS} units rated by the "
                              f"same people{why}" for n in frame.loc[few, "n_items"]]
    return frame


def annotator_bias(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None) -> pd.DataFrame:
    """Per track, dimension and annotator: n, mean, and bias = mean minus the mean of all ratings
    of the same targets."""
    frame = ratings(con, dataset, track)
    if frame.empty:
        return pd.DataFrame(columns=["track", "dimension", "annotator", "n", "mean", "bias"])
    unit_mean = frame.groupby(["track", "dimension", "unit"])["score"].transform("mean")
    frame = frame.assign(diff=frame["score"] - unit_mean)
    out = frame.groupby(["track", "dimension", "annotator"]).agg(
        n=("score", "size"), mean=("score", "mean"), bias=("diff", "mean")).reset_index()
    return out
