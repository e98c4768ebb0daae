"""The DuckDB store: where it lives, opening it (migrations, the write lock, one shared instance per
process), and transactions. Below it only evalcore.core; migrations/, history.py and queries.py beside it."""
from __future__ import annotations

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
from evalcore.core.errors import StoreError
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


def _open(db: Path, read_only: bool, wait: float, on_wait, handover: float = HANDOVER_WAIT) -> duckdb.DuckDBPyConnection:
    """duckdb.connect, retried while another process holds the file (DuckDB allows one writing
    process): the dashboard holds it only during a page run, so a command gets in within moments.
    `handover`: how long to wait for this process's own closing connection (the shared instance
    passes 0: it opens and closes under one lock, so that case cannot arise there)."""
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
            except StoreError:
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
                hint = (f" Waited {wait:g} s: another process kept it (an import, or a scoring job the dashboard "
                        f"runs, holds the store until it ends); set {WAIT_VAR} to wait longer." if _locked(exc) else "")
                raise StoreError(f"cannot open {db}: {exc}.{hint}") from exc
            waiting(db)   # a server lets go at once (Shared.lease, Shared._give_back)
            waited = True
            if on_wait is not None and not told:
                on_wait(f"waiting for {db}: another process is using it (the dashboard releases it between "
                        f"page loads); waiting up to {wait:g} s")
                told = True
            time.sleep(0.05)


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
    if reads_only and not read_only and db.exists() and not _writable(db):
        read_only = True
    if read_only:
        if not db.exists():
            raise StoreError(f"no store at {db}; run `python -m evalcore init --db {db}` first")
        con = _open(db, True, wait, on_wait)
        version = schema_version(con)
        if version != LATEST:
            con.close()
            raise StoreError(
                f"{db} has schema version {version}, this evalcore expects {LATEST}; "
                "open it once read-write to migrate" if version < LATEST else
                f"{db} has schema version {version}, newer than this evalcore ({LATEST}); upgrade evalcore"
            )
        return con
    db.parent.mkdir(parents=True, exist_ok=True)
    con = _open(db, False, wait, on_wait)
    try:
        migrate(con, str(db))
    except Exception:
        con.close()
        raise
    return con


def _writable(db: Path) -> bool:
    """Can this process write the store's file and create its log beside it? (A read-only mount says no
    to both; root passes permission checks, so ask the file system itself.)"""
    try:
        with open(db, "r+b"):
            pass
        probe = db.parent / f".{db.name}.probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
        return True
    except OSError:
        return False


WRITE_LOCK = threading.RLock()
"""Every write of this process, one at a time: store.transaction takes it around BEGIN ... COMMIT, and a
write outside a transaction (a job's progress) takes it itself. DuckDB lets transactions of one process
run side by side and refuses the second to touch a row the first changed ('Conflict on update'; every
import bumps the one revision row): serialised, they never collide."""
RETRIES = 4  # tries of a write that still meets a write-write conflict (another process's, say)


class WriteConflict(StoreError):
    """A write met another write to the same rows RETRIES times; nothing of it was written."""


class DiskFull(StoreError):
    """The disk holding the store filled up during a write (one sentence, never a traceback)."""


def _disk_full(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.Error) and "no space left on device" in str(exc).lower()


