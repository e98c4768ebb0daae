"""A judge against itself: its spread when asked several times and the rank intervals with and without it
(uncertainty), and two signatures of one judge over the same responses (drift)."""
from __future__ import annotations

from itertools import combinations

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.judge_values import PAIRWISE, asked, judge_values, tracks
from evalcore.analysis.stats import correlate, interval
from evalcore.analysis.ties import snap

UNCERTAINTY_COLUMNS = ["track", "judge", "asked", "samples", "model", "items", "mean", "judge_sd", "rank",
                       "rank_low_items", "rank_high_items", "rank_low", "rank_high", "note"]
DRIFT_COLUMNS = ["track", "judge", "asked_a", "asked_b", "signature_a", "signature_b", "n", "spearman_turn", "models",
                 "kendall_tau_system", "ci_low", "ci_high", "note"]


# ---------------------------------------------------------------- a judge's own variance in the ranks
def unsampled(signature: str) -> str:
    """A signature without its `sample:i` part: the judge that was sampled."""
    return "|".join(p for p in signature.split("|") if not p.startswith("sample:"))


def uncertainty(con: duckdb.DuckDBPyConnection, dataset: str, *, across: str = "samples", bootstrap: int = 1000,
                seed: int = 0) -> pd.DataFrame:
    """UNCERTAINTY_COLUMNS: a rating judge asked several times per response, its spread and the ranks it gives.
    `across`: 'samples' groups the runs of one judge that differ only in `--judge-sample` (k samples at
    temperature > 0); 'judges' groups every signature of a judge name (several judge models or prompts).
    Per model: the mean over items of the mean over the group's answers; judge_sd, the mean over the model's
    responses of the standard deviation between answers; its rank (1 = highest mean) and two 95% rank intervals
    from `bootstrap` resamples of items: over items only (each response's mean answer), and over items and the
    judge (each resampled response takes one of its answers at random), which is wider by what the judge's
    own variance adds."""
    rows = []
    rng_seed = seed
    for track, _ in tracks(con, dataset):
        values = judge_values(con, dataset, track)
        values = values[values["judge"] != PAIRWISE]
        if values.empty:
            continue
        values["group"] = values["signature"].map(unsampled) if across == "samples" else values["judge"]
        for (name, group), part in values.groupby(["judge", "group"], sort=True):
            runs = sorted(part["signature"].unique())
            if len(runs) < 2:
                continue
            wide = part.pivot_table(index=["item_id", "model"], columns="signature", values="value", aggfunc="first")
            wide = wide.dropna()   # responses every run answered
            if wide.empty:
                continue
            answers = wide.to_numpy(float)                       # responses x runs
            keys = wide.index.to_frame(index=False)
            models = sorted(keys["model"].unique())
            items = sorted(keys["item_id"].unique())
            m_idx = keys["model"].map({m: i for i, m in enumerate(models)}).to_numpy()
            i_idx = keys["item_id"].map({it: i for i, it in enumerate(items)}).to_numpy()
            means = answers.mean(axis=1)

            def board(weights: np.ndarray, per_response: np.ndarray) -> np.ndarray:
                """Model means given item weights (bootstrap counts) and one value per response."""
                w = weights[i_idx]
                total = np.bincount(m_idx, w * per_response, minlength=len(models))
                count = np.bincount(m_idx, w, minlength=len(models))
                with np.errstate(invalid="ignore", divide="ignore"):
                    return total / count

            point = board(np.ones(len(items)), means)
            # model means equal up to float noise (3 x 17/18 and 2 x 17/18 averaged) are one tie (ties.snap)
            rank = pd.Series(snap(-point)).rank(method="average").to_numpy()
            rng = np.random.default_rng(rng_seed)
            only_items, with_judge = [], []
            for _ in range(bootstrap):
                weights = rng.multinomial(len(items), np.full(len(items), 1 / len(items))).astype(float)
                only_items.append(pd.Series(snap(-board(weights, means))).rank(method="average").to_numpy())
                pick = answers[np.arange(len(answers)), rng.integers(0, answers.shape[1], len(answers))]
                with_judge.append(pd.Series(snap(-board(weights, pick))).rank(method="average").to_numpy())
            sd = pd.Series(answers.std(axis=1, ddof=1)).groupby(m_idx).mean().to_numpy()
            # a resample that drew none of a model's items ranks it nowhere: counted, and past 5% no interval
            only_items = np.asarray(only_items, float).reshape(bootstrap, len(models))
            with_judge = np.asarray(with_judge, float).reshape(bootstrap, len(models))
            for k, model in enumerate(models):
                lo_i, hi_i, said_i = interval(only_items[:, k])
                lo_j, hi_j, said_j = interval(with_judge[:, k])
                note = "; ".join(dict.fromkeys(n for n in (said_i, said_j) if n))
                rows.append({"track": track, "judge": name, "asked": asked(group) if across == "samples" else
                             f"{len(runs)} signatures", "samples": len(runs), "model": model,
                             "items": int((m_idx == k).sum()), "mean": point[k], "judge_sd": sd[k], "rank": rank[k],
                             "rank_low_items": lo_i, "rank_high_items": hi_i, "rank_low": lo_j, "rank_high": hi_j,
                             "note": note})
    return pd.DataFrame(rows, columns=UNCERTAINTY_COLUMNS)


# ---------------------------------------------------------------- drift between two signatures of a judge
def drift(con: duckdb.DuckDBPyConnection, dataset: str, *, bootstrap: int = 1000, seed: int = 0) -> pd.DataFrame:
    """DRIFT_COLUMNS: every two signatures of one judge name on a track, over the responses both scored."""
    rows = []
    for track, _ in tracks(con, dataset):
        values = judge_values(con, dataset, track)
        for name, part in values.groupby("judge", sort=True):
            wide = part.pivot_table(index=["item_id", "model"], columns="signature", values="value", aggfunc="first")
            for a, b in combinations(sorted(wide.columns), 2):
                both = wide[[a, b]].dropna()
                turn = correlate(both[a], both[b], "spearman")
                board = both.groupby(level="model").mean()
                tau = correlate(board[a], board[b], "kendall")
                lo, hi, note = _tau_interval(both, a, b, bootstrap, seed)
                rows.append({"track": track, "judge": name, "asked_a": asked(a), "asked_b": asked(b),
                             "signature_a": a, "signature_b": b, "n": len(both),
                             "spearman_turn": turn.r, "models": len(board), "kendall_tau_system": tau.r,
                             "ci_low": lo, "ci_high": hi, "note": note})
    return pd.DataFrame(rows, columns=DRIFT_COLUMNS)


def _tau_interval(both: pd.DataFrame, a: str, b: str, bootstrap: int, seed: int) -> tuple[float, float, str]:
    """95% percentile interval of the leaderboards' Kendall tau, resampling items (each with all its models), and
    the resamples where tau had no value (stats.interval: withheld past 5%)."""
    items = both.index.get_level_values("item_id").unique()
    if bootstrap <= 0 or len(items) < 2:
        return np.nan, np.nan, ""
    rng = np.random.default_rng(seed)
    by_item = {i: g for i, g in both.groupby(level="item_id")}
    taus = []
    for _ in range(bootstrap):
        sample = pd.concat([by_item[i] for i in rng.choice(items, len(items))])
        board = sample.groupby(level="model").mean()
        taus.append(correlate(board[a], board[b], "kendall").r)
    return interval(taus)
