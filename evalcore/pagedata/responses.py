"""The Drill-down page's data: one row per response with its metric values and human scores, an item's
detail, where a metric and people disagree most, the words a response shares with its references, and links
that open the drill-down on an item."""
from __future__ import annotations

import json
import math
from urllib.parse import urlencode

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.ties import snapped
from evalcore.metrics.registry import get_flavor, pick_tokenizer
from evalcore.pagedata import catalog
from evalcore.pagedata.scope import dataset_scoped, per_dataset
from evalcore.pagedata.share import to_query
from evalcore.scoring import load_track, response_scores


@dataset_scoped
def rated_response_part(con: duckdb.DuckDBPyConnection, dataset: str) -> list[tuple[str, int]]:
    """(track, ratings) of the dataset's tracks whose responses carry human ratings."""
    return [(t, int(n)) for t, n in con.execute("""
        SELECT h.track, count(*) FROM human_ratings h
        JOIN responses r ON r.dataset = h.dataset AND r.item_id = h.item_id AND r.model = h.model
        WHERE h.dataset = ? AND h.target = 'response' GROUP BY ALL
    """, [dataset]).fetchall()]


def merge_rated_response(parts: dict[str, list[tuple[str, int]]]) -> list[tuple[str, str]]:
    rows = [(d, t, n) for d, part in parts.items() for t, n in part]
    return [(d, t) for d, t, _ in sorted(rows, key=lambda r: (-r[2], r[0], r[1]))]


