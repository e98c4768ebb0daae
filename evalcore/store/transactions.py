"""Writing: transaction() (all or nothing, one write of this process at a time, the change marked for pages once
committed), retrying() after write-write conflicts, bump_revision, and bulk inserts (insert_frame, registered)."""
from __future__ import annotations

import re
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import duckdb
import pandas as pd
import pyarrow as pa

from evalcore.core.errors import DiskFull, StoreError
from evalcore.store.failures import store_error
from evalcore.store.leases import Lease
from evalcore.store.marks import catalog_digest, mark_changed

WRITE_LOCK = threading.RLock()
"""Every write of this process, one at a time: store.transaction takes it around BEGIN ... COMMIT, and a
write outside a transaction (a job's progress) takes it itself. DuckDB lets transactions of one process
run side by side and refuses the second to touch a row the first changed ('Conflict on update'; every
import bumps the one revision row): serialised, they never collide."""
RETRIES = 4  # tries of a write that still meets a write-write conflict (another process's, say)
_IDENT = re.compile(r"[a-z_]+\Z")   # the store's own table and column names, never a user's
_CHANGED = threading.local()   # per thread: transaction() depth, and the (store, dataset) its transaction changed


class WriteConflict(StoreError):
    """A write met another write to the same rows RETRIES times; nothing of it was written."""


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """All or nothing: commit on success, roll back on any exception. Holds WRITE_LOCK throughout. A failure the
    store can explain (store_error: a full disk, a read-only store) is raised as its StoreError, which says whether
    the write was stored: DiskFull(stored=True) only when DuckDB says the commit is durable, and then the change is
    marked for pages as any commit is."""
    with WRITE_LOCK:
        try:
            con.execute("BEGIN TRANSACTION")
        except duckdb.Error as exc:
            known = store_error(exc)
            if known is None:
                raise
            raise known from exc
        _CHANGED.depth = getattr(_CHANGED, "depth", 0) + 1
        try:
            yield con
            # as this transaction leaves it; a failure here rolls it back like any other
            catalog = catalog_digest(con) if _CHANGED.__dict__.get("marks") and _CHANGED.__dict__.get("catalog") \
                else None
        except BaseException as exc:
            _changed_by_this_transaction()   # rolled back: nothing changed
            try:
                con.execute("ROLLBACK")
            except (duckdb.Error, StoreError):
                pass  # DuckDB rolled it back itself (a conflict aborts the transaction)
            known = store_error(exc)
            if known is None or known is exc:
                raise
            _spoiled(con, exc)
            raise known from exc
        finally:
            _CHANGED.depth -= 1
        changed = _changed_by_this_transaction()
        try:
            con.execute("COMMIT")
        except BaseException as exc:
            known = store_error(exc)
            if known is None:
                raise
            if isinstance(known, DiskFull) and known.stored:
                if changed:   # in the store: pages must see it
                    mark_changed(changed, catalog)
            else:
                try:
                    con.execute("ROLLBACK")   # DuckDB rolled a failed commit back already; this makes sure
                except (duckdb.Error, StoreError):
                    pass
            if known is exc:
                raise
            _spoiled(con, exc)
            raise known from exc
        if changed:   # after the commit: a page that reads the new mark finds the new rows
            mark_changed(changed, catalog)


def _spoiled(con, exc: BaseException) -> None:
    """A failure met outside the Lease's own calls (a relation's insert, insert_frame) still spoils its instance."""
    if isinstance(con, Lease):
        con.spoiled(exc)


def _conflict(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.TransactionException) and "conflict" in str(exc).lower()


def retrying(fn, *args, tries: int = RETRIES, backoff: float = 0.1, **kwargs):
    """fn(*args, **kwargs), a whole write (read, check, one transaction), run again after a short,
    growing pause when it meets a write-write conflict; after `tries` a WriteConflict that says
    nothing was written and to try again (never the raw TransactionException)."""
    for attempt in range(tries):
        try:
            return fn(*args, **kwargs)
        except duckdb.TransactionException as exc:
            if not _conflict(exc):
                raise
            if attempt == tries - 1:
                raise WriteConflict("another write to the store collided with this one "
                                    f"{tries} times; nothing of it was written. Try again in a moment.") from exc
            time.sleep(backoff * 2 ** attempt)


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, name: str, frame) -> Iterator[None]:
    """A DataFrame (or Arrow table) readable by SQL as `name` for the block's duration."""
    con.register(name, frame)
    try:
        yield
    finally:
        con.unregister(name)


