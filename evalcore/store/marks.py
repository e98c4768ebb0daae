"""The change marks pages' caches are keyed on: `<store>.rev` (written after each commit that changed data),
the catalog's digest, the revision row, and stamp(), which reads them without opening the store."""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import duckdb


def catalog_digest(con: duckdb.DuckDBPyConnection) -> str:
    """A digest of the store's catalog, its datasets' rows (name, language, licence, ...) and its tracks' names:
    what the views of the catalog (the dataset list, the track count, the languages) depend on. Imports into tracks
    that exist, scores and ratings leave it as it was, so those views stay cached through them (stamp(...,
    scope="catalog"))."""
    return con.execute("""
        SELECT md5(coalesce(string_agg(row, chr(30) ORDER BY row), '')) FROM (
            SELECT to_json(d)::VARCHAR AS row FROM datasets d
            UNION ALL SELECT to_json(struct_pack(dataset := dataset, track := track))::VARCHAR FROM tracks)
    """).fetchall()[0][0]



def _read_marks(db: str) -> dict:
    try:
        with open(f"{db}.rev") as fh:
            marks = json.load(fh)
        return marks if isinstance(marks, dict) else {}
    except (OSError, ValueError):
        return {}


def mark_changed(changes: set[tuple[str, str | None]], catalog: str | None = None) -> None:
    """Write `<store>.rev` anew, replaced atomically (a reader sees the old marks or the new ones): a fresh
    token under "all" (every change), under "global" (a change not confined to one dataset) and under each
    changed dataset, and the catalog's digest as the commit left it (catalog_digest). Only a process holding the
    store writes it (the marks are written after the commit, the connection still open, under transactions.WRITE_LOCK), so
    two writers never interleave."""
    token = f"{time.time_ns()}-{os.getpid()}-{threading.get_ident()}"
    for db in {d for d, _ in changes}:
        marks = _read_marks(db)
        marks["all"] = token
        if catalog is not None:
            marks["catalog"] = catalog
        per = marks.setdefault("datasets", {})
        for d, dataset in changes:
            if d != db:
                continue
            if dataset is None:
                marks["global"] = token
            else:
                per[dataset] = token
        tmp = f"{db}.rev.{os.getpid()}.{threading.get_ident()}"
        try:
            with open(tmp, "w") as fh:
                json.dump(marks, fh, ensure_ascii=False)
            os.replace(tmp, f"{db}.rev")
        except OSError:
            # A full disk (the commit is in the log all the same): without a new mark, pages would keep what they
            # cached before it. With none, they key on the files' own stamp (file_stamp), which the commit moved.
            for name in (tmp, f"{db}.rev"):
                try:
                    os.unlink(name)
                except OSError:   # a read-only folder: nothing was committed there anyway
                    pass


def revision(con: duckdb.DuckDBPyConnection) -> int:
    """The store's revision: bumped by every write that changes its data (bump_revision)."""
    return con.execute("SELECT n FROM revision").fetchall()[0][0]


SCOPES = ("store", "dataset", "global", "catalog")


def stamp(path: str | Path, dataset: str | None = None, *, scope: str | None = None) -> tuple:
    """What changes whenever the store's data changes, read without opening it: the store file's identity
    (another file put in its place is another store) and a token of `<store>.rev`, written after every
    commit that bumped the revision (bump_revision: every import, score, undo, rating). A job's progress
    and its claim do not bump it, so they do not empty every page's cache. With `dataset`: the tokens of
    changes to that dataset and of changes not confined to one dataset, so a write to another dataset leaves
    it alone. `scope` (SCOPES; default: "dataset" with a dataset, else "store"): "global", only the changes not
    confined to one dataset (an undo, an external metric's registration); "catalog", only what the store's list
    of datasets and tracks is. A store without the mark yet (written by an older version, or never changed
    since): (mtime_ns, size) of the file and of its write-ahead log, which every commit and checkpoint changes."""
    scope = scope or ("store" if dataset is None else "dataset")
    if scope not in SCOPES or (scope == "dataset") != (dataset is not None):
        raise ValueError(f"stamp: scope {scope!r} with dataset {dataset!r}")
    marks = _read_marks(str(path))
    if "all" in marks:
        try:
            ident = os.stat(path)
        except FileNotFoundError:
            return (None,)
        if scope == "catalog" and "catalog" in marks:
            return ("rev", ident.st_dev, ident.st_ino, "catalog", marks["catalog"])
        if scope == "global":
            return ("rev", ident.st_dev, ident.st_ino, "global", marks.get("global"))
        if scope == "dataset":
            return ("rev", ident.st_dev, ident.st_ino, marks.get("global"), marks.get("datasets", {}).get(dataset))
        return ("rev", ident.st_dev, ident.st_ino, marks["all"])
    return file_stamp(path)


def file_stamp(path: str | Path) -> tuple:
    """(mtime_ns, size) of the store's file and of its write-ahead log (None for one that is absent): every commit
    changes one of them (a checkpoint the file, any other the log); opening and reading the store changes neither."""
    out = []
    for name in (str(path), f"{path}.wal"):
        try:
            st = os.stat(name)
            out.append((st.st_mtime_ns, st.st_size))
        except OSError:
            out.append(None)
    return tuple(out)
