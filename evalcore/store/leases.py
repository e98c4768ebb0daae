"""Lease: a cursor of the process's shared database instance (shared.Shared), standing for a connection."""
from __future__ import annotations

import duckdb

from evalcore.core.errors import DiskFull
from evalcore.store.failures import INVALIDATED, store_error


class Lease:
    """A cursor of the process's shared database instance, standing for a connection: what it is asked
    it passes to the cursor, and close() gives it back (the instance closes when the last one is back).
    Closing twice is harmless."""

    def __init__(self, shared, cur: duckdb.DuckDBPyConnection):   # shared: the Shared that handed the cursor out
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
            self._shared.give_back(cur)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:  # a lease dropped without close() (a thread that ended) is given back
        try:
            self.close()
        except Exception:
            pass
