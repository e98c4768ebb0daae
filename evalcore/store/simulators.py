"""Simulators as stored (migration 20): a name for a registered endpoint playing the user with a user template
(NULL: each skill's shipped one), a persona style and a seed. What a task's conversations were played with is frozen
into the task when it is made (chat_tasks.simulators), so changing a simulator later changes no stored signature."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb
import pandas as pd

from evalcore.core.text import bad_character, identity_key, invisible, skeleton
from evalcore.store.history import current_user
from evalcore.store.transactions import bump_revision, transaction


@dataclass(frozen=True)
class Simulator:
    name: str
    endpoint: str
    style: str
    template: str | None
    seed: int


def check_name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise ValueError("a simulator needs a name")
    hidden = invisible(name)
    bad = bad_character(name) or (f"invisible character U+{ord(hidden[0]):04X}" if hidden else None)
    if bad:
        raise ValueError(f"a simulator's name may not hold a {bad}")
    if len(name) > 64:
        raise ValueError("a simulator's name has at most 64 characters")
    return name


def add(con: duckdb.DuckDBPyConnection, sim: Simulator, *, replace: bool = False) -> None:
    """Register a simulator (one short write); a name taken (look-alikes too) is refused unless `replace`."""
    name = check_name(sim.name)
    with transaction(con):
        taken = [n for (n,) in con.execute("SELECT name FROM simulators").fetchall() if skeleton(n) == skeleton(name)]
        if taken and not replace:
            raise ValueError(f"a simulator named {taken[0]!r} is registered already: give --replace to change it")
        for old in taken:
            con.execute("DELETE FROM simulators WHERE name = ?", [old])
        con.execute("INSERT INTO simulators VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [name, identity_key(name), sim.endpoint, sim.style, sim.template, int(sim.seed), current_user(),
                     datetime.now().replace(microsecond=0)])
        bump_revision(con)


def get(con: duckdb.DuckDBPyConnection, name: str) -> Simulator:
    rows = con.execute("SELECT name, endpoint, style, template, seed FROM simulators WHERE name = ?", [name]).fetchall()
    if not rows:
        known = [n for (n,) in con.execute("SELECT name FROM simulators ORDER BY 1").fetchall()]
        raise ValueError(f"no simulator named {name!r}; " + (f"registered: {', '.join(known)}" if known else
                         "none is registered: `evalcore simulator add NAME --endpoint ENDPOINT`"))
    return Simulator(*rows[0])


def listing(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return con.execute("SELECT name, endpoint, style, coalesce(template, '(each skill''s own)') AS template, seed, "
                       "created_by, created_at FROM simulators ORDER BY name").df()
