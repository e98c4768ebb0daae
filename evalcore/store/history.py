"""Submissions and the rows they set aside: nothing a user stored is destroyed by a later import or
a `delete-model` without a way back (`restore`), until an explicit `purge`.

A replace or delete copies the model's rows (responses of the track's items, its ratings and
system scores in the track, as far as its scope says) into archived_* tables tagged with the
submission doing it, then deletes them, in the same transaction as the rest of that submission.
`restore N` undoes submission N the same way: what N put in place is set aside under the restore
(so a restore can itself be restored), and N's set-aside rows come back."""
from __future__ import annotations

import getpass
import hashlib
import json
from datetime import datetime
from pathlib import Path

import duckdb
import pandas as pd

from evalcore.core import names
from evalcore.core.names import MODEL_TABLES
from evalcore.store.transactions import bump_revision, next_id, transaction


def current_user() -> str:
    """Who runs this process, recorded with a submission (a login name; 'unknown' where there is none)."""
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return "unknown"


ARCHIVE = {"responses": "archived_responses", "human_ratings": "archived_ratings", "system_scores": "archived_scores",
           "pairwise_judgments": "archived_judgments"}
REPLACE_SCOPE = {"ratings": "response", "scores": "computed"}  # what a replace takes away with the responses
DELETE_SCOPE = {"ratings": "all", "scores": "all"}
SCORES_SCOPE = {"responses": False, "ratings": "none", "scores": "computed"}  # a re-import of system scores


def sha256_of(path: str | Path) -> str | None:
    """The file's sha256; for a folder, of its files' names and contents in name order."""
    path = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path] if path.is_file() else []
    if not files:
        return None
    for f in files:
        if path.is_dir():
            digest.update(str(f.relative_to(path)).encode("utf-8") + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def set_aside(dataset: str, model: str, track: str | None, scope: dict) -> list[tuple[str, list]]:
    """Statements that copy a model's rows in a track (None: the whole dataset) to the archive tables
    and delete them; the parameter SUBMISSION stands for the id of the submission doing it."""
    items = "(? IS NULL OR item_id IN (SELECT item_id FROM items WHERE dataset = ? AND track = ?))"
    where = {
        "responses": (f"dataset = ? AND model = ? AND {items}", [dataset, model, track, dataset, track]),
        "human_ratings": ("dataset = ? AND model = ? AND (? IS NULL OR track = ?)"
                          + (" AND target = 'response'" if scope["ratings"] == "response" else ""),
                          [dataset, model, track, track]),
        "system_scores": ("dataset = ? AND model = ? AND (? IS NULL OR track = ?)"
                          + (" AND origin = 'computed'" if scope["scores"] == "computed" else ""),
                          [dataset, model, track, track]),
    }
    if scope.get("ratings") == "none":
        where.pop("human_ratings")
    if not scope.get("responses", True):
        where.pop("responses")
    if scope.get("scores") == "none":
        where.pop("system_scores")
    if scope.get("ratings") == "origin":   # one rating task's ratings and votes (evalcore.store.tasks.delete)
        where["human_ratings"] = ("dataset = ? AND model = ? AND origin = ?", [dataset, model, scope["origin"]])
        where["pairwise_judgments"] = ("dataset = ? AND model_1 = ? AND prompt = ?", [dataset, model, scope["origin"]])
    out = []
    for table, (cond, params) in where.items():
        out.append((f"INSERT INTO {ARCHIVE[table]} BY NAME SELECT *, ? AS archived_by FROM {table} WHERE {cond}",
                    [SUBMISSION, *params]))
        out.append((f"DELETE FROM {table} WHERE {cond}", params))
    return out


class _Submission:
    """Placeholder for the id of the submission being written (known only inside its transaction)."""


SUBMISSION = _Submission()


def record(con: duckdb.DuckDBPyConnection, *, kind: str, dataset: str | None, models: list[str], tracks: list[str],
           file: str | None = None, sha256: str | None = None, rows: dict | None = None, scope: dict | None = None,
           uploader: str | None = None, restores: int | None = None) -> int:
    """Insert a submission row (call inside the writing transaction); returns its id."""
    sid = next_id(con, "submissions", "submission_id")
    con.execute("INSERT INTO submissions (submission_id, kind, dataset, models, tracks, file, sha256, rows_written, "
                "scope, uploader, created_at, restores) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [sid, kind, dataset, json.dumps(sorted(models), ensure_ascii=False),
                 json.dumps(sorted(tracks), ensure_ascii=False), file, sha256,
                 json.dumps(rows or {}), json.dumps(scope) if scope else None, uploader,
                 datetime.now().replace(microsecond=0), restores])
    return int(sid)


