"""Rankings from pairwise votes: Bradley-Terry ratings on the Elo scale of Chatbot Arena, with seeded bootstrap
intervals over votes, a rank interval per model, and the win-rate matrix.

The model: P(a beats b) = 1 / (1 + BASE ** ((R_b - R_a) / SCALE)), BASE 10, SCALE 400. The ratings are the
maximum-likelihood fit over the votes, a tie counting half a win for each side (FastChat's compute_mle_elo
weighs an A win 2 and a tie 1 each way: the same likelihood, doubled). Ratings are fixed up to a constant:
1000 is their mean, or the `anchor` model's rating. The fit is Newton's method on the log-likelihood (the
Hessian's null direction, all ratings moved together, removed with its pseudo-inverse), run to a gradient
below 1e-10; it is the unregularised fit sklearn's LogisticRegression(penalty=None, fit_intercept=False)
converges to.

A finite fit exists only when every model has won (or tied) against the rest and lost (or tied) to them,
through some chain of votes: the graph "a got credit against b" must be strongly connected (Zermelo 1929;
Ford 1957). Otherwise the ratings are unavailable, with the reason; a bootstrap resample without a finite
fit is left out and counted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from evalcore.analysis.rank_ci import competition_ranks

SCALE, BASE, INIT = 400.0, 10.0, 1000.0
TOL = 1e-10
COLUMNS = ["dimension", "source", "model", "rating", "ci_low", "ci_high", "rank", "rank_ci_low", "rank_ci_high",
           "votes", "wins", "losses", "ties", "note"]


@dataclass
class Fit:
    models: list[str]
    ratings: np.ndarray | None   # Elo scale; None: no finite fit
    reason: str = ""


def _design(votes: pd.DataFrame, models: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    index = {m: i for i, m in enumerate(models)}
    return (np.array([index[m] for m in votes["model_a"]]), np.array([index[m] for m in votes["model_b"]]),
            votes["score"].to_numpy(float))


def finite(a: np.ndarray, b: np.ndarray, y: np.ndarray, p: int) -> str:
    """Why no finite fit exists ('' when one does): the credit graph must be strongly connected."""
    if p < 2:
        return "fewer than two models"
    rows = np.concatenate([a[y > 0], b[y < 1]])     # who got credit ...
    cols = np.concatenate([b[y > 0], a[y < 1]])     # ... against whom
    graph = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(p, p))
    n, labels = connected_components(graph, directed=True, connection="strong")
    if n == 1:
        return ""
    weak, _ = connected_components(graph, directed=True, connection="weak")
    if weak > 1:
        return "some models were never compared, even through others: their ratings are not on one scale"
    return "a model (or a group of models) won, or lost, every vote against the others: no finite rating"


def fit(votes: pd.DataFrame, models: list[str] | None = None, anchor: str | None = None) -> Fit:
    """Maximum-likelihood ratings from votes (columns model_a, model_b, score: 1 a won, 0 b won, 0.5 tie)."""
    models = models or sorted(set(votes["model_a"]) | set(votes["model_b"]))
    a, b, y = _design(votes, models)
    p = len(models)
    reason = finite(a, b, y, p)
    if reason:
        return Fit(models, None, reason)
    theta = np.zeros(p)                       # natural log-odds scale
    for _ in range(100):
        d = theta[a] - theta[b]
        prob = 1 / (1 + np.exp(-d))
        resid = y - prob
        grad = np.bincount(a, resid, p) - np.bincount(b, resid, p)
        if np.abs(grad).max() < TOL:
            break
        w = prob * (1 - prob)
        hess = np.zeros((p, p))
        np.add.at(hess, (a, a), w)
        np.add.at(hess, (b, b), w)
        np.add.at(hess, (a, b), -w)
        np.add.at(hess, (b, a), -w)
        theta = theta + np.linalg.pinv(hess) @ grad
        theta -= theta.mean()
    ratings = SCALE * theta / math.log(BASE) + INIT
    if anchor is not None:
        ratings += INIT - ratings[models.index(anchor)]
    return Fit(models, ratings)


def win_matrix(votes: pd.DataFrame) -> pd.DataFrame:
    """Row model's win rate against the column model (a tie counts half), over their votes; blank: never met."""
    both = pd.concat([votes[["model_a", "model_b", "score"]],
                      votes.rename(columns={"model_a": "model_b", "model_b": "model_a"}).assign(
                          score=lambda f: 1 - f["score"])[["model_a", "model_b", "score"]]])
    table = both.pivot_table(index="model_a", columns="model_b", values="score", aggfunc="mean")
    table.index.name, table.columns.name = "model", None
    return table


