"""The DuckDB store: where it lives, opening it (migrations, the write lock, one shared instance per
process), and transactions. Below it only evalcore.core; migrations/, history.py and queries.py beside it."""
from __future__ import annotations

import errno
import json
import os
import re
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb
import pandas as pd
import pyarrow as pa

from evalcore import __version__
from evalcore.core.errors import DiskFull, ReadOnlyStore, StoreBusy, StoreError
from evalcore.core.processes import alive
from evalcore.store.migrations import LATEST, all_migrations

ENV_VAR = "EVALCORE_DB"
WAIT_VAR = "EVALCORE_LOCK_WAIT"  # seconds a command waits for a store another process holds (default 60)
MEMORY_VAR = "EVALCORE_DUCKDB_MEMORY"
"""DuckDB's memory limit in this process (e.g. 1GB; `default`: DuckDB's own, 80% of the machine's memory).
DuckDB's default lets it keep every block it has read cached: scoring the 10M store's 10 million responses
peaked at 6.0 GB with it and 2.45 GB under 1GB, in the same time. So the commands that score (`score`,
`worker`) run under SCORING_MEMORY unless this says otherwise (bound_memory); everything else under DuckDB's
default, because a query that needs more than the limit fails instead of using the machine's memory."""
SCORING_MEMORY = "1GB"
_MEMORY_DEFAULT = ""   # this process's limit when MEMORY_VAR is unset (bound_memory)
_MEMORY = re.compile(r"^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$", re.IGNORECASE)
HANDOVER_WAIT = 30.0  # seconds to wait for this process's own closing connection to let the file go
MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file


def bound_memory(limit: str = SCORING_MEMORY) -> None:
    """Stores this process opens from now on hold DuckDB to `limit` unless MEMORY_VAR says otherwise: the
    scoring commands call it (a scoring process reads and writes whole tracks, and DuckDB's default let it keep
    every block it had read)."""
    global _MEMORY_DEFAULT
    _MEMORY_DEFAULT = limit


def memory_limit() -> str:
    """The memory limit stores are opened with in this process: MEMORY_VAR, else bound_memory's, else ''
    (DuckDB's default)."""
    limit = os.environ.get(MEMORY_VAR, "").strip() or _MEMORY_DEFAULT
    if limit.lower() == "default":
        return ""
    if limit and not _MEMORY.match(limit):
        raise StoreError(f"{MEMORY_VAR}={limit!r} is not a memory size such as 1GB or 512MB (or `default`)")
    return limit


def _limit_memory(con: duckdb.DuckDBPyConnection) -> None:
    limit = memory_limit()
    if limit:
        con.execute(f"SET memory_limit = '{limit}'")   # checked by memory_limit: digits and a unit


def lock_wait(default: float = 60.0) -> float:
    try:
        return float(os.environ.get(WAIT_VAR, default))
    except ValueError:
        return default


def check_store_path(db: Path) -> None:
    """Refuse, before anything else happens, a path that cannot be a store: a directory, or a file
    that is not a DuckDB database (a CSV given to --db by mistake is never touched)."""
    if db.is_dir():
        raise StoreError(f"{db} is a directory; --db expects a DuckDB store file (created when absent), "
                         f"e.g. {db / 'evalcore.duckdb'}")
    if db.is_file():
        with open(db, "rb") as fh:
            head = fh.read(12)
        if head[8:12] != MAGIC:
            kind = "an empty file" if not head else "a text file" if _texty(head) else "a file of another kind"
            raise StoreError(f"{db} is {kind}, not a DuckDB store; --db expects a DuckDB store file (created "
                             f"when absent). To load a file into a store: python -m evalcore import ... {db} "
                             "--db my.duckdb")