def run_statements(con, statements: list[tuple[str, list]], sid: int) -> None:
    for sql, params in statements:
        con.execute(sql, [sid if p is SUBMISSION else p for p in params])


def _set_aside_groups(con, sid: int) -> list[tuple[str, str, str | None]]:
    """(dataset, model, track) groups submission `sid` set aside."""
    rows = con.execute("""
        SELECT DISTINCT a.dataset, a.model, i.track FROM archived_responses a JOIN items i USING (dataset, item_id)
        WHERE a.archived_by = ?
        UNION SELECT DISTINCT dataset, model, track FROM archived_ratings WHERE archived_by = ?
        UNION SELECT DISTINCT dataset, model, track FROM archived_scores WHERE archived_by = ?
        UNION SELECT DISTINCT dataset, model_1, track FROM archived_judgments WHERE archived_by = ?
        ORDER BY 1, 2, 3""", [sid, sid, sid, sid]).fetchall()
    return rows


def restore(con: duckdb.DuckDBPyConnection, sid: int, *, uploader: str | None = None) -> int:
    """Undo submission `sid` (a replace or a delete): its set-aside rows come back; what stands in
    their place now is set aside under a new 'restore' submission, whose id is returned."""
    names.submission(con, sid)   # an unknown one: UnknownName listing those that exist
    found = con.execute("SELECT kind, scope, restored_by, purged_at FROM submissions WHERE submission_id = ?",
                        [sid]).fetchall()
    kind, scope, restored_by, purged = found[0]
    if purged is not None:
        raise ValueError(f"submission {sid}'s set-aside rows were purged on {purged}: nothing to restore")
    if restored_by is not None:
        raise ValueError(f"submission {sid} was already undone by submission {restored_by}")
    groups = _set_aside_groups(con, sid)
    task_deleted = con.execute("SELECT count(*) FROM tasks WHERE deleted_by = ?", [sid]).fetchall()[0][0]
    if not groups and not task_deleted:
        raise ValueError(f"submission {sid} ({kind}) set nothing aside: nothing to restore")
    scope = json.loads(scope) if scope else DELETE_SCOPE
    with transaction(con):
        bump_revision(con)
        dataset = groups[0][0] if groups else con.execute("SELECT dataset FROM submissions WHERE submission_id = ?",
                                                          [sid]).fetchall()[0][0]
        new = record(con, kind="restore", dataset=dataset, models=sorted({g[1] for g in groups}),
                     tracks=sorted({g[2] for g in groups if g[2]}), scope=scope, uploader=uploader, restores=sid)
        for dataset, model, track in groups:
            run_statements(con, set_aside(dataset, model, track, scope), new)
        for table, archive in ARCHIVE.items():
            con.execute(f"INSERT INTO {table} BY NAME SELECT * EXCLUDE (archived_by) FROM {archive} WHERE archived_by = ?",
                        [sid])
            con.execute(f"DELETE FROM {archive} WHERE archived_by = ?", [sid])
        con.execute("INSERT OR IGNORE INTO models (model, added_at) SELECT unnest(?::VARCHAR[]), current_timestamp",
                    [sorted({g[1] for g in groups})])   # a deleted model's row comes back too
        con.execute("UPDATE submissions SET restored_by = ? WHERE submission_id = ?", [new, sid])
        # a deleted rating task comes back closed (its owner reopens it)
        con.execute("UPDATE tasks SET state = 'closed', deleted_by = NULL WHERE deleted_by = ?", [sid])
    return new


