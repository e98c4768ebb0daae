"""Opening the store: connect() (the file checked, opened while another process may hold it, migrated),
the schema version and migrations, and Handle, a connection a long command lets go of meanwhile."""
from __future__ import annotations

import os
import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb

from evalcore import __version__
from evalcore.core.errors import ReadOnlyStore, StoreBusy, StoreError
from evalcore.store.failures import store_error
from evalcore.store.locks import done_waiting, waiting
from evalcore.store.memory import limit_memory, memory_limit
from evalcore.store.migrations import LATEST, all_migrations
from evalcore.store.paths import check_store_path, resolve_db_path, writable
from evalcore.store.transactions import transaction

WAIT_VAR = "EVALCORE_LOCK_WAIT"  # seconds a command waits for a store another process holds (default 60)
HANDOVER_WAIT = 30.0  # seconds to wait for this process's own closing connection to let the file go


def lock_wait(default: float = 60.0) -> float:
    """How long a command waits for a store another process holds: WAIT_VAR, else `default`."""
    try:
        return float(os.environ.get(WAIT_VAR, default))
    except ValueError:
        return default


def _locked(exc: Exception) -> bool:
    return "lock" in str(exc).lower()


NEVER_SKIP_WAL = 2 ** 64 - 1   # DuckDB's auto_checkpoint_skip_wal_threshold, in bytes: no transaction reaches it
"""A commit that makes DuckDB checkpoint (the log past checkpoint_threshold, 16 MiB, with this transaction in it)
may skip the write-ahead log when the transaction is large (auto_checkpoint_skip_wal_threshold, default 100 kB):
its rows reach the disk only through that checkpoint. When the checkpoint fails (a full disk), COMMIT fails after
the rows were committed in memory, and no file holds them: other cursors see them, a later checkpoint that finds
space writes them, and a closed instance loses them (an import would be told "committed to the store's log" with no
log on disk). With the threshold out of reach every commit is written to the log and fsynced first, and a failed
checkpoint after it leaves a durable write that DuckDB reports as "COMMIT succeeded and is durable" (store_error). The
cost: a large import's rows are written to the log before the checkpoint writes them again (row groups written
straight to the file during the import, 122,880 rows and more of one table, go to the log as pointers only)."""


def open_duckdb(db: Path, read_only: bool, wait: float, on_wait, handover: float = HANDOVER_WAIT,
                hint: str = "") -> duckdb.DuckDBPyConnection:
    """duckdb.connect, retried while another process holds the file (DuckDB allows one writing
    process): the dashboard holds it only during a page run, so a command gets in within moments.
    `handover`: how long to wait for this process's own closing connection (the shared instance
    passes 0: it opens and closes under one lock, so that case cannot arise there). `hint`: what the
    message of a store held past `wait` adds (how to wait longer)."""
    deadline = time.monotonic() + wait
    told = False
    settling = time.monotonic() + handover
    waited = False
    while True:
        try:
            con = duckdb.connect(str(db), read_only=read_only)
            con.execute("SET enable_progress_bar = false")   # DuckDB's bar would go into a command's output
            try:
                limit_memory(con)
                if not read_only:
                    con.execute(f"SET auto_checkpoint_skip_wal_threshold = {NEVER_SKIP_WAL}")
            except (StoreError, duckdb.Error):
                con.close()
                raise
            if waited:
                done_waiting(db)
            return con
        except duckdb.ResourceInUseException as exc:
            # This process's last connection to the file is closing in another thread (the database is
            # being checkpointed and detached): the file is free again within moments.
            if "unique file handle conflict" not in str(exc).lower() or time.monotonic() >= settling:
                raise StoreError(f"cannot open {db}: {exc}") from exc
            time.sleep(0.02)
            continue
        except duckdb.IOException as exc:
            if not _locked(exc) or time.monotonic() >= deadline:
                raise _open_error(db, exc, wait, hint) from exc
            waiting(db)   # a server lets go at once (Shared.lease, Shared.give_back)
            waited = True
            if on_wait is not None and not told:
                on_wait(f"waiting for {db}: another process is using it (the dashboard releases it between "
                        f"page loads); waiting up to {wait:g} s")
                told = True
            time.sleep(0.05)


_HOLDER = re.compile(r"\(PID (\d+)\)")
READ_ONLY_FS = ("read-only file system", "permission denied")   # the file system's words (EROFS, EACCES)


def _open_error(db: Path, exc: duckdb.Error, wait: float, hint: str) -> StoreError:
    """Why the store could not be opened, as one sentence (never DuckDB's text, which names this server's files)."""
    text = str(exc).lower()
    if _locked(exc):
        holder = _HOLDER.search(str(exc))
        who = f"another process (pid {holder.group(1)})" if holder else "another process"
        return StoreBusy(f"{who} held the store {db.name} longer than this waits ({wait:g} s), so nothing was done; "
                         "try again when it has finished (an import, or a scoring job, holds the store until it ends)"
                         + (f"; {hint}" if hint else ""))
    if any(word in text for word in READ_ONLY_FS):
        return ReadOnlyStore(f"{db} cannot be written here (a read-only file system, or a file this user may not "
                             "write): it can be read, but nothing can be stored in it")
    full = store_error(exc)
    return full if full is not None else StoreError(f"cannot open {db}: {exc}")


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
    ).fetchall()[0][0]
    if not exists:
        return 0
    row = con.execute("SELECT max(version) FROM schema_version").fetchall()[0]
    return int(row[0] or 0)