def _texty(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return head[:2] in (b"\xff\xfe", b"\xfe\xff")
    return True


def _locked(exc: Exception) -> bool:
    return "lock" in str(exc).lower()


NEVER_SKIP_WAL = 2 ** 64 - 1   # DuckDB's auto_checkpoint_skip_wal_threshold, in bytes: no transaction reaches it
"""A commit that makes DuckDB checkpoint (the log past checkpoint_threshold, 16 MiB, with this transaction in it)
may skip the write-ahead log when the transaction is large (auto_checkpoint_skip_wal_threshold, default 100 kB):
its rows reach the disk only through that checkpoint. When the checkpoint fails (a full disk), COMMIT fails after
the rows were committed in memory, and no file holds them: other cursors see them, a later checkpoint that finds
space writes them, and a closed instance loses them (issue 46: an import told "committed to the store's log" with no
log on disk). With the threshold out of reach every commit is written to the log and fsynced first, and a failed
checkpoint after it leaves a durable write that DuckDB reports as "COMMIT succeeded and is durable" (store_error). The
cost: a large import's rows are written to the log before the checkpoint writes them again (row groups written
straight to the file during the import, 122,880 rows and more of one table, go to the log as pointers only)."""


def _open(db: Path, read_only: bool, wait: float, on_wait, handover: float = HANDOVER_WAIT,
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
                _limit_memory(con)
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
            waiting(db)   # a server lets go at once (Shared.lease, Shared._give_back)
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


LOCK_GRACE = 0.25     # seconds a lease that would not wait for the file waits for this process's own opening of it
WAITING_FRESH = 3.0   # seconds a waiter's mark counts (it renews it every retry, 20 times a second)
FAIR_WAIT = 1.0       # seconds a new cursor waits for this process's runs to let a waiting process in (Shared.lease)


def waiting(db: Path) -> None:
    """Mark that this process waits for the store's file: `<store>.wait` holds its pid, renewed (and so its
    modification time) while it waits. A hint that other processes' servers read (someone_waits): they stop
    handing out cursors of their open instance, so it closes once their runs end and the waiter gets in.
    Nothing is locked by it."""
    try:
        Path(f"{db}.wait").write_text(str(os.getpid()))
    except OSError:   # a read-only folder: the waiter gets in when the holder's runs happen to pause
        pass


def done_waiting(db: Path) -> None:
    """This process got the file: its mark goes (another waiter's stays; it renews its own anyway)."""
    try:
        mark = Path(f"{db}.wait")
        if mark.read_text() == str(os.getpid()):
            mark.unlink()
    except OSError:
        pass


def someone_waits(db: Path) -> bool:
    """Another process waits for the file now (its mark is fresh and not this process's own)."""
    try:
        mark = Path(f"{db}.wait")
        return time.time() - mark.stat().st_mtime < WAITING_FRESH and mark.read_text() != str(os.getpid())
    except OSError:
        return False


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


def default_db_path() -> Path:
    """The store used when neither --db nor EVALCORE_DB is given."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "evalcore" / "evalcore.duckdb"


def resolve_db_path(explicit: str | os.PathLike | None = None) -> Path:
    """--db, else $EVALCORE_DB, else the default under the user's data directory."""
    if explicit:
        return Path(explicit)
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    return default_db_path()


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
            _limit_memory(con)
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
        con = _open(db, True, wait, on_wait, hint=f"{WAIT_VAR} sets how long a command waits")
        _check_read_only(con, db)
        return con
    db.parent.mkdir(parents=True, exist_ok=True)
    con = _open(db, False, wait, on_wait, hint=f"{WAIT_VAR} sets how long a command waits")
    try:
        migrate(con, str(db))
    except Exception:
        con.close()
        raise
    return con


def _check_read_only(con: duckdb.DuckDBPyConnection, db: Path) -> None:
    """A store opened read-only cannot be migrated: refuse (and close) one of another schema version."""
    version = schema_version(con)
    if version != LATEST:
        con.close()
        raise StoreError(
            f"{db} has schema version {version}, this evalcore expects {LATEST}; "
            "open it once read-write to migrate" if version < LATEST else
            f"{db} has schema version {version}, newer than this evalcore ({LATEST}); upgrade evalcore"
        )


def writable(db: str | os.PathLike) -> bool:
    """Can this process write the store's file and create its log beside it? (A read-only mount says no
    to both; root passes permission checks, so ask the file system itself.)"""
    db = Path(db)
    try:
        with open(db, "r+b"):
            pass
        probe = db.parent / f".{db.name}.probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
        return True
    except OSError as exc:   # a full disk is no read-only one: its writes are refused with their own sentence
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)


WRITE_LOCK = threading.RLock()
"""Every write of this process, one at a time: store.transaction takes it around BEGIN ... COMMIT, and a
write outside a transaction (a job's progress) takes it itself. DuckDB lets transactions of one process
run side by side and refuses the second to touch a row the first changed ('Conflict on update'; every
import bumps the one revision row): serialised, they never collide."""
RETRIES = 4  # tries of a write that still meets a write-write conflict (another process's, say)


class WriteConflict(StoreError):
    """A write met another write to the same rows RETRIES times; nothing of it was written."""


FULL = ("no space left on device", "disk quota exceeded", "file too large")   # ENOSPC, EDQUOT, EFBIG
DURABLE = "commit succeeded and is durable"
"""DuckDB's words when a COMMIT's checkpoint failed after the commit was written to the log and fsynced
(DuckTransactionManager::CommitTransaction, DuckDB 2.0): the write is in the store, the database instance is
invalidated (every later use fails until it is opened again). Every other failed COMMIT is rolled back by DuckDB,
and a failed statement by transaction(): nothing of it is stored. NEVER_SKIP_WAL keeps the third case, a
checkpoint instead of the log, from arising."""
INVALIDATED = "database has been invalidated"


def store_error(exc: BaseException) -> StoreError | None:
    """What a DuckDB error means for the user as one true sentence (never DuckDB's text, which names this
    server's files): a full disk (DiskFull, saying whether the write was stored), a store open read-only
    (ReadOnlyStore), an instance DuckDB invalidated; None for any other error (a bug or a bad query, raised as
    it is). Raised by transaction() for a write and by Lease for any use of the dashboard's shared instance."""
    if isinstance(exc, StoreError):
        return exc
    if not isinstance(exc, duckdb.Error):
        return None
    text = str(exc).lower()
    if INVALIDATED in text:   # first: DuckDB's text then quotes the failure that invalidated it, "durable" included
        return StoreError("the store has to be opened anew after an earlier write failed (a full disk, say): nothing of "
                          "this was done; try again in a moment")
    if DURABLE in text:
        return DiskFull("this write was stored: it is in the store's write-ahead log (the .wal file beside the store, "
                        "written and flushed to disk before the commit counted), which every opening of the store "
                        "reads, but the disk holding the store is now full, so the log could not be merged into the "
                        "store file; free some space before the next write", stored=True)
    if any(word in text for word in FULL):
        return DiskFull("the disk holding the store is full: nothing of this write was stored, and the store is as it "
                        "was; free some space and run it again")
    if "attached in read-only mode" in text:
        return ReadOnlyStore("the store is open read-only here (its file system, or the file's permissions, let it be "
                             "read but not written): nothing was stored")
    return None


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
            catalog = _catalog(con) if _CHANGED.__dict__.get("marks") else None
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
                    _mark_changed(changed, catalog)
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
            _mark_changed(changed, catalog)


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


class Lease:
    """A cursor of the process's shared database instance, standing for a connection: what it is asked
    it passes to the cursor, and close() gives it back (the instance closes when the last one is back).
    Closing twice is harmless."""

    def __init__(self, shared: "Shared", cur: duckdb.DuckDBPyConnection):
        self._shared, self._cur = shared, cur

    def __getattr__(self, name: str):
        cur = self.__dict__.get("_cur")
        if cur is None:
            raise duckdb.ConnectionException("Connection already closed!")
        attr = getattr(cur, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):  # the lease lives while its method runs (lease(db).execute(...) included)
            try:
                out = attr(*args, **kwargs)
            except duckdb.Error as exc:   # a full disk, a read-only store, ...: one sentence (store_error)
                known = store_error(exc)
                if known is None:
                    raise
                self.spoiled(exc)
                raise known from exc
            return self if out is cur else out   # execute() returns the cursor: chained calls keep the lease

        return call

    @property
    def read_only(self) -> bool:
        """The shared instance was opened read-only (the store's file system lets it be read, not written)."""
        return self._shared.read_only

    def spoiled(self, exc: BaseException) -> None:
        """After a failure that leaves the instance unfit (DuckDB invalidates it after a failed checkpoint), or that
        a full disk caused (its memory need not be what the files hold): the instance is opened anew once its
        cursors are back (Shared.lease)."""
        if isinstance(store_error(exc), DiskFull) or INVALIDATED in str(exc).lower():
            self._shared.stale = True

    def close(self) -> None:
        cur, self._cur = self._cur, None
        if cur is not None:
            self._shared._give_back(cur)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:  # a lease dropped without close() (a thread that ended) is given back
        try:
            self.close()
        except Exception:
            pass


class Shared:
    """One DuckDB database instance per store file in this process, a cursor per thread (DuckDB's rule
    for one process). The instance opens when the first user asks (lease) and closes when the last one
    gives its cursor back; opening and closing happen under one lock, so an open never meets the same
    file still closing in another thread (DuckDB's 'Unique file handle conflict ... already attached').
    The file is held only while someone uses it: a command of another process gets in between."""

    _all: dict[str, "Shared"] = {}
    _registry = threading.Lock()

    def __init__(self, db: Path):
        self.db, self.root, self.users, self.lock = db, None, 0, threading.RLock()  # RLock: __del__ may give back
        # Seconds the instance stays open after its last cursor is back (the dashboard sets it, see
        # LINGER): opening costs 20-30 ms (the file's catalog read again) and closing a checkpoint, which
        # an annotator's next click or a page's next run within moments would pay again. 0: close at once.
        self.linger, self.generation = 0.0, 0
        self.read_only = False   # opened read-only: the file system would not let it be written (lease)
        self.stale = False       # to be opened anew once every cursor is back (Lease.spoiled)

    @classmethod
    def of(cls, path: str | os.PathLike | None = None) -> "Shared":
        db = resolve_db_path(path)
        key = os.path.abspath(db)
        with cls._registry:
            return cls._all.setdefault(key, cls(Path(key)))

    def lease(self, wait: float = 0.0, on_wait=None) -> Lease:
        # Fairness between processes (servers of one store, a worker, a CLI command): while another process
        # waits for the file, no new cursor of the open instance is handed out, so the instance closes when
        # this process's runs in flight end and the waiter gets in; this run then waits its turn in _open.
        # Without it a busy server (a run always in flight) kept the file and the others waited out their 30 s.
        # Bounded (FAIR_WAIT): a run in flight may itself wait for this one (Streamlit's lock on a cached value
        # this run is computing), and an unbounded wait stalled both for the page's whole 30 s.
        deadline = time.monotonic() + min(wait, FAIR_WAIT)
        while self.root is not None and someone_waits(self.db) and time.monotonic() < deadline:
            time.sleep(0.02)
        # Another thread of this process may hold the lock while it waits for the file (in _open): a caller that
        # would not wait (wait=0: a page's part that can be shown as last made, the job check) is told the store is
        # busy, not made to wait behind it for up to that thread's 30 s. An open of a free file takes 20-50 ms.
        until = time.monotonic() + max(wait, LOCK_GRACE)
        while True:
            if not self.lock.acquire(timeout=max(until - time.monotonic(), 0.0)):
                raise StoreBusy(f"the store {self.db.name} cannot be opened now: another thread of this process is "
                                "waiting for it (another process holds it), so nothing was done; try again in a moment")
            if not (self.stale and self.users > 0):
                break
            # An instance to be opened anew (Lease.spoiled): no new cursor of it; its last runs end within moments.
            self.lock.release()
            if time.monotonic() >= until:
                raise StoreError("the store has to be opened anew after an earlier write failed (a full disk, say), "
                                 "and pages still use it: nothing of this was done; try again in a moment")
            time.sleep(0.02)
        try:
            if self.stale and self.root is not None:
                self._close_root()
            if self.root is None:
                self.root = self._open_root(wait, on_wait)
            cur = self.root.cursor()
            self.users += 1
            self.generation += 1
        finally:
            self.lock.release()
        return Lease(self, cur)

    def _open_root(self, wait: float, on_wait) -> duckdb.DuckDBPyConnection:
        """The instance, migrated; read-only where the store's file system will not let it be written (a server on
        a read-only mount serves its pages, and a write through it is refused with one sentence: store_error)."""
        check_store_path(self.db)
        self.db.parent.mkdir(parents=True, exist_ok=True)
        try:
            root = _open(self.db, False, wait, on_wait, handover=0.0)
        except ReadOnlyStore:
            if not self.db.is_file():
                raise
            root = _open(self.db, True, wait, on_wait, handover=0.0)
            _check_read_only(root, self.db)
            self.read_only, self.stale = True, False
            return root
        try:
            migrate(root, str(self.db))
        except Exception:
            root.close()
            raise
        self.read_only, self.stale = False, False
        return root

    def _close_root(self) -> None:
        root, self.root = self.root, None
        if root is not None:
            root.close()  # the instance is checkpointed and detached here, under the lock

    def _give_back(self, cur: duckdb.DuckDBPyConnection) -> None:
        with self.lock:
            try:
                cur.close()
            finally:
                self.users -= 1
                if self.users == 0 and self.root is not None:
                    if self.linger > 0 and not self.stale and not someone_waits(self.db):
                        timer = threading.Timer(self.linger, self._close_idle, args=(self.generation,))
                        timer.daemon = True
                        timer.start()
                    else:
                        self._close_idle(self.generation)

    def _close_idle(self, generation: int) -> None:
        """Close the instance if nobody took a cursor since `generation` (a later give-back schedules its own)."""
        with self.lock:
            if self.users == 0 and self.generation == generation and self.root is not None:
                self._close_root()

    @property
    def is_open(self) -> bool:
        return self.root is not None


def lease(path: str | os.PathLike | None = None, *, wait: float = 0.0, on_wait=None) -> Lease:
    """A cursor of this process's shared instance of the store (see Shared): for the dashboard's page runs
    and job threads. The CLI keeps its own single connection (connect)."""
    return Shared.of(path).lease(wait, on_wait)


class ServerLockHeld(StoreError):
    """Another dashboard server serves this store."""


_SERVER_LOCKS: dict[str, int] = {}


def server_lock(path: str | os.PathLike | None = None) -> Path | None:
    """Take `<store>.server.lock` (an OS lock, fcntl.flock) for this process's life: one dashboard server
    per store. A second server on the same store is refused with a message naming the processes that hold
    the lock (lock_holders); the lock goes with its holders, however they end (SIGKILL included). CLI commands
    do not take it: they share the store with a running server as before. Taking it again in the holding process
    is a no-op. The servers of `evalcore app --processes N` share their parent's lock (GROUP_VAR): N page-serving
    processes on one store, by intent, and a further server is still refused. The lock file's path; None for a
    store this process cannot write (a read-only file system): its server serves it read-only, and no server can
    write it, so there is nothing to keep apart."""
    import fcntl

    db = Path(os.path.abspath(resolve_db_path(path)))
    lock = Path(f"{db}.server.lock")
    if str(lock) in _SERVER_LOCKS:
        return lock
    group = _group_lock(lock)
    if group is not None:   # one of `evalcore app --processes N`'s servers: the group's lock, inherited
        _SERVER_LOCKS[str(lock)] = group
        return lock
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if db.is_file() and not writable(db):
            return None
        raise StoreError(f"cannot take the server lock {lock}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holders = lock_holders(lock, fd)
        os.close(fd)
        who = (f"pid {holders[0]}" if len(holders) == 1 else f"pids {', '.join(map(str, holders))}" if holders
               else "a process this user cannot see")
        raise ServerLockHeld(f"another dashboard server ({who}) already serves {db}; stop it first, or "
                             f"give this one another store (EVALCORE_DB). Two servers writing one store would "
                             f"take its lock from each other. CLI commands can still use the store.") from None
    _SERVER_LOCKS[str(lock)] = fd
    record_holders(lock, [os.getpid()])
    return lock


def record_holders(lock: Path, pids: list[int]) -> None:
    """Write the processes that hold a server lock this process took into its file, one `pid host` a line: what a
    refused server names where the system cannot say who holds it (lock_holders). A full disk leaves it empty."""
    fd = _SERVER_LOCKS[str(lock)]
    host = socket.gethostname()
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, "".join(f"{pid} {host}\n" for pid in pids).encode(), 0)
    except OSError:
        pass


def lock_holders(lock: Path, mine: int | None = None) -> list[int]:
    """The live processes that hold `lock` open (a server, or the parent and the servers of a group), apart from
    this one: on Linux as the system knows them (/proc/PID/fd), so a group whose parent was killed is named by
    its servers; elsewhere, or where /proc shows nothing, the pids recorded in the file that are still alive."""
    try:
        target = os.stat(lock)
    except OSError:
        return []
    found = set()
    if os.path.isdir("/proc/self/fd"):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                for fd in os.scandir(f"/proc/{entry.name}/fd"):
                    st = os.stat(fd.path)
                    if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
                        found.add(int(entry.name))
                        break
            except OSError:   # gone meanwhile, or another user's
                continue
    if not found:
        try:
            text = os.pread(mine, 4096, 0) if mine is not None else lock.read_bytes()[:4096]
        except OSError:
            text = b""
        host = socket.gethostname()
        for line in text.decode("utf-8", "replace").splitlines():
            pid, _, where = line.strip().partition(" ")
            if pid.isdigit() and where == host and alive(int(pid)):
                found.add(int(pid))
    return sorted(found)


def lock_descriptor(lock: Path) -> int:
    """The open file that holds a server lock this process took (server_lock), to hand down to a group."""
    return _SERVER_LOCKS[str(lock)]


GROUP_VAR = "EVALCORE_SERVER_LOCK_FD"   # set by `evalcore app --processes N` for the servers it starts


def _group_lock(lock: Path) -> int | None:
    """The descriptor of `lock` this process inherited from `evalcore app --processes N` (which holds the
    OS lock on it for the group: an flock belongs to the open file, shared by every process given it), or None."""
    try:
        fd = int(os.environ.get(GROUP_VAR, ""))
        held, here = os.fstat(fd), os.stat(lock)
    except (ValueError, OSError):
        return None
    return fd if (held.st_dev, held.st_ino) == (here.st_dev, here.st_ino) else None


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
    # streamed import of a million items held every slice it had written (0.5 GB of Arrow at the end)
    rel = con.from_arrow(frame) if isinstance(frame, pa.Table) else con.from_df(frame)
    return int(rel.query("_evalcore_frame", sql).fetchall()[0][0])


def bump_revision(con: duckdb.DuckDBPyConnection, dataset: str | None = None) -> None:
    """Mark the store as changed (call inside the writing transaction): its revision, and, once the
    transaction commits, `<store>.rev`, the mark pages' caches are keyed on (stamp). `dataset`: the one
    dataset whose rows this write changed (an import into it, its scores, an answer to its task), so only
    that dataset's pages (and the pages about every dataset) are computed anew; None: anything may have
    changed (every page is)."""
    con.execute("UPDATE revision SET n = n + 1")
    db = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]
    if not db:   # an in-memory database: no file to mark
        return
    if getattr(_CHANGED, "depth", 0):
        _CHANGED.__dict__.setdefault("marks", set()).add((db, dataset))
    else:   # outside transaction(): the UPDATE is committed already
        with WRITE_LOCK:
            _mark_changed({(db, dataset)}, _catalog(con))


