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
Ford 1957). When it is not, the largest strongly connected group of models is fitted and the others are
placed around it: a group that won every vote against the groups below it (unbeaten) ranks above every rated
model, one that lost every vote against those above it (winless) below; their rating is NaN and their note
says why. Models never compared, even through others, have no common scale: then nothing is rated. A
bootstrap resample refits the same group; one without a finite fit has no value, and past 5% of resamples
without a value the intervals are withheld.
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
from evalcore.analysis.stats import interval

SCALE, BASE, INIT = 400.0, 10.0, 1000.0
TOL = 1e-10
NEVER_COMPARED = "some models were never compared, even through others: their ratings are not on one scale"
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


def _credit(a: np.ndarray, b: np.ndarray, y: np.ndarray, p: int) -> csr_matrix:
    """The graph "row model got credit (a win or a tie) against column model"."""
    rows = np.concatenate([a[y > 0], b[y < 1]])     # who got credit ...
    cols = np.concatenate([b[y > 0], a[y < 1]])     # ... against whom
    return csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(p, p))


def finite(a: np.ndarray, b: np.ndarray, y: np.ndarray, p: int) -> str:
    """Why no finite fit exists ('' when one does): the credit graph must be strongly connected."""
    if p < 2:
        return "fewer than two models"
    graph = _credit(a, b, y, p)
    n, labels = connected_components(graph, directed=True, connection="strong")
    if n == 1:
        return ""
    weak, _ = connected_components(graph, directed=True, connection="weak")
    if weak > 1:
        return NEVER_COMPARED
    return "a model (or a group of models) won, or lost, every vote against the others: no finite rating"


@dataclass
class Split:
    """Where each model (an index into the sorted models) stands. `fitted`: the largest strongly connected group
    of at least two models (a tie broken by more votes inside, then by the first name), empty when there is none.
    `side` per model: fitted, unbeaten (its group reaches the fitted one through credit: above it), winless
    (reached from it: below), unranked (neither), or ordered (no group to fit: ranked by who beat whom).
    `above`: how many models rank above each one. `reach[i, j]`: i's group got credit against j's, directly or
    through others, and not back. `reason`: why no model can be placed ('' when they can)."""
    fitted: list[int]
    side: list[str]
    above: np.ndarray
    labels: np.ndarray
    reach: np.ndarray
    offset: int = 0
    reason: str = ""


def split(a: np.ndarray, b: np.ndarray, y: np.ndarray, p: int) -> Split:
    """The models a finite fit exists for, and how every other model ranks against them: the condensation of the
    credit graph into its strongly connected groups is a partial order; a group above the fitted one won every
    vote against the groups below it (unbeaten), a group below lost every vote against those above (winless)."""
    nothing = Split([], ["unranked"] * p, np.zeros(p, int), np.zeros(p, int), np.zeros((p, p), bool))
    if p < 2:
        return Split(**{**nothing.__dict__, "reason": "fewer than two models"})
    graph = _credit(a, b, y, p)
    if connected_components(graph, directed=True, connection="weak")[0] > 1:
        return Split(**{**nothing.__dict__, "reason": NEVER_COMPARED})
    n, labels = connected_components(graph, directed=True, connection="strong")
    member = np.eye(n, dtype=int)[labels]                          # model x group
    reach = (member.T @ (graph.toarray() > 0).astype(int) @ member) > 0
    np.fill_diagonal(reach, False)
    for k in range(n):                                             # transitive closure (Floyd-Warshall)
        reach |= reach[:, [k]] & reach[[k], :]
    size = member.sum(axis=0)
    same = labels[a] == labels[b]
    inner = np.bincount(labels[a][same], minlength=n)
    best = max(range(n), key=lambda g: (size[g], inner[g], -int(np.flatnonzero(labels == g)[0])))
    model_reach = reach[labels][:, labels]
    above = model_reach.sum(axis=0)
    if size[best] < 2:
        return Split([], ["ordered"] * p, above, labels, model_reach)
    side = ["fitted" if g == best else "unbeaten" if reach[g, best] else "winless" if reach[best, g]
            else "unranked" for g in labels]
    fitted = [i for i in range(p) if labels[i] == best]
    return Split(fitted, side, above, labels, model_reach, offset=int(above[fitted[0]]))


