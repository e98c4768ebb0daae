"""The DuckDB store, by concern: memory.py (DuckDB's memory limit), paths.py (where the store lives), opening.py
(connect, migrations, Handle), locks.py (the wait mark and the server lock), shared.py (the dashboard's one instance
per store, leases.py its cursors), transactions.py (writes), failures.py (DuckDB's errors as sentences), marks.py
(the change marks pages' caches are keyed on). Below it only evalcore.core; migrations/, history.py, queries.py,
annotators.py and tasks.py beside it. The names below are the layer's face (what callers import from
evalcore.store), each defined once in its module."""
from evalcore.core.errors import DiskFull, ReadOnlyStore, StoreBusy, StoreError
from evalcore.store.failures import (
    DURABLE,
    FULL,
    INVALIDATED,
    store_error,
)
from evalcore.store.leases import (
    Lease,
)
from evalcore.store.locks import (
    GROUP_VAR,
    WAITING_FRESH,
    ServerLockHeld,
    done_waiting,
    lock_descriptor,
    lock_holders,
    record_holders,
    server_lock,
    someone_waits,
    waiting,
)
from evalcore.store.marks import (
    SCOPES,
    file_stamp,
    revision,
    stamp,
)
from evalcore.store.memory import (
    MEMORY_VAR,
    SCORING_MEMORY,
    bound_memory,
    memory_limit,
)
from evalcore.store.opening import (
    DATA_TABLES,
    HANDOVER_WAIT,
    NEVER_SKIP_WAL,
    READ_ONLY_FS,
    WAIT_VAR,
    Handle,
    connect,
    lock_wait,
    migrate,
    run_migrations,
    schema_version,
)
from evalcore.store.paths import (
    ENV_VAR,
    MAGIC,
    check_store_path,
    default_db_path,
    resolve_db_path,
    writable,
)
from evalcore.store.shared import (
    FAIR_WAIT,
    LOCK_GRACE,
    Shared,
    lease,
)
from evalcore.store.transactions import (
    RETRIES,
    WRITE_LOCK,
    WRITER_KEYS,
    WriteConflict,
    bump_revision,
    insert_frame,
    last_id,
    next_id,
    registered,
    retrying,
    transaction,
)

__all__ = ["bound_memory", "bump_revision", "check_store_path", "connect", "DATA_TABLES", "default_db_path",
           "DiskFull", "done_waiting", "DURABLE", "ENV_VAR", "FAIR_WAIT", "file_stamp", "FULL", "GROUP_VAR", "Handle",
           "HANDOVER_WAIT", "insert_frame", "INVALIDATED", "last_id", "Lease", "lease", "lock_descriptor",
           "LOCK_GRACE", "lock_holders", "lock_wait", "MAGIC", "memory_limit", "MEMORY_VAR", "migrate",
           "NEVER_SKIP_WAL", "next_id", "READ_ONLY_FS", "ReadOnlyStore", "record_holders", "registered", "resolve_db_path",
           "RETRIES", "retrying", "revision", "run_migrations", "schema_version", "SCOPES", "SCORING_MEMORY",
           "server_lock", "ServerLockHeld", "Shared", "someone_waits", "stamp", "store_error", "StoreBusy",
           "StoreError", "transaction", "WAIT_VAR", "waiting", "WAITING_FRESH", "writable", "WRITE_LOCK",
           "WriteConflict", "WRITER_KEYS"]
