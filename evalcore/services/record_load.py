"""`record import`: an evaluation record into a store, in one transaction, refusing conflicts by name.

Written: the dataset's rows (datasets, tracks, dimensions, dialogues, turns, items, references, responses, human
ratings, pairwise votes, system scores, published correlations), the models, metric signatures and external
metrics it names (kept when the store has the same ones, refused when it has others under the same name), and
the per-response metric values into the value cache; the rating tasks with their units and answers, and the
generation signatures. Tasks, answers and generations are numbered per store, so the record's numbers are shifted
past the store's (and the ratings and votes that name their task, origin or prompt 'task:<id>', with them). An
imported task is closed: its people are the record's, and a new answer would mix two labs' annotators; an
imported generation is not running here. A task's access code is not in the record: a new one is drawn.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import duckdb
import pandas as pd

from evalcore.core.errors import ImportRefused, Problem
from evalcore.ingest.batch import ImportReport
from evalcore.services.record_check import check_tables, checked, open_record
from evalcore.store import bump_revision, history, insert_frame, last_id, transaction
from evalcore.store.history import current_user

# the store's tables a record fills, in the order they are written (what the rows refer to first)
WRITTEN = ("datasets", "tracks", "models", "dimensions", "external_metrics", "metric_signatures", "dialogues",
           "turns", "items", "item_references", "responses", "human_ratings", "metric_scores", "system_scores",
           "published_correlations", "pairwise_judgments", "tasks", "task_units", "task_answers", "generations")
SHARED = {"models": "model", "external_metrics": "metric", "metric_signatures": "signature"}   # shared by datasets
NUMBERED = {"tasks": "task_id", "task_answers": "answer_id", "generations": "generation_id"}   # per store


def _nulls(frame: pd.DataFrame) -> pd.DataFrame:
    """NaN in a text column is NULL in the store."""
    return frame.astype(object).where(frame.notna(), None)


def conflicts(con: duckdb.DuckDBPyConnection, file: str, manifest: dict, data: dict[str, pd.DataFrame]) -> list[Problem]:
    """What the store already holds that the record would contradict: the dataset itself, or a shared name
    (model, metric, signature) with other contents."""
    problems = []
    dataset = manifest["dataset"]
    if con.execute("SELECT count(*) FROM datasets WHERE dataset = ?", [dataset]).fetchall()[0][0]:
        problems.append(Problem(file, "manifest.json", "dataset", "a dataset this store does not hold",
                                f"{dataset!r}, already in the store (import into another store, or delete it first)"))
    for table, key in SHARED.items():
        frame = data.get(table)
        if frame is None or frame.empty:
            continue
        compared = [c for c in frame.columns if c not in ("added_at", "added_by", "description")]
        stored = con.execute(f"SELECT {', '.join(compared)} FROM {table} WHERE list_contains(?, {key})",
                             [sorted(frame[key].astype(str))]).df()
        mine = frame[compared].set_index(key)
        for row in stored.itertuples(index=False):
            theirs = dict(zip(compared, row))
            ours = mine.loc[theirs[key]]
            ours = ours.iloc[0] if isinstance(ours, pd.DataFrame) else ours
            for col in compared:
                if col == key:
                    continue
                a, b = ours[col], theirs[col]
                if not (pd.isna(a) and pd.isna(b)) and str(a) != str(b):
                    problems.append(Problem(file, f"tables/{table}.parquet", col,
                                            f"the store's {key} {theirs[key]!r} as it is ({str(b)[:80]!r})",
                                            f"other contents ({str(a)[:80]!r})"))
    return problems


def load(con: duckdb.DuckDBPyConnection, path: str | Path, *, values: bool = True, checksums: bool = True,
         contents: bool = True) -> ImportReport:
    """Import the record at `path`; `values` False leaves out its metric values and computed system scores (what
    `record verify` recomputes from the texts). Everything is checked before the first write (record_check: the
    archive's bounds, the manifest, every checksum and the content digest unless `checksums` is False, as verify
    reports them itself; each table's columns and rows unless `contents` is False, as verify checked them
    already), then tables go from their Parquet files into the store inside DuckDB, never whole through Python."""
    file = str(path)
    with tempfile.TemporaryDirectory(prefix="evalcore-record-") as tmp:
        folder = Path(tmp) / "tables"
        manifest = (checked if checksums else open_record)(path, Path(tmp))
        if contents:
            check_tables(con, file, manifest, Path(tmp))
        small = {t: pd.read_parquet(folder / f"{t}.parquet") for t in SHARED if (folder / f"{t}.parquet").exists()}
        problems = conflicts(con, file, manifest, small)
        if problems:
            raise ImportRefused(problems)
        counts = {}
        with transaction(con):
            shift = {table: last_id(con, table, key)
                     for table, key in NUMBERED.items()}
            bump_revision(con, manifest["dataset"])
            models = [m for (m,) in con.execute("SELECT DISTINCT model FROM read_parquet(?) ORDER BY 1",
                                                [str(folder / "responses.parquet")]).fetchall()]
            sid = history.record(con, kind="record", dataset=manifest["dataset"], models=models,
                                 tracks=manifest["tracks"], file=file, sha256=history.sha256_of(path), scope=None,
                                 uploader=current_user())
            given = {**shift, "submission": sid}
            for table in WRITTEN:
                source = folder / ("metric_values.parquet" if table == "metric_scores" else f"{table}.parquet")
                if not source.exists() or (table == "metric_scores" and not values):
                    continue
                if table in small:
                    counts[table] = insert_frame(con, table, _nulls(small[table]), ignore=True)
                    continue
                params = [given[k] for k in RENUMBERED.get(table, ("*", ()))[1]] + [str(source)]
                counts[table] = con.execute(_insert_sql(table, values), params).fetchall()[0][0]
            con.execute("UPDATE submissions SET rows_written = ? WHERE submission_id = ?",
                        [json.dumps({t: n for t, n in counts.items() if n}), sid])
    report = ImportReport(file, counts)
    if counts.get("tasks"):
        report.notes.append(f"{counts['tasks']:,} rating task(s) imported closed, numbered from "
                            f"{shift['tasks'] + 1} (their people are the record's)")
    report.notes.append(f"record {manifest['content_sha256'][:16]}... of evalcore {manifest['evalcore']}, "
                        f"made {manifest['created_at']}")
    report.tracks = list(manifest["tracks"])
    return report


def _insert_sql(table: str, values: bool) -> str:
    """How one table goes from its Parquet file into the store (by column name)."""
    if table == "metric_scores":   # the value cache: one row per signature and text, kept when already cached
        return ("INSERT INTO metric_scores BY NAME SELECT * FROM (SELECT DISTINCT ON (signature, text_key) signature, "
                "text_key, value, stats, reason FROM read_parquet(?)) f WHERE NOT EXISTS (SELECT 1 FROM metric_scores "
                "s WHERE s.signature = f.signature AND s.text_key = f.text_key)")
    if table == "system_scores" and not values:
        return "INSERT INTO system_scores BY NAME SELECT * FROM read_parquet(?) WHERE origin <> 'computed'"
    return f"INSERT INTO {table} BY NAME SELECT {RENUMBERED.get(table, ('*', ()))[0]} FROM read_parquet(?)"


# what a table's rows take from this store, and the parameters that say it in order: the record's task, answer
# and generation numbers shifted past the store's (the tables' maxima at import), the import's submission, a fresh
# random access code per task (as store.tasks draws one)
_TASK = "'task:' || (CAST(substr({c}, 6) AS BIGINT) + ?)"
RENUMBERED = {
    "responses": ("*, ?::INTEGER AS submission_id", ("submission",)),
    "human_ratings": ("* REPLACE (CASE WHEN origin LIKE 'task:%' THEN " + _TASK.format(c="origin")
                      + " ELSE origin END AS origin)", ("tasks",)),
    "pairwise_judgments": ("* REPLACE (CASE WHEN prompt LIKE 'task:%' THEN " + _TASK.format(c="prompt")
                           + " ELSE prompt END AS prompt)", ("tasks",)),
    "tasks": ("* REPLACE (task_id + ? AS task_id, CASE state WHEN 'deleted' THEN 'deleted' ELSE 'closed' END AS "
              "state), substr(replace(gen_random_uuid()::VARCHAR, '-', ''), 1, 6) AS access_code", ("tasks",)),
    "task_units": ("* REPLACE (task_id + ? AS task_id)", ("tasks",)),
    "task_answers": ("* REPLACE (answer_id + ? AS answer_id, task_id + ? AS task_id)", ("task_answers", "tasks")),
    "generations": ("* REPLACE (generation_id + ? AS generation_id, CASE state WHEN 'running' THEN 'stopped' ELSE "
                    "state END AS state), ?::INTEGER AS submission_id", ("generations", "submission")),
}
