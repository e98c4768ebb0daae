"""Fixtures of the system tests: `server`, the dashboard served on a copy of the default store, and `browser`,
Chromium beside it, each once per module (a module that needs another store defines its own `server`)."""
from __future__ import annotations

import pytest

from support import copy_default_store
from support.browser import STORE, chromium, serve


@pytest.fixture(scope="module")
def server(tmp_path_factory, default_store_file):
    pytest.importorskip("playwright", reason="pip install -r tests/requirements.txt")
    db = copy_default_store(default_store_file, tmp_path_factory.mktemp("browser") / "store.duckdb")
    STORE["db"] = db
    with serve(db) as base:
        yield base


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as b:
        yield b