def purge(con: duckdb.DuckDBPyConnection, sid: int) -> dict[str, int]:
    """Drop for good the rows submission `sid` set aside; returns how many per table. An unknown `sid` is
    UnknownName listing those that exist (never "purged 0")."""
    names.submission(con, sid)
    counts = {t: con.execute(f"SELECT count(*) FROM {a} WHERE archived_by = ?", [sid]).fetchall()[0][0]
              for t, a in ARCHIVE.items()}
    with transaction(con):
        for archive in ARCHIVE.values():
            con.execute(f"DELETE FROM {archive} WHERE archived_by = ?", [sid])
        con.execute("UPDATE submissions SET purged_at = ? WHERE submission_id = ?",
                    [datetime.now().replace(microsecond=0), sid])
    return counts


CLI_RESTORE = "restorable: python -m evalcore restore {id}"


def listing(con: duckdb.DuckDBPyConnection, dataset: str | None = None, model: str | None = None, *,
            restore_hint: str = CLI_RESTORE) -> pd.DataFrame:
    """Submissions, newest first, with how many rows each set aside and whether that can still come back
    (`state`: `restore_hint` with the submission's {id}, worded for where it is read: the CLI's command,
    or a page's control)."""
    frame = con.execute("""
        WITH aside AS (
            SELECT archived_by, count(*) AS n FROM (
                SELECT archived_by FROM archived_responses UNION ALL SELECT archived_by FROM archived_ratings
                UNION ALL SELECT archived_by FROM archived_scores) GROUP BY 1)
        SELECT s.submission_id, s.created_at, s.kind, s.dataset, s.models, s.tracks, s.file, s.sha256,
               s.rows_written, coalesce(a.n, 0) AS set_aside, s.uploader, s.restores, s.restored_by, s.purged_at
        FROM submissions s LEFT JOIN aside a ON a.archived_by = s.submission_id
        WHERE (? IS NULL OR s.dataset = ?) ORDER BY s.submission_id DESC""", [dataset, dataset]).df()
    if model is not None:
        keep = pd.Series([model in json.loads(m or "[]") for m in frame["models"]], index=frame.index, dtype=bool)
        frame = frame[keep]  # boolean even when empty (an empty object Series would be read as column names)
    frame["models"] = frame["models"].map(lambda m: ", ".join(json.loads(m or "[]")))
    frame["tracks"] = frame["tracks"].map(lambda m: ", ".join(json.loads(m or "[]")))
    frame["state"] = [
        "purged" if pd.notna(p) else f"undone by #{int(r)}" if pd.notna(r) else
        restore_hint.format(id=int(i)) if n else ""
        for i, n, r, p in zip(frame["submission_id"], frame["set_aside"], frame["restored_by"], frame["purged_at"])]
    return frame.drop(columns=["restored_by", "purged_at"]).reset_index(drop=True)


def delete_model(con: duckdb.DuckDBPyConnection, model: str, dataset: str | None = None) -> int:
    """Set aside a model's responses, ratings and system scores (in one dataset or all) in one
    transaction, as a 'delete' submission; `restore` brings them back until `purge`.
    Returns the submission's id."""
    datasets = [d for (d,) in con.execute(
        "SELECT DISTINCT dataset FROM (" + " UNION ALL ".join(f"SELECT dataset FROM {t} WHERE model = ?" for t in MODEL_TABLES)
        + ") WHERE ? IS NULL OR dataset = ? ORDER BY 1", [model] * len(MODEL_TABLES) + [dataset, dataset]).fetchall()]
    with transaction(con):
        bump_revision(con)
        sid = record(con, kind="delete", dataset=dataset if dataset else (datasets[0] if len(datasets) == 1 else None),
                             models=[model], tracks=[], scope=DELETE_SCOPE, uploader=current_user())
        for ds in datasets:
            run_statements(con, set_aside(ds, model, None, DELETE_SCOPE), sid)
        still_used = sum(con.execute(f"SELECT count(*) FROM {t} WHERE model = ?", [model]).fetchall()[0][0]
                         for t in MODEL_TABLES)
        if not still_used:
            con.execute("DELETE FROM models WHERE model = ?", [model])
    return sid
