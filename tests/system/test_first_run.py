"""A first run and a server that start and stop safely (issue 28).

- The default store's first build (quick datasets, then demo-zh in a background thread) never races
  itself: started on an empty folder several times in a row, with pages opening the store while the
  slow stage runs, it always ends with every embedded dataset and no error.
- `evalcore app` listens on 127.0.0.1 unless told otherwise, and a SIGTERM to it frees the port.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from evalcore.services.defaults import DEFAULT_DATASETS, SLOW, build_default_in_stages
from evalcore.store import connect
from support import ROOT, free_port


def _wait_healthy(proc: subprocess.Popen, port: int, timeout: float = 90) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        assert proc.poll() is None, f"the server exited with {proc.returncode}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as r:
                if r.status == 200:
                    return time.monotonic() - start
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"no answer on port {port} within {timeout} s")


def _port_taken(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _listening_addresses(port: int) -> set[str]:
    """Local addresses (as dotted IPv4, or 'ipv6:<hex>') listening on `port`, read from /proc/net/tcp*."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, hexport = local.split(":")
            if state != "0A" or int(hexport, 16) != port:  # 0A: LISTEN
                continue
            if len(addr) == 8:  # IPv4, little-endian
                found.add(".".join(str(int(addr[i:i + 2], 16)) for i in (6, 4, 2, 0)))
            else:
                found.add("ipv6:" + addr)
    return found


@pytest.mark.slow  # five first builds of demo-zh (about 10 s each)
def test_first_build_never_races_itself_with_pages_opening_meanwhile(tmp_path):
    """prepared() as the dashboard runs it, on an empty store, five times in a row; while the slow stage
    runs, 'pages' open and close their own connections to the same file as fast as they can."""
    for attempt in range(5):
        path = str(tmp_path / f"first-{attempt}" / "evalcore.duckdb")
        con = connect(path, wait=30)
        thread = build_default_in_stages(con, hand_over=True)  # the thread now owns `con`
        assert thread is not None
        seen, errors, opened = set(), [], 0
        while thread.is_alive():
            try:
                page = connect(path, wait=30)
                try:
                    seen |= {d for (d,) in page.execute("SELECT dataset FROM datasets").fetchall()}
                finally:
                    page.close()
                opened += 1
            except Exception as exc:  # any failure to open is the bug
                errors.append(f"{type(exc).__name__}: {exc}")
        thread.join()
        for _ in range(20):  # and right after the thread let go of its connection
            page = connect(path, wait=30)
            page.close()
        assert not errors, f"attempt {attempt}: {errors[:3]}"
        assert opened > 0, "no page opened the store while the slow stage ran"
        assert set(DEFAULT_DATASETS) - set(SLOW) <= seen  # the quick datasets were there from the start
        after = connect(path)
        try:
            present = {d for (d,) in after.execute("SELECT dataset FROM datasets").fetchall()}
            assert present == set(DEFAULT_DATASETS), f"attempt {attempt}: {present}"
            scored = after.execute("SELECT count(*) FROM system_scores WHERE dataset = 'demo-zh' "
                                   "AND origin = 'computed'").fetchall()[0][0]
        finally:
            after.close()
        assert scored > 0, f"attempt {attempt}: demo-zh has no lexical scores"


def _start_app(tmp_path: Path, port: int, *extra: str) -> subprocess.Popen:
    log = open(tmp_path / f"app-{port}.log", "w")
    env = {k: v for k, v in os.environ.items() if k != "EVALCORE_DB"}
    # from another folder, as a user would; CI installs the requirements, not evalcore itself
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.Popen([sys.executable, "-m", "evalcore", "app", "--port", str(port),
                             "--db", str(tmp_path / "app.duckdb"), *extra],
                            cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)


@pytest.mark.skipif(os.name != "posix", reason="signals and /proc/net are POSIX")
@pytest.mark.serial
def test_sigterm_to_evalcore_app_frees_the_port_within_5_s(tmp_path):
    port = free_port()
    proc = _start_app(tmp_path, port)
    try:
        _wait_healthy(proc, port)
        # the default address: this machine only
        assert _listening_addresses(port) == {"127.0.0.1"}
        proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        while _port_taken(port) and time.monotonic() - sent < 5:
            time.sleep(0.05)
        freed = time.monotonic() - sent
        assert not _port_taken(port), "the port still answers 5 s after SIGTERM to `evalcore app`"
        proc.wait(timeout=5)  # and `evalcore app` itself has exited
        print(f"port free {freed:.2f} s after SIGTERM; exit status {proc.returncode}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(os.name != "posix", reason="signals and /proc/net are POSIX")
def test_evalcore_app_address_flag_is_passed_on(tmp_path):
    port = free_port()
    proc = _start_app(tmp_path, port, "--address", "0.0.0.0")
    try:
        _wait_healthy(proc, port)
        assert _listening_addresses(port) == {"0.0.0.0"}
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_evalcore_app_help_names_the_default_address():
    out = subprocess.run([sys.executable, "-m", "evalcore", "app", "--help"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert "127.0.0.1" in " ".join(out.split())
