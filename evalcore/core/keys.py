"""API keys, read when a request is made and never kept: from the environment variable an endpoint names, else
from the same name at the top level of .streamlit/secrets.toml (the working folder's, then the home folder's, as
the dashboard reads them). Nothing here stores, logs or prints a key; messages name the variable only."""
from __future__ import annotations

import os
import tomllib
from pathlib import Path

DEFAULT_KEY_ENV = "EVALCORE_JUDGE_API_KEY"


def secrets_files() -> list[Path]:
    return [Path.cwd() / ".streamlit" / "secrets.toml", Path.home() / ".streamlit" / "secrets.toml"]


def read_key(var: str | None) -> str | None:
    """The key the variable `var` holds now (None: no variable named, or nothing set)."""
    if not var:
        return None
    if os.environ.get(var):
        return os.environ[var]
    for file in secrets_files():
        try:
            value = tomllib.loads(file.read_text(encoding="utf-8")).get(var)
        except (OSError, ValueError):   # absent or unreadable: the other places may hold it
            continue
        if isinstance(value, str) and value:
            return value
    return None


REFUSED = ("HTTP 401", "HTTP 403")   # how the chat client words a refused key


def key_hint(error: str | None, var: str | None) -> str:
    """' (where the key comes from)' after a failure the server gave for the key, '' after any other."""
    return f" ({where_from(var)})" if (error or "").startswith(REFUSED) else ""


def where_from(var: str | None) -> str:
    """Where the key of `var` is looked for, for a 401's sentence."""
    if not var:
        return "no key is sent (the endpoint names no key variable: give --api-key-env VAR)"
    found = "it is set" if read_key(var) else "it is not set"
    return (f"the key comes from the environment variable {var} or a {var} entry in .streamlit/secrets.toml "
            f"({found})")
