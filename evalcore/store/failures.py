"""What a DuckDB error means for the user (store_error): a full disk, a read-only store, an instance DuckDB
invalidated, each as one true sentence."""
from __future__ import annotations

import duckdb

from evalcore.core.errors import DiskFull, ReadOnlyStore, StoreError

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
