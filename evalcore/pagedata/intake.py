"""The Upload page's data: the responses file to fill in, what a track already holds per model, the scoring
jobs and the dataset's submissions, worded for the page."""
from __future__ import annotations

import duckdb
import pandas as pd

from evalcore.core.text import BLANK_PATTERN   # a blank response: regexp_full_match(text, BLANK_PATTERN)
from evalcore.ingest.template import render, template
from evalcore.pagedata.scope import dataset_scoped
from evalcore.store.history import listing


@dataset_scoped
def template_csv(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None) -> bytes:
    """The responses file to fill in for a track (or every track), as CSV bytes."""
    return render(template(con, dataset, track), "csv")


@dataset_scoped
def track_models(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> pd.DataFrame:
    """What a track already holds, per model: responses, how many of them are empty or whitespace, share of the
    track's items answered with a response that is not blank, ratings."""
    return con.execute("""
        WITH n AS (SELECT count(*) AS items FROM items WHERE dataset = ? AND track = ?)
        SELECT r.model, count(*) AS responses, count(*) FILTER (regexp_full_match(r.text, ?)) AS blank,
               round((responses - blank) / any_value(n.items), 4) AS coverage,
               (SELECT count(*) FROM human_ratings h WHERE h.dataset = ? AND h.track = ? AND h.model = r.model)
                   AS human_ratings
        FROM responses r JOIN items i USING (dataset, item_id), n
        WHERE r.dataset = ? AND i.track = ? GROUP BY r.model ORDER BY r.model""",
                       [dataset, track, BLANK_PATTERN, dataset, track, dataset, track]).df()


JOB_WAITING = {"queued": "waiting to start", "running": "starting"}   # a job's detail before its worker writes one


def jobs_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """The scoring jobs (services.jobs.listing) as the Upload page shows them: a detail for every row, never
    "None" or "nan" (a queued job has none yet: "waiting to start"), progress 0 until there is one."""
    out = frame.copy()
    empty = out["detail"].isna() | (out["detail"].astype(str) == "")
    out["detail"] = out["detail"].where(~empty, out["state"].map(JOB_WAITING)).fillna("").astype(str)
    out["progress"] = out["progress"].fillna(0.0).astype(float)
    return out


@dataset_scoped
def submissions(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    """The dataset's submissions, newest first (evalcore.store.history.listing), worded for the Upload page
    (its "Undo submission" control, not a command)."""
    return listing(con, dataset, restore_hint="restorable: Undo submission {id} below").drop(columns=["dataset"])