def migrate(con: duckdb.DuckDBPyConnection, path: str = "the store") -> int:
    """Bring the store up to LATEST; refuse one written by a newer evalcore."""
    current = schema_version(con)
    if current > LATEST:
        raise StoreError(
            f"{path} has schema version {current}, written by a newer evalcore; this evalcore "
            f"({__version__}) knows versions up to {LATEST}. Upgrade evalcore "
            f"(pip install -r requirements.txt in a newer checkout) or use another --db."
        )
    if current == 0:
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_version "
            "(version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP, evalcore VARCHAR)"
        )
    pending = [m for m in all_migrations() if m.version > current]
    if pending and memory_limit():
        # An upgrade moves whole tables (migration 14 reads a track's old statistics whole): DuckDB's default
        # for it, this process's limit again after.
        con.execute("RESET memory_limit")
    try:
        run_migrations(con, pending)
    finally:
        if pending:
            limit_memory(con)
    return LATEST


def run_migrations(con: duckdb.DuckDBPyConnection, pending: list) -> None:
    """Apply `pending` migrations in order, each in its own transaction (migrate() decides which)."""
    for m in pending:
        with transaction(con):
            con.execute(m.sql)
            if m.run is not None:
                m.run(con)
            con.execute(
                "INSERT INTO schema_version VALUES (?, ?, current_timestamp, ?)",
                [m.version, m.name, __version__],
            )


def connect(path: str | os.PathLike | None = None, *, read_only: bool = False, wait: float = 0.0,
            on_wait=None, reads_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) and migrate the store at `path` (see resolve_db_path). When another
    process holds the file, retry for up to `wait` seconds, calling on_wait(message) once. With
    `reads_only` (a command that only reads), a store the file system will not let be written (a
    read-only mount, a file without write permission) is opened read-only instead."""
    db = resolve_db_path(path)
    check_store_path(db)
    if reads_only and not read_only and db.exists() and not writable(db):
        read_only = True
    if read_only:
        if not db.exists():
            raise StoreError(f"no store at {db}; run `python -m evalcore init --db {db}` first")
        con = open_duckdb(db, True, wait, on_wait, hint=f"{WAIT_VAR} sets how long a command waits")
        check_read_only(con, db)
        return con
    db.parent.mkdir(parents=True, exist_ok=True)
    con = open_duckdb(db, False, wait, on_wait, hint=f"{WAIT_VAR} sets how long a command waits")
    try:
        migrate(con, str(db))
    except Exception:
        con.close()
        raise
    return con


def check_read_only(con: duckdb.DuckDBPyConnection, db: Path) -> None:
    """A store opened read-only cannot be migrated: refuse (and close) one of another schema version."""
    version = schema_version(con)
    if version != LATEST:
        con.close()
        raise StoreError(
            f"{db} has schema version {version}, this evalcore expects {LATEST}; "
            "open it once read-write to migrate" if version < LATEST else
            f"{db} has schema version {version}, newer than this evalcore ({LATEST}); upgrade evalcore"
        )


class Handle:
    """A store connection that a long command lets go of while it computes without the store (scoring),
    so that other processes (the dashboard's page runs) can open the file meanwhile, and takes back,
    waiting as connect does, to write. `con` is always the connection to use now."""

    def __init__(self, path: str | os.PathLike, con: duckdb.DuckDBPyConnection, wait: float = 60.0, on_wait=None):
        self.path, self.con, self.wait, self.on_wait = Path(path), con, wait, on_wait
        self.away = False   # let go: `con` is closed, a write takes the store briefly()

    @contextmanager
    def let_go(self) -> Iterator[None]:
        self.con.close()
        self.away = True
        try:
            yield
        finally:
            self.con = connect(self.path, wait=self.wait, on_wait=self.on_wait)
            self.away = False

    @contextmanager
    def now(self, wait: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one short write whether let go or not (a job's progress). `wait`: how long to
        wait for the store while let go (default the handle's; 0: one try, StoreError if it is busy)."""
        if not self.away:
            yield self.con
            return
        with self.briefly(wait) as con:
            yield con

    @contextmanager
    def briefly(self, wait: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """While let go: the store taken for one short write (a batch of values), then let go again."""
        con = connect(self.path, wait=self.wait if wait is None else wait, on_wait=self.on_wait)
        try:
            yield con
        finally:
            con.close()


DATA_TABLES = (
    "datasets", "tracks", "dialogues", "turns", "items", "item_references", "models",
    "responses", "dimensions", "human_ratings", "metric_signatures", "metric_scores",
    "system_scores", "published_correlations", "learned_models", "external_metrics", "pairwise_judgments",
)
