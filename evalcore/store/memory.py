"""DuckDB's memory limit in this process: the scoring commands bound it (bound_memory), EVALCORE_DUCKDB_MEMORY
overrides it, and every store this process opens is held to it (limit_memory)."""
from __future__ import annotations

import os
import re

import duckdb

from evalcore.core.errors import StoreError

MEMORY_VAR = "EVALCORE_DUCKDB_MEMORY"
"""DuckDB's memory limit in this process (e.g. 1GB; `default`: DuckDB's own, 80% of the machine's memory).
DuckDB's default lets it keep every block it has read cached: scoring the 10M store's 10 million responses
peaked at 6.0 GB with it and 2.45 GB under 1GB, in the same time. So the commands that score (`score`,
`worker`) run under SCORING_MEMORY unless this says otherwise (bound_memory); everything else under DuckDB's
default, because a query that needs more than the limit fails instead of using the machine's memory."""
SCORING_MEMORY = "1GB"
_MEMORY_DEFAULT = ""   # this process's limit when MEMORY_VAR is unset (bound_memory)
_MEMORY = re.compile(r"^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$", re.IGNORECASE)


def bound_memory(limit: str = SCORING_MEMORY) -> None:
    """Stores this process opens from now on hold DuckDB to `limit` unless MEMORY_VAR says otherwise: the
    scoring commands call it (a scoring process reads and writes whole tracks, and DuckDB's default lets it keep
    every block it has read)."""
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


def limit_memory(con: duckdb.DuckDBPyConnection) -> None:
    """Hold `con` to this process's memory limit (memory_limit), if it has one."""
    limit = memory_limit()
    if limit:
        con.execute(f"SET memory_limit = '{limit}'")   # checked by memory_limit: digits and a unit
