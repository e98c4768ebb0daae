"""Response ranking (seed 002): how well a ranker puts the good candidates of an item first.

An item's candidates are the responses of every model to it; a candidate is positive when its
human score (annotators combined by the aggregation rule) is at least the threshold. Items whose
candidates are all positive or all negative say nothing and are dropped. Per threshold:
- P@1: share of items whose top-ranked candidate is positive;
- MAP: mean over items of average precision (mean of precision@k at each positive's rank k);
- MRR: mean over items of 1 / rank of the first positive.
Rankers: any metric with per-response values (higher first), or `tfidf` / `bm25` similarity of
the context (all turns joined) to the response, with document frequencies from the track's
candidates. Ties in a ranker's score are broken by model name, so results are reproducible.
"""
from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.humans import per_target_cte
from evalcore.analysis.retrieval import RANKERS, Retriever
from evalcore.analysis.ties import snap
from evalcore.metrics.registry import get_flavor, pick_tokenizer
from evalcore.scoring import load_track, response_scores

COLUMNS = ["track", "dimension", "ranker", "threshold", "p_at_1", "map", "mrr", "n_items", "n_dropped"]


def rank_metrics(groups: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    """groups: per item (ranker scores, positive flags), candidates in tie-break order."""
    p1, ap, rr = [], [], []
    for score, pos in groups:
        order = np.argsort(-snap(score), kind="stable")   # scores equal up to float noise keep the tie-break order
        rel = pos[order].astype(float)
        hits = np.cumsum(rel)
        ranks = np.arange(1, len(rel) + 1)
        p1.append(rel[0])
        ap.append(float((hits / ranks * rel).sum() / rel.sum()))
        rr.append(1.0 / ranks[rel > 0][0])
    return {"p_at_1": float(np.mean(p1)), "map": float(np.mean(ap)), "mrr": float(np.mean(rr))}


def _humans(con, dataset: str, track: str, dimension: str, aggregate: str) -> pd.DataFrame:
    return con.execute(f"""
        WITH base AS (
            SELECT target, item_id, dialogue_id, model, dimension, score FROM human_ratings
            WHERE dataset = ? AND track = ? AND dimension = ? AND target = 'response'),
        {per_target_cte(aggregate, "base")}
        SELECT item_id, model, score FROM per_target
    """, [dataset, track, dimension]).df()


def _context_scores(con, dataset: str, track: str, data: pd.DataFrame, rankers: list[str],
                    tokenizer) -> dict[str, np.ndarray]:
    """Per context ranker: similarity of each row's item context (turns joined) to its response,
    document frequencies from the rows' responses. One candidate pool for all rankers."""
    if not rankers:
        return {}
    contexts = dict(con.execute("SELECT item_id, context FROM items WHERE dataset = ? AND track = ?",
                                [dataset, track]).fetchall())
    items, query_rows = np.unique(data["item_id"].to_numpy(), return_inverse=True)
    queries = [" ".join(json.loads(contexts[item])) for item in items]
    retriever = Retriever(data["text"].tolist(), tokenizer)
    rows = np.arange(len(data))
    return {r: retriever.pair_scores(queries, query_rows, rows, r) for r in rankers}


def ranking(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None, *, dimension: str = "Overall",
            rankers: list[str] | None = None, thresholds: list[float] = (3, 4, 5), aggregate: str = "mean",
            flavor: str = "default", models=None) -> pd.DataFrame:
    """`models` (correlate.Models): which models' responses are ranked (--models, --exclude-models)."""
    tracks = [t for (t,) in con.execute("SELECT track FROM tracks WHERE dataset = ? AND (? IS NULL OR track = ?) "
                                        "ORDER BY 1", [dataset, track, track]).fetchall()]
    language = con.execute("SELECT language FROM datasets WHERE dataset = ?", [dataset]).fetchall()
    tokenizer = pick_tokenizer(get_flavor("default"), language[0][0] if language else None)
    rows = []
    for tr in tracks:
        humans = _humans(con, dataset, tr, dimension, aggregate)
        if humans.empty:
            continue
        data = load_track(con, dataset, tr)
        values = response_scores(con, dataset, tr, flavor=flavor, data=data)
        chosen = rankers or [*RANKERS, *sorted(values["metric"].unique())]
        base = data[["item_id", "model", "text"]].merge(humans, on=["item_id", "model"])
        if models:
            base = base[models.mask(base["model"])]
        base = base.sort_values(["item_id", "model"], ignore_index=True)
        context = _context_scores(con, dataset, tr, base, [r for r in chosen if r in RANKERS], tokenizer)
        for ranker in chosen:
            if ranker in RANKERS:
                frame = base.assign(rank_score=context[ranker])
            else:
                mine = values[values["metric"] == ranker][["item_id", "model", "value"]]
                if mine.empty:
                    raise ValueError(f"{dataset}:{tr}: no per-response values of {ranker!r}; "
                                     f"score it first or use {', '.join(RANKERS)}")
                frame = base.merge(mine.rename(columns={"value": "rank_score"}), on=["item_id", "model"])
            for th in thresholds:
                groups, dropped = [], 0
                for _, g in frame.groupby("item_id", sort=True):
                    pos = (g["score"].to_numpy() >= th)
                    if len(g) < 2 or pos.all() or not pos.any():
                        dropped += 1
                        continue
                    groups.append((g["rank_score"].to_numpy(float), pos))
                stats = rank_metrics(groups) if groups else {"p_at_1": np.nan, "map": np.nan, "mrr": np.nan}
                rows.append({"track": tr, "dimension": dimension, "ranker": ranker, "threshold": th, **stats,
                             "n_items": len(groups), "n_dropped": dropped})
    return pd.DataFrame(rows, columns=COLUMNS)