def _full(exc: duckdb.Error) -> DiskFull:
    """What a full disk did to this write. A failed COMMIT or statement leaves the store as it was; a
    failed checkpoint comes after the commit reached the store's log, which keeps it."""
    where = str(exc).split(":", 1)[-1].strip().splitlines()[0]
    if "checkpoint" in str(exc).lower():
        return DiskFull(f"the disk holding the store filled up after this write was committed to the store's log, "
                        f"which keeps it; free some space before the store is opened again ({where})")
    return DiskFull(f"the disk holding the store is full: nothing of this write was stored, and the store is as it "
                    f"was; free some space and run it again ({where})")


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """All or nothing: commit on success, roll back on any exception. Holds WRITE_LOCK throughout."""
    with WRITE_LOCK:
        con.execute("BEGIN TRANSACTION")
        _CHANGED.depth = getattr(_CHANGED, "depth", 0) + 1
        try:
            yield con
            # as this transaction leaves it; a failure here rolls it back like any other
            catalog = _catalog(con) if _CHANGED.__dict__.get("marks") else None
        except BaseException as exc:
            _changed_by_this_transaction()   # rolled back: nothing changed
            try:
                con.execute("ROLLBACK")
            except duckdb.Error:
                pass  # DuckDB rolled it back itself (a conflict aborts the transaction)
            if _disk_full(exc):
                raise _full(exc) from exc
            raise
        finally:
            _CHANGED.depth -= 1
        changed = _changed_by_this_transaction()
        try:
            con.execute("COMMIT")
            if changed:   # after the commit: a page that reads the new mark finds the new rows
                _mark_changed(changed, catalog)
        except duckdb.Error as exc:
            if not _disk_full(exc):
                raise
            try:
                con.execute("ROLLBACK")
            except duckdb.Error:
                pass
            raise _full(exc) from exc


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
            out = attr(*args, **kwargs)
            return self if out is cur else out   # execute() returns the cursor: chained calls keep the lease

        return call

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
        if not self.lock.acquire(timeout=max(wait, LOCK_GRACE)):
            raise StoreError(f"cannot open {self.db} now: another thread of this process is waiting for it "
                             "(another process holds it)")
        try:
            if self.root is None:
                check_store_path(self.db)
                self.db.parent.mkdir(parents=True, exist_ok=True)
                root = _open(self.db, False, wait, on_wait, handover=0.0)
                try:
                    migrate(root, str(self.db))
                except Exception:
                    root.close()
                    raise
                self.root = root
            cur = self.root.cursor()
            self.users += 1
            self.generation += 1
        finally:
            self.lock.release()
        return Lease(self, cur)

    def _give_back(self, cur: duckdb.DuckDBPyConnection) -> None:
        with self.lock:
            try:
                cur.close()
            finally:
                self.users -= 1
                if self.users == 0 and self.root is not None:
                    if self.linger > 0 and not someone_waits(self.db):
                        timer = threading.Timer(self.linger, self._close_idle, args=(self.generation,))
                        timer.daemon = True
                        timer.start()
                    else:
                        self._close_idle(self.generation)

    def _close_idle(self, generation: int) -> None:
        """Close the instance if nobody took a cursor since `generation` (a later give-back schedules its own)."""
        with self.lock:
            if self.users == 0 and self.generation == generation and self.root is not None:
                root, self.root = self.root, None
                root.close()  # the instance is checkpointed and detached here, under the lock

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


def server_lock(path: str | os.PathLike | None = None) -> Path:
    """Take `<store>.server.lock` (an OS lock, fcntl.flock) for this process's life: one dashboard server
    per store. A second server on the same store is refused with a message naming the first one's pid;
    the lock goes with its holder's process, however it ends (SIGKILL included). CLI commands do not take
    it: they share the store with a running server as before. Taking it again in the holding process is
    a no-op. The servers of `evalcore app --processes N` share their parent's lock (GROUP_VAR): N page-serving
    processes on one store, by intent, and a further server is still refused. The lock file's path."""
    import fcntl

    db = Path(os.path.abspath(resolve_db_path(path)))
    lock = Path(f"{db}.server.lock")
    if str(lock) in _SERVER_LOCKS:
        return lock
    group = _group_lock(lock)
    if group is not None:   # one of `evalcore app --processes N`'s servers: the group's lock, inherited
        _SERVER_LOCKS[str(lock)] = group
        return lock
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
        os.close(fd)
        raise ServerLockHeld(f"another dashboard server (pid {holder}) already serves {db}; stop it first, or "
                             f"give this one another store (EVALCORE_DB). Two servers writing one store would "
                             f"take its lock from each other. CLI commands can still use the store.") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
    _SERVER_LOCKS[str(lock)] = fd
    return lock


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
        except OSError:   # a read-only folder: pages fall back to the files' own stamp
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
