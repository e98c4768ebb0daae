"""Ordered schema migrations. Each module `mNNN_*.py` has VERSION and SQL, and may have run(con): a
step after the SQL for data moved in pieces (one statement over a whole large table can need the
machine's memory).

A migration runs inside one transaction together with its version row, so a
store is always at exactly one version.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str
    run: Callable | None = None


def all_migrations() -> list[Migration]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("m"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.append(Migration(module.VERSION, info.name, module.SQL, getattr(module, "run", None)))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migration versions must be 1..n without gaps, found {versions}")
    return found


LATEST = len(all_migrations())
