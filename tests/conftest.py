"""Fixtures every layer's tests share (a fresh store, the toy dataset in it, the default store built once per
session) and the markers. Helpers that tests import live in tests/support/, which pyproject puts on the path."""
from __future__ import annotations

import fcntl
import shutil
from pathlib import Path

import pytest

from evalcore.store import connect
from support import TOY_ITEMS, write_jsonl
from support.browser import chromium


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


@pytest.fixture(scope="session")
def empty_store_file(tmp_path_factory) -> Path:
    """A new store with every migration applied, made once per worker: `con` copies it (a third of the time of
    migrating each test's store; migrating itself is tested in tests/store)."""
    path = tmp_path_factory.mktemp("empty-store") / "empty.duckdb"
    connect(path).close()
    return path


@pytest.fixture
def con(tmp_path, empty_store_file):
    path = tmp_path / "store.duckdb"
    shutil.copyfile(empty_store_file, path)
    c = connect(path)
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
    """The marked set runs in one process unless it leaves out the `serial` tests (CI's second step runs
    `-m "slow and not serial"` on every core, a test file to a worker, then `-m "slow and serial"` alone): real
    browsers, servers and SIGKILLed commands can share the cores, but what a serial test checks depends on having
    them to itself."""
    expr = config.option.markexpr or ""
    if "slow" in expr and "not slow" not in expr and getattr(config.option, "numprocesses", None):
        if "not serial" in expr:
            config.option.dist = "loadfile"   # a file's module-scoped servers are started once, on one worker
        else:
            config.option.numprocesses = 0
            config.option.dist = "no"


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long training, the real converted models, a real browser, SIGKILLed "
                            "commands, a clean-clone install, every system test; left out of plain `python -m pytest` "
                            "(pyproject's addopts), run by `python -m pytest -m slow`, which CI runs as its second step")
    config.addinivalue_line("markers", "browser: drives Debian's Chromium through Playwright (skipped, saying why, "
                            "where either is missing)")
    config.addinivalue_line("markers", "system: the whole program as a user or an attacker meets it (page servers, "
                            "SIGKILL, a full disk, a proxy, concurrent sessions, a clean-clone install, a benchmark run "
                            "end to end); every test under tests/system/ and tests/bench/ carries it, and slow too")
    config.addinivalue_line("markers", "serial: needs the machine to itself, because what it checks depends on how "
                            "fast the machine is (a kill timed by requests served, a port freed within seconds) or "
                            "because it uses every core itself (torch training); run in a process of its own, last")


WHOLE_PROGRAM = ("system", "bench")   # folders of tests/ whose every test is a system test
# The marked set's longest files (2 to 5 minutes each on 2 cores, 2026-11-28), collected first so that xdist hands
# them out first (a file to a worker): a worker is then never left running one of them alone at the end.
LONGEST_FIRST = ("test_crash.py", "test_disk_full.py", "test_ray.py", "test_annotate_browser.py", "test_packaging.py",
                 "test_first_run.py", "test_concurrency_browser.py", "test_chat_browser.py")


def pytest_collection_modifyitems(config, items):
    folders = [Path(__file__).parent / name for name in WHOLE_PROGRAM]
    for item in items:
        if any(folder in Path(str(item.fspath)).parents for folder in folders):
            item.add_marker(pytest.mark.system)
            item.add_marker(pytest.mark.slow)
        module = getattr(item, "module", None)
        if "browser" in getattr(item, "fixturenames", ()) or getattr(module, "chromium", None) is chromium:
            item.add_marker(pytest.mark.browser)   # it opens Chromium (support.browser.chromium)
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))   # stable: a file stays together