def _catalog(con: duckdb.DuckDBPyConnection) -> str:
    """A digest of the store's catalog, its datasets' rows (name, language, licence, ...) and its tracks' names:
    what the views of the catalog (the dataset list, the track count, the languages) depend on. Imports into tracks
    that exist, scores and ratings leave it as it was, so those views stay cached through them (stamp(...,
    scope="catalog"))."""
    return con.execute("""
        SELECT md5(coalesce(string_agg(row, chr(30) ORDER BY row), '')) FROM (
            SELECT to_json(d)::VARCHAR AS row FROM datasets d
            UNION ALL SELECT to_json(struct_pack(dataset := dataset, track := track))::VARCHAR FROM tracks)
    """).fetchall()[0][0]


_CHANGED = threading.local()   # per thread: transaction() depth, and the (store, dataset) its transaction changed


def _changed_by_this_transaction() -> set[tuple[str, str | None]]:
    marks = _CHANGED.__dict__.get("marks", set())
    _CHANGED.marks = set()
    return marks


def _read_marks(db: str) -> dict:
    try:
        with open(f"{db}.rev") as fh:
            marks = json.load(fh)
        return marks if isinstance(marks, dict) else {}
    except (OSError, ValueError):
        return {}


def _mark_changed(changes: set[tuple[str, str | None]], catalog: str | None = None) -> None:
    """Write `<store>.rev` anew, replaced atomically (a reader sees the old marks or the new ones): a fresh
    token under "all" (every change), under "global" (a change not confined to one dataset) and under each
    changed dataset, and the catalog's digest as the commit left it (_catalog). Only a process holding the
    store writes it (the marks are written after the commit, the connection still open, under WRITE_LOCK), so
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


def is_empty(con: duckdb.DuckDBPyConnection) -> bool:
    return con.execute("SELECT count(*) FROM datasets").fetchall()[0][0] == 0


DATA_TABLES = (
    "datasets", "tracks", "dialogues", "turns", "items", "item_references", "models",
    "responses", "dimensions", "human_ratings", "metric_signatures", "metric_scores",
    "system_scores", "published_correlations", "learned_models", "external_metrics", "pairwise_judgments",
)