WRITER_KEYS = {"metric_scores": ("signature", "text_key")}
"""Tables whose key no index keeps (migration 15): DuckDB holds a table's whole index in memory once a write
touches it, 6 GB more for the value cache's 88.7 million keys at ten million responses. Their one writer
keeps the key unique: insert_frame(ignore=True) inserts only rows whose key is not stored yet."""


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame, ignore: bool = False) -> int:
    """Bulk insert a DataFrame by column name; the rows inserted. `table` is always a literal from our
    code (an Arrow table too). `ignore`: rows whose key is stored already are left out (the stored row
    stands), and of rows sharing a key only one is inserted."""
    if len(frame) == 0:
        return 0
    keys = WRITER_KEYS.get(table)
    if ignore and keys:
        on = " AND ".join(f"s.{k} = f.{k}" for k in keys)
        sql = (f"INSERT INTO {table} BY NAME SELECT * FROM (SELECT DISTINCT ON ({', '.join(keys)}) * "
               f"FROM _evalcore_frame) f WHERE NOT EXISTS (SELECT 1 FROM {table} s WHERE {on})")
    else:
        sql = f"INSERT {'OR IGNORE ' if ignore else ''}INTO {table} BY NAME SELECT * FROM _evalcore_frame"
    # a relation, not registered(): DuckDB keeps a registered table alive until the transaction ends, so a
    # streamed import would hold every slice it wrote until its end
    rel = con.from_arrow(frame) if isinstance(frame, pa.Table) else con.from_df(frame)
    return int(rel.query("_evalcore_frame", sql).fetchall()[0][0])


def last_id(con: duckdb.DuckDBPyConnection, table: str, column: str) -> int:
    """The largest `column` of `table`, 0 for an empty table. Ids are max + 1 inside the writing transaction rather
    than a DuckDB sequence: a sequence is not rolled back with a refused import (its ids would leave gaps), and every
    write holds WRITE_LOCK, so two writers of this process never draw the same one."""
    if not (_IDENT.match(table) and _IDENT.match(column)):
        raise ValueError(f"not a table and column name: {table!r}, {column!r}")
    return int(con.execute(f"SELECT coalesce(max({column}), 0) FROM {table}").fetchall()[0][0])


def next_id(con: duckdb.DuckDBPyConnection, table: str, column: str) -> int:
    """The id a new row of `table` takes (last_id + 1); call it inside the transaction that inserts the row."""
    return last_id(con, table, column) + 1


def database_path(con: duckdb.DuckDBPyConnection) -> str | None:
    """The file `con` has open (None or '' for an in-memory database). Asked of DuckDB once per shared instance (a
    page's write asks it at every answer)."""
    shared = con._shared if isinstance(con, Lease) else None
    known = getattr(shared, "duckdb_path", None)
    if known is None:
        known = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
                            ).fetchall()[0][0]
        if shared is not None:
            shared.duckdb_path = known
    return known


def bump_revision(con: duckdb.DuckDBPyConnection, dataset: str | None = None, *, catalog: bool = True) -> None:
    """Mark the store as changed (call inside the writing transaction): its revision, and, once the
    transaction commits, `<store>.rev`, the mark pages' caches are keyed on (stamp). `dataset`: the one
    dataset whose rows this write changed (an import into it, its scores, an answer to its task), so only
    that dataset's pages (and the pages about every dataset) are computed anew; None: anything may have
    changed (every page is). `catalog` False: the write cannot change the store's catalog (an answer to a task), so
    its digest (a query over the datasets and tracks) is not computed again at the commit."""
    con.execute("UPDATE revision SET n = n + 1")
    db = database_path(con)
    if not db:   # an in-memory database: no file to mark
        return
    if getattr(_CHANGED, "depth", 0):
        _CHANGED.__dict__.setdefault("marks", set()).add((db, dataset))
        _CHANGED.catalog = _CHANGED.__dict__.get("catalog", False) or catalog
    else:   # outside transaction(): the UPDATE is committed already
        with WRITE_LOCK:
            mark_changed({(db, dataset)}, catalog_digest(con) if catalog else None)


def _changed_by_this_transaction() -> set[tuple[str, str | None]]:
    marks = _CHANGED.__dict__.get("marks", set())
    _CHANGED.marks, _CHANGED.catalog = set(), False
    return marks