def _placed_note(i: int, found: Split, a: np.ndarray, b: np.ndarray, y: np.ndarray, models: list[str]) -> str:
    """Why model i has no rating, and where it is ranked."""
    side, m = found.side[i], models[i]
    if side == "ordered":
        return ("no model has a finite rating: no two models both won and lost against each other, directly or "
                "through others; ranked by who beat whom")
    if side == "unranked":
        return (f"{m}: no finite rating, and no chain of votes places it above or below the rated models: "
                "not ranked")
    mine = (a == i) | (b == i)
    other = np.where(a == i, b, a)[mine]
    below, above = int(found.reach[i, other].sum()), int(found.reach[other, i].sum())
    group = [models[j] for j in np.flatnonzero(found.labels == found.labels[i]) if j != i]
    if side == "unbeaten":
        said = f"{m} is unbeaten: won all {below} of its votes against the models ranked below it"
        said += f", lost all {above} against the models ranked above it" if above else ""
    else:
        said = f"{m} is winless: lost all {above} of its votes against the models ranked above it"
        said += f", won all {below} against the models ranked below it" if below else ""
    if group:
        said += f"; it shares its rank with {', '.join(group)} (each won and lost among them)"
    return said + f"; no finite rating, ranked {'above' if side == 'unbeaten' else 'below'} every rated model"


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
    """Per model: rating, its 95% bootstrap interval over votes, rank (1 = best) and its 95% interval, counts.
    Models outside the largest fittable group (unbeaten, winless, or unrelated to it) keep NaN ratings and are
    ranked above or below the rated ones, or not at all, with a note saying which and why."""
    models = sorted(set(votes["model_a"]) | set(votes["model_b"]))
    if anchor is not None and anchor not in models:
        raise ValueError(f"anchor {anchor!r} has no votes; models with votes: {', '.join(models)}")
    counts = _counts(votes, models)
    out = pd.DataFrame({"model": models, **counts})
    a, b, y = _design(votes, models)
    found = split(a, b, y, len(models))
    if found.reason:
        return out.assign(rating=np.nan, ci_low=np.nan, ci_high=np.nan, rank=pd.NA, rank_ci_low=pd.NA,
                          rank_ci_high=pd.NA, note=found.reason)
    out = out.assign(rating=np.nan, ci_low=np.nan, ci_high=np.nan, rank=pd.array([pd.NA] * len(models), "Int64"),
                     rank_ci_low=pd.array([pd.NA] * len(models), "Int64"),
                     rank_ci_high=pd.array([pd.NA] * len(models), "Int64"), note="")
    for i in range(len(models)):
        if found.side[i] != "fitted":
            out.loc[i, "note"] = _placed_note(i, found, a, b, y, models)
            if found.side[i] != "unranked":
                out.loc[i, "rank"] = found.above[i] + 1
    fitted = [models[i] for i in found.fitted]
    if fitted:
        _rate(out, votes, fitted, found.offset, resamples=resamples, seed=seed, anchor=anchor)
    order = out["rank"].astype("Float64").fillna(np.inf).astype(float)
    return out.assign(_order=order).sort_values(["_order", "model"]).drop(columns="_order").reset_index(drop=True)


def _rate(out: pd.DataFrame, votes: pd.DataFrame, fitted: list[str], offset: int, *, resamples: int, seed: int,
          anchor: str | None) -> None:
    """Fill the fitted models' rows of `out`: ratings, ranks after the `offset` models above them, and bootstrap
    intervals over all votes, each resample fitted over the same models (a resample without a finite fit has
    no value)."""
    if anchor is not None and anchor not in fitted:
        anchor_note = f"the anchor {anchor} has no finite rating: 1000 is the mean of the rated models"
        anchor = None
    else:
        anchor_note = ""
    inside = set(fitted)
    within = lambda v: v[v["model_a"].isin(inside) & v["model_b"].isin(inside)]  # noqa: E731
    rows = out.index[out["model"].isin(inside)].to_numpy()   # out is in sorted model order, as `fitted` is
    base = fit(within(votes), fitted, anchor)
    out.loc[rows, "rating"] = base.ratings
    out.loc[rows, "rank"] = offset + competition_ranks(base.ratings, True).astype(int)
    rng = np.random.default_rng(seed)
    draws = np.full((resamples, len(fitted)), np.nan)      # a row of NaN: a resample without a finite fit
    for r in range(resamples):
        sample = votes.iloc[rng.integers(0, len(votes), len(votes))]
        f = fit(within(sample), fitted, anchor)
        if f.ratings is not None:
            draws[r] = f.ratings
    found = [interval(draws[:, k]) for k in range(len(fitted))]
    note = found[0][2] if found else ""
    defined = draws[~np.isnan(draws[:, 0])]
    if len(defined) and not math.isnan(found[0][0]):
        ranks = offset + np.array([competition_ranks(r, True) for r in defined])
        out.loc[rows, "ci_low"], out.loc[rows, "ci_high"] = [lo for lo, _, _ in found], [hi for _, hi, _ in found]
        out.loc[rows, "rank_ci_low"] = np.floor(np.quantile(ranks, 0.025, axis=0)).astype(int)
        out.loc[rows, "rank_ci_high"] = np.ceil(np.quantile(ranks, 0.975, axis=0)).astype(int)
    out.loc[rows, "note"] = "; ".join(n for n in (note, anchor_note) if n)


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