@per_dataset(rated_response_part, merge_rated_response)
def rated_response_tracks(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(dataset, track) pairs whose responses carry human ratings, most rated first: where a
    metric-human disagreement sort means something."""
    return merge_rated_response({d: rated_response_part(con, d) for d in catalog.datasets(con)})


def range_grid(lo: float, hi: float, steps: int = 100) -> tuple[float, float, float, int]:
    """A slider grid over [lo, hi]: (low, high, step, decimals) with a round step near (hi - lo) / steps
    (1, 2 or 5 times a power of ten) and bounds on that grid, so every position is an exact short
    decimal that survives the round trip through a URL."""
    span = max(hi - lo, 1e-12)
    power = 10 ** math.floor(math.log10(span / steps))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= span / steps)
    decimals = max(0, -math.floor(math.log10(step)))
    low = round(math.floor(lo / step + 1e-9) * step, decimals)
    high = round(math.ceil(hi / step - 1e-9) * step, decimals)
    return low, high, round(step, decimals), decimals


@dataset_scoped
def response_table(con: duckdb.DuckDBPyConnection, dataset: str, track: str, *, flavor: str = "default",
                   models: list[str] | None = None, rated_only: bool = False,
                   items: tuple[str, ...] | None = None) -> pd.DataFrame:
    """One row per response (of `models` and `items` only, when given): item_id, model, text, a column per
    computed metric and per human dimension (mean over annotators). `rated_only`: only the items with a
    response rated by a person, the drill-down's first view (on the 10M store, 1,000 of a track's 50,000
    items: the whole track's table took 15.8 s to appear)."""
    chosen = None if items is None else list(items)
    if rated_only:
        rated = [i for (i,) in con.execute("SELECT DISTINCT item_id FROM human_ratings WHERE dataset = ? AND track = ? "
                                            "AND target = 'response' ORDER BY 1", [dataset, track]).fetchall()]
        chosen = rated if chosen is None else sorted(set(chosen) & set(rated))
    track_data = load_track(con, dataset, track, models=models, items=chosen, bare=True)
    values = response_scores(con, dataset, track, flavor=flavor, data=track_data, items=chosen)
    data = track_data[["item_id", "model", "text"]].reset_index(drop=True)
    if not values.empty:
        # one value per response and metric: placed by position, not pivoted (pivot_table's group-by took
        # 3.2 of 12.5 s for a 500,000-response track)
        item_ix, model_ix = pd.Index(pd.unique(data["item_id"])), pd.Index(pd.unique(data["model"]))
        width = len(model_ix)   # a response's code: its item's number * width + its model's number
        rows = pd.Index(_positions(data["item_id"], item_ix) * width + _positions(data["model"], model_ix))
        at_item, at_model = _positions(values["item_id"], item_ix), _positions(values["model"], model_ix)
        at = np.where((at_item >= 0) & (at_model >= 0), rows.get_indexer(at_item * width + at_model), -1)
        # metric names as codes: comparing 5.5 million names per metric took 0.9 s of 8.1 at 550,000 responses
        metric, names = pd.factorize(values["metric"])
        value = values["value"].to_numpy(dtype=float)
        columns = {}
        for code in np.argsort(np.asarray(names, dtype=object)):
            name = names[code]
            mine = (metric == code) & (at >= 0)
            col = np.full(len(data), np.nan)
            col[at[mine]] = value[mine]
            columns[name] = col
        data = pd.concat([data, pd.DataFrame(columns, index=data.index)], axis=1)
    humans = con.execute("""
        SELECT item_id, model, dimension, avg(score) AS score FROM human_ratings
        WHERE dataset = ? AND track = ? AND target = 'response' GROUP BY ALL""", [dataset, track]).df()
    if not humans.empty:
        wide = humans.pivot_table(index=["item_id", "model"], columns="dimension", values="score").reset_index()
        wide.columns.name = None
        data = data.merge(wide, on=["item_id", "model"], how="left")
    return data


def _positions(column: pd.Series, uniques: pd.Index) -> np.ndarray:
    """Each value's position in `uniques` (-1 where absent), hashed by Arrow on its own strings: Index.get_indexer
    made a Python string of each first (0.85 s against 0.10 s for the 5.5 million values of a 550,000-response
    track)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    at = pc.index_in(pa.array(column), value_set=pa.array(uniques))
    return pc.fill_null(at, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def disagreement(frame: pd.DataFrame, metric: str, dimension: str) -> pd.Series:
    """|percentile rank of the metric - percentile rank of the human score| (NaN when either is missing)."""
    if metric not in frame or dimension not in frame:
        return pd.Series(np.nan, index=frame.index)
    both = snapped(frame[[metric, dimension]].dropna())   # values equal up to float noise share a rank (ties.snap)
    gap = (both[metric].rank(pct=True) - both[dimension].rank(pct=True)).abs()
    return gap.reindex(frame.index)


@dataset_scoped
def item_detail(con: duckdb.DuckDBPyConnection, dataset: str, item_id: str) -> dict | None:
    row = con.execute("SELECT track, dialogue_id, context, grounding, skill FROM items WHERE dataset = ? AND item_id = ?",
                      [dataset, item_id]).fetchall()
    if not row:
        return None
    track, dialogue, context, grounding, skill = row[0]
    refs = [t for (t,) in con.execute("SELECT text FROM item_references WHERE dataset = ? AND item_id = ? "
                                      "ORDER BY ref_index", [dataset, item_id]).fetchall()]
    return {"track": track, "dialogue_id": dialogue, "skill": skill, "context": json.loads(context),
            "grounding": json.loads(grounding) if grounding else {}, "references": refs}


def overlap_segments(text: str, references: list[str], language: str | None = "zh") -> list[tuple[str, bool]]:
    """The response cut into (segment, shared with a reference?) pieces, by the default flavor's tokens.

    Whitespace between tokens is kept in the unshared pieces so the text reads as written."""
    tok = pick_tokenizer(get_flavor("default"), language)
    vocab = {t for r in references for t in tok(r)}
    out: list[tuple[str, bool]] = []
    at = 0
    for token in tok(text):
        start = text.find(token, at)
        if start < 0:
            continue
        if start > at:
            out.append((text[at:start], False))
        out.append((token, token in vocab))
        at = start + len(token)
    if at < len(text):
        out.append((text[at:], False))
    merged: list[tuple[str, bool]] = []
    for seg, shared in out:
        if merged and merged[-1][1] == shared:
            merged[-1] = (merged[-1][0] + seg, shared)
        else:
            merged.append((seg, shared))
    return merged


def context_snippet(turns: list[str], last: int = 2, width: int = 80) -> str:
    """The last turns of a context on one line, each cut to `width` characters, '… / ' marking turns left out."""
    flat = [" ".join(str(t).split()) for t in turns[-last:]]  # line breaks and runs of spaces as one space
    cut = [t if len(t) <= width else t[: width - 1].rstrip() + "…" for t in flat]
    return ("… / " if len(turns) > last else "") + " / ".join(cut)


def drilldown_link(dataset: str, track: str, item: str, flavor: str = "default") -> str:
    """A relative link (from any page of the app) to the drill-down opened on one item: the same
    query the drill-down page reads and writes (share.to_query), URL-encoded."""

    return "drilldown?" + urlencode(to_query({"dataset": dataset, "track": track, "flavor": flavor, "item": item}))
