"""Registered chat endpoints: a name for where a model answers (base URL, served model name) and how it is asked
(sampling, limits, concurrency, template). No key is stored: only the name of the variable that holds it, read
at call time (evalcore.core.keys)."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from datetime import datetime

import duckdb
import pandas as pd

from evalcore.core.chat import Endpoint
from evalcore.core.keys import DEFAULT_KEY_ENV
from evalcore.core.options import (
    GENERATION_CONCURRENCY,
    GENERATION_KEY_ENV,
    GENERATION_MAX_TOKENS,
    GENERATION_TEMPERATURE,
    GENERATION_TIMEOUT,
    GENERATION_TOP_P,
)
from evalcore.core.text import bad_character, invisible, skeleton
from evalcore.core.urls import problem as url_problem
from evalcore.core.urls import held_secrets, without_secrets
from evalcore.store.history import current_user
from evalcore.store.transactions import bump_revision, transaction


@dataclass(frozen=True)
class Registered:
    """A registered endpoint as the store has it."""
    name: str
    base_url: str
    model: str
    api_key_env: str | None = GENERATION_KEY_ENV
    temperature: float | None = GENERATION_TEMPERATURE
    top_p: float | None = GENERATION_TOP_P
    max_tokens: int = GENERATION_MAX_TOKENS
    seed: int | None = None
    timeout: float = GENERATION_TIMEOUT
    concurrency: int = GENERATION_CONCURRENCY
    template: str | None = None

    def endpoint(self, *, stream: bool = False, seed: int | None = None) -> Endpoint:
        """The client's view of it (`seed`: a run's own, else the endpoint's)."""
        return Endpoint(self.base_url, self.model, api_key_env=self.api_key_env, temperature=self.temperature,
                        max_tokens=self.max_tokens, timeout=self.timeout, top_p=self.top_p,
                        seed=self.seed if seed is None else seed, stream=stream)

    def judge(self) -> Endpoint:
        """As a judge: greedy unless the endpoint says otherwise, and one JSON answer."""
        return Endpoint(self.base_url, self.model, api_key_env=self.api_key_env or DEFAULT_KEY_ENV,
                        temperature=self.temperature, max_tokens=self.max_tokens, timeout=self.timeout)


COLUMNS = [f.name for f in fields(Registered)]
VARIABLE = re.compile(r"[A-Z_][A-Z0-9_]*")   # a key variable's name; a key (sk-..., lower case) never matches


def check(entry: Registered) -> None:
    """ValueError naming the field, for an entry no request could be made with."""
    if not entry.name.strip():
        raise ValueError("an endpoint needs a name")
    hidden = invisible(entry.name)
    bad = bad_character(entry.name) or (f"invisible character U+{ord(hidden[0]):04X}" if hidden else None)
    if bad:   # it would be a second endpoint shown exactly like another
        raise ValueError(f"an endpoint's name may not hold a {bad}")
    why = url_problem(entry.base_url)   # never repeats the URL: a key may have been pasted into it
    if why:
        raise ValueError(f"--base-url: {why}")
    if not entry.model.strip():
        raise ValueError("--model: give the name the server serves (`evalcore endpoint test` lists them)")
    if entry.api_key_env and not VARIABLE.fullmatch(entry.api_key_env):
        # never repeated in the message: what was given may be a key pasted in the wrong place
        raise ValueError("--api-key-env takes the NAME of the environment variable that holds the key (upper-case "
                         "letters, digits and underscores, e.g. EVALCORE_API_KEY), never the key itself")
    if entry.temperature is not None and not 0 <= entry.temperature <= 2:
        raise ValueError(f"--temperature {entry.temperature} is outside 0..2")
    if entry.top_p is not None and not 0 < entry.top_p <= 1:
        raise ValueError(f"--top-p {entry.top_p} is outside (0, 1]")
    if entry.max_tokens < 1 or entry.concurrency < 1 or entry.timeout <= 0:
        raise ValueError("--max-tokens, --concurrency and --timeout must be positive")


def add(con: duckdb.DuckDBPyConnection, entry: Registered, *, replace: bool = False) -> None:
    """Register `entry` (one short write). A name taken (as a person would read it) is refused unless `replace`."""
    check(entry)
    with transaction(con):
        taken = [n for (n,) in con.execute("SELECT name FROM endpoints").fetchall()
                 if skeleton(n) == skeleton(entry.name)]   # as a person would read it: look-alikes too
        if taken and not replace:
            raise ValueError(f"an endpoint named {taken[0]!r} is registered already: remove it first, or give --replace")
        for name in taken:   # --replace: the entry under its earlier spelling goes
            con.execute("DELETE FROM endpoints WHERE name = ?", [name])
        con.execute(f"INSERT INTO endpoints ({', '.join(COLUMNS)}, added_by, added_at) VALUES "
                    f"({', '.join('?' * len(COLUMNS))}, ?, ?)",
                    [*asdict(entry).values(), current_user(), datetime.now().replace(microsecond=0)])
        bump_revision(con)


def remove(con: duckdb.DuckDBPyConnection, name: str) -> None:
    get(con, name)   # an unknown name: the sentence listing those there are
    with transaction(con):
        con.execute("DELETE FROM endpoints WHERE name = ?", [name])
        bump_revision(con)


def get(con: duckdb.DuckDBPyConnection, name: str) -> Registered:
    rows = con.execute(f"SELECT {', '.join(COLUMNS)} FROM endpoints WHERE name = ?", [name]).fetchall()
    if not rows:
        known = [n for (n,) in con.execute("SELECT name FROM endpoints ORDER BY 1").fetchall()]
        raise ValueError(f"no endpoint named {name!r}; " + (f"registered: {', '.join(known)}" if known else
                         "none is registered: `evalcore endpoint add NAME --base-url URL --model SERVED_NAME`"))
    values = dict(zip(COLUMNS, rows[0]))
    # a URL stored before a user name, password or query was refused is used and shown without them
    values["base_url"] = without_secrets(values["base_url"])
    return Registered(**{k: (None if isinstance(v, float) and pd.isna(v) else v) for k, v in values.items()})


def listing(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every endpoint, by name, with who added it and when (no key: there is none to show; a base URL stored
    with a user name, password or query before they were refused is listed without them)."""
    frame = con.execute(f"SELECT {', '.join(COLUMNS)}, added_by, added_at FROM endpoints ORDER BY name").df()
    frame["base_url"] = [without_secrets(u) for u in frame["base_url"]]
    return frame


def stored_with_secrets(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether endpoint `name`'s stored base URL holds a user name, password or query (registered before
    they were refused): they are neither shown nor sent; registering it again (--replace) drops them."""
    rows = con.execute("SELECT base_url FROM endpoints WHERE name = ?", [name]).fetchall()
    return bool(rows) and held_secrets(rows[0][0])
