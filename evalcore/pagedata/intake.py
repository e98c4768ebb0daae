"""The Upload page's data: the responses file to fill in, what a track already holds per model, the scoring
jobs and the dataset's submissions, worded for the page."""
from __future__ import annotations

import duckdb
import pandas as pd

from evalcore.core.i18n import N_, _
from evalcore.core.text import BLANK_PATTERN   # a blank response: regexp_full_match(text, BLANK_PATTERN)
from evalcore.ingest.template import render, template
from evalcore.pagedata.scope import dataset_scoped
from evalcore.store.history import listing


# the headers the page shows (grid translates them): what a track holds, the jobs, the submissions
HEADERS = (N_("model"), N_("responses"), N_("blank"), N_("coverage"), N_("human_ratings"), N_("job_id"), N_("state"),
           N_("progress"), N_("detail"), N_("submission_id"), N_("created_at"), N_("kind"), N_("models"), N_("tracks"),
           N_("file"), N_("sha256"), N_("rows_written"), N_("set_aside"), N_("uploader"), N_("restores"),
           N_("attempts"), N_("finished_at"), N_("steps"), N_("pid"), N_("host"))
# a submission's kind and state, as the page shows them
KINDS = (N_("import"), N_("delete"), N_("restore"), N_("generate"))
RESTORABLE = N_("restorable: Undo submission {id} below")
PURGED, UNDONE = N_("purged"), N_("undone by #{id}")


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


JOB_WAITING = {"queued": N_("waiting to start"), "running": N_("starting")}   # a job's detail before its worker writes one


def jobs_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """The scoring jobs (services.jobs.listing) as the Upload page shows them: a detail for every row, never
    "None" or "nan" (a queued job has none yet: "waiting to start"), progress 0 until there is one."""
    out = frame.copy()
    empty = out["detail"].isna() | (out["detail"].astype(str) == "")
    out["detail"] = out["detail"].where(~empty, out["state"].map(lambda s: _(JOB_WAITING[s]) if s in JOB_WAITING else None)).fillna("").astype(str)
    out["progress"] = out["progress"].fillna(0.0).astype(float)
    return out


@dataset_scoped
def submissions(con: duckdb.DuckDBPyConnection, dataset: str) -> pd.DataFrame:
    """The dataset's submissions, newest first (evalcore.store.history.listing), worded for the Upload page
    (its "Undo submission" control, not a command)."""
    out = listing(con, dataset, restore_hint=RESTORABLE).drop(columns=["dataset"])
    out["kind"] = out["kind"].map(lambda k: _(k) if isinstance(k, str) and k else k)
    out["state"] = [_(RESTORABLE).format(id=int(i)) if s == RESTORABLE.format(id=int(i))
                    else _(PURGED) if s == PURGED
                    else _(UNDONE).format(id=s[len("undone by #"):]) if s.startswith("undone by #")
                    else s for i, s in zip(out["submission_id"], out["state"])]
    return out


def restorable(submission: int) -> str:
    """The state a submission whose set-aside rows Undo submission can bring back shows (in this run's language)."""
    return _(RESTORABLE).format(id=submission)
