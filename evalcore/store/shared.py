"""The dashboard's store: one DuckDB instance per store file in this process (Shared), a cursor of it per user
(lease), opened when the first asks and closed when the last gives it back."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import duckdb

from evalcore.core.errors import ReadOnlyStore, StoreBusy, StoreError
from evalcore.store.leases import Lease
from evalcore.store.locks import someone_waits
from evalcore.store.opening import check_read_only, migrate, open_duckdb
from evalcore.store.paths import check_store_path, resolve_db_path

LOCK_GRACE = 0.25     # seconds a lease that would not wait for the file waits for this process's own opening of it
FAIR_WAIT = 1.0       # seconds a new cursor waits for this process's runs to let a waiting process in (Shared.lease)


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
        self.generation = 0      # leases handed out: a test or a job check can tell a new one was taken
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
        # this process's runs in flight end and the waiter gets in; this run then waits its turn in open_duckdb.
        # Without it a busy server (a run always in flight) would keep the file for as long as it is busy.
        # Bounded (FAIR_WAIT): a run in flight may itself wait for this one (Streamlit's lock on a cached value
        # this run is computing), and an unbounded wait would stall both for the page's whole wait.
        deadline = time.monotonic() + min(wait, FAIR_WAIT)
        while self.root is not None and someone_waits(self.db) and time.monotonic() < deadline:
            time.sleep(0.02)
        # Another thread of this process may hold the lock while it waits for the file (in open_duckdb): a caller that
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
            root = open_duckdb(self.db, False, wait, on_wait, handover=0.0)
        except ReadOnlyStore:
            if not self.db.is_file():
                raise
            root = open_duckdb(self.db, True, wait, on_wait, handover=0.0)
            check_read_only(root, self.db)
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

    def give_back(self, cur: duckdb.DuckDBPyConnection) -> None:
        """A lease's cursor back (Lease.close): the last one closes the instance, so the file is free."""
        with self.lock:
            try:
                cur.close()
            finally:
                self.users -= 1
                if self.users == 0:
                    self._close_root()

    @property
    def is_open(self) -> bool:
        return self.root is not None


def lease(path: str | os.PathLike | None = None, *, wait: float = 0.0, on_wait=None) -> Lease:
    """A cursor of this process's shared instance of the store (see Shared): for the dashboard's page runs
    and job threads. The CLI keeps its own single connection (connect)."""
    return Shared.of(path).lease(wait, on_wait)
