"""Where the store lives (--db, EVALCORE_DB, the user's data directory) and whether a path can be one: a DuckDB
file, and one this process may write."""
from __future__ import annotations

import errno
import os
from pathlib import Path

from evalcore.core.errors import StoreError

ENV_VAR = "EVALCORE_DB"
MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file


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
