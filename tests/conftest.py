"""Fixtures every layer's tests share (a fresh store, the toy dataset in it, the default store built once per
session) and the markers. Helpers that tests import live in tests/support/, which pyproject puts on the path."""
from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

from evalcore.store import connect
from support import TOY_ITEMS, write_jsonl


@pytest.fixture(scope="session")
def default_store_file(tmp_path_factory, worker_id) -> Path:
    """The embedded default store as `evalcore init` builds it (init_store), built once per test run: tests take a
    copy (copy_default_store) instead of building their own (~20 s each). Under xdist the first worker to ask builds
    it in the run's shared temporary folder, under a lock, and the others wait for it and read the same file."""
    from evalcore.services.defaults import init_store

    shared_root = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    folder = shared_root / "default-store"
    folder.mkdir(exist_ok=True)
    path = folder / "default.duckdb"
    with open(folder / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # released when the file closes, a crashed builder's too
        if not path.exists():
            building = folder / "building.duckdb"
            building.unlink(missing_ok=True)
            c = connect(building)
            try:
                init_store(c)
                c.execute("CHECKPOINT")   # everything in the one file: a copy of it is the whole store
            finally:
                c.close()
            building.rename(path)   # whole or absent: a worker never copies a store half built
    return path


@pytest.fixture
def con(tmp_path):
    c = connect(tmp_path / "store.duckdb")
    yield c
    c.close()


@pytest.fixture
def toy(con, tmp_path):
    """A store with three toy items and two models' responses."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.ingest.formats.responses import import_responses

    import_items(con, write_jsonl(tmp_path / "items.jsonl", TOY_ITEMS))
    (tmp_path / "resp.csv").write_text("item_id,model,response\nt1,m1,天气很好\nt2,m1,你好\nt1,m2,嗯\n", encoding="utf-8")
    import_responses(con, tmp_path / "resp.csv", dataset="toy", track="toy/chitchat")
    return con


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """The slow set runs in this one process, not in pyproject's xdist workers: its real browsers, servers,
    SIGKILLed commands and timed waits must not compete for the cores with other tests."""
    expr = config.option.markexpr or ""
    if "slow" in expr and "not slow" not in expr and getattr(config.option, "numprocesses", None):
        config.option.numprocesses = 0
        config.option.dist = "no"


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long training, the real converted models, a real browser, SIGKILLed "
                            "commands, a clean-clone install; left out of plain `python -m pytest` (pyproject's addopts), "
                            "run by `python -m pytest -m slow`, which CI runs as its second step")
    config.addinivalue_line("markers", "browser: drives Debian's Chromium through Playwright (skipped, saying why, "
                            "where either is missing)")
    config.addinivalue_line("markers", "system: the whole program as a user or an attacker meets it (page servers, "
                            "SIGKILL, a full disk, a proxy, concurrent sessions, a clean-clone install); every test "
                            "under tests/system/ carries it")


def pytest_collection_modifyitems(config, items):
    system = Path(__file__).parent / "system"
    for item in items:
        if system in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.system)
