"""The generated models of a dataset as a leaderboard shows them beside the board: endpoint, signature, progress,
and how many stored replies carry a reason (empty, cut by the length limit, refused, cut by the client)."""
from __future__ import annotations

import duckdb
import pandas as pd

FLAGS = ("empty", "length", "refused", "cut")
COLUMNS = ["model", "endpoint", "state", "stored", "total", *FLAGS, "signature"]


def generated_models(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None) -> pd.DataFrame:
    """One row per model an endpoint generated in `dataset` (in `track`'s items only, when given): replies now
    stored, items it was asked (in `track`: the track's items; blank for a sample, whose share of the track is not
    kept), each flag's count over the stored replies, its signature."""
    frame = con.execute("""
        SELECT g.model, g.endpoint, g.state, g.signature, json_extract(g.details, '$.sample') <> 'null' AS sampled,
               count(r.item_id) AS stored,
               any_value(g.total) AS total,
               count(r.item_id) FILTER (WHERE x.flag = 'empty') AS empty,
               count(r.item_id) FILTER (WHERE x.flag = 'length') AS length,
               count(r.item_id) FILTER (WHERE x.flag = 'refused') AS refused,
               count(r.item_id) FILTER (WHERE x.flag = 'cut') AS cut
        FROM generations g
        LEFT JOIN responses r ON r.dataset = g.dataset AND r.model = g.model AND r.submission_id = g.submission_id
             AND (? IS NULL OR r.item_id IN (SELECT item_id FROM items WHERE dataset = g.dataset AND track = ?))
        LEFT JOIN generated x ON x.dataset = r.dataset AND x.item_id = r.item_id AND x.model = r.model
        WHERE g.dataset = ?
        GROUP BY g.model, g.endpoint, g.state, g.signature, sampled
        ORDER BY g.model""", [track, track, dataset]).df()
    if track is not None:   # the track's part of each generation: its items (a sample's share of them is unknown)
        frame = frame[frame["stored"] > 0].copy()
        items = con.execute("SELECT count(*) FROM items WHERE dataset = ? AND track = ?", [dataset, track]).fetchall()[0][0]
        frame["total"] = [pd.NA if sampled else items for sampled in frame["sampled"]]
    return frame[COLUMNS].reset_index(drop=True) if len(frame) else pd.DataFrame(columns=COLUMNS)