def ratings(votes: pd.DataFrame, *, resamples: int = 1000, seed: int = 0, anchor: str | None = None) -> pd.DataFrame:
    """Per model: rating, its 95% bootstrap interval over votes, rank (1 = best) and its 95% interval, counts."""
    models = sorted(set(votes["model_a"]) | set(votes["model_b"]))
    if anchor is not None and anchor not in models:
        raise ValueError(f"anchor {anchor!r} has no votes; models with votes: {', '.join(models)}")
    base = fit(votes, models, anchor)
    counts = _counts(votes, models)
    out = pd.DataFrame({"model": models, **counts})
    if base.ratings is None:
        return out.assign(rating=np.nan, ci_low=np.nan, ci_high=np.nan, rank=pd.NA, rank_ci_low=pd.NA,
                          rank_ci_high=pd.NA, note=base.reason)
    out["rating"] = base.ratings
    out["rank"] = competition_ranks(base.ratings, True).astype(int)
    rng = np.random.default_rng(seed)
    draws, failed = [], 0
    for _ in range(resamples):
        sample = votes.iloc[rng.integers(0, len(votes), len(votes))]
        f = fit(sample, models, anchor)
        if f.ratings is None:
            failed += 1
            continue
        draws.append(f.ratings)
    note = f"{failed} of {resamples} resamples had no finite fit and are left out" if failed else ""
    if draws:
        draws = np.array(draws)
        ranks = np.array([competition_ranks(r, True) for r in draws])
        out["ci_low"], out["ci_high"] = np.quantile(draws, 0.025, axis=0), np.quantile(draws, 0.975, axis=0)
        out["rank_ci_low"] = np.floor(np.quantile(ranks, 0.025, axis=0)).astype(int)
        out["rank_ci_high"] = np.ceil(np.quantile(ranks, 0.975, axis=0)).astype(int)
    else:
        out = out.assign(ci_low=np.nan, ci_high=np.nan, rank_ci_low=pd.NA, rank_ci_high=pd.NA)
    out["note"] = note
    return out.sort_values(["rating", "model"], ascending=[False, True]).reset_index(drop=True)


def _counts(votes: pd.DataFrame, models: list[str]) -> dict[str, list[int]]:
    wins, losses, ties = ({m: 0 for m in models} for _ in range(3))
    for a, b, s in zip(votes["model_a"], votes["model_b"], votes["score"]):
        if s == 0.5:
            ties[a] += 1
            ties[b] += 1
        else:
            winner, loser = (a, b) if s == 1 else (b, a)
            wins[winner] += 1
            losses[loser] += 1
    return {"votes": [wins[m] + losses[m] + ties[m] for m in models], "wins": [wins[m] for m in models],
            "losses": [losses[m] for m in models], "ties": [ties[m] for m in models]}


# ---------------------------------------------------------------- from the store
SOURCES_HELP = "human (people's votes), or judge:NAME (an LLM judge's pairwise verdicts, e.g. judge:gpt-4)"


def votes(con: duckdb.DuckDBPyConnection, dataset: str, *, source: str = "human", dimension: str | None = None,
          track: str | None = None) -> pd.DataFrame:
    """One row per vote: dimension, item_id, model_a, model_b, score (1 a, 0 b, 0.5 tie), voter. A judge's two
    verdicts on a pair (both orders) make one vote: the winner when they agree, a tie when they disagree or
    say tie (FastChat's pairwise rule); an 'error' verdict leaves the pair out."""
    if source == "human":
        where, params = "source = 'human'", []
    elif source.startswith("judge:"):
        where, params = "source = 'judge' AND judge = ?", [source.split(":", 1)[1]]
    else:
        raise ValueError(f"unknown source {source!r}: {SOURCES_HELP}")
    rows = con.execute(f"""
        SELECT dimension, item_id, model_1 AS model_a, model_2 AS model_b, judge AS voter, g1_winner, g2_winner
        FROM pairwise_judgments
        WHERE dataset = ? AND {where} AND (? IS NULL OR dimension = ?) AND (? IS NULL OR track = ?)
          AND g1_winner <> 'error' AND g2_winner <> 'error'
        ORDER BY dimension, item_id, model_a, model_b, voter
    """, [dataset, *params, dimension, dimension, track, track]).df()
    agree = rows["g1_winner"] == rows["g2_winner"]
    rows["score"] = np.where(agree & (rows["g1_winner"] == "model_1"), 1.0,
                             np.where(agree & (rows["g1_winner"] == "model_2"), 0.0, 0.5))
    return rows.drop(columns=["g1_winner", "g2_winner"])


def sources(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """The vote sources a dataset has: human, and judge:NAME per judge."""
    rows = con.execute("SELECT DISTINCT source, judge FROM pairwise_judgments WHERE dataset = ? ORDER BY 1, 2",
                       [dataset]).fetchall()
    out = ["human"] if any(s == "human" for s, _ in rows) else []
    return out + [f"judge:{j}" for s, j in rows if s == "judge"]


def table(con: duckdb.DuckDBPyConnection, dataset: str, *, source: str = "human", dimension: str | None = None,
          resamples: int = 1000, seed: int = 0, anchor: str | None = None) -> pd.DataFrame:
    """COLUMNS: ratings per dimension of the source's votes (every dimension when none is named)."""
    frame = votes(con, dataset, source=source, dimension=dimension)
    if frame.empty:
        raise ValueError(f"no {source} votes in {dataset}" + (f" on {dimension}" if dimension else ""))
    parts = [ratings(group, resamples=resamples, seed=seed, anchor=anchor).assign(dimension=dim, source=source)
             for dim, group in frame.groupby("dimension", sort=True)]
    return pd.concat(parts, ignore_index=True)[COLUMNS]
