"""The guess throttles as a guesser meets them over Streamlit's own protocol (tests/support/streamlit_session.Session): from
127.0.0.1 with a new session every few guesses and a made-up X-Forwarded-For on each, and through a real
nginx (Debian's package, started here on loopback ports, configured as the README says) from several
loopback addresses (127.0.0.2, 127.0.0.3, ...: all of 127/8 is this machine on Linux).

What a guesser gets is read from the page: "Wrong password" means the guess was checked; "Too many wrong
passwords" or "This server has had 30 wrong passwords" means it was not."""
from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.annotate import free_port, healthy, serve
from support import ROOT, copy_default_store
from support.streamlit_session import Session

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
pytestmark = pytest.mark.slow   # page servers and nginx: `python -m pytest -m slow`

PASSWORD = "correct horse 7"
PAGE, QUERY = "upload", "dataset=demo-zh&track=lccc%2Fchitchat"
BOX = "Upload password"
CHECKED, HELD, SERVER_HELD = "Wrong password", "Too many wrong passwords", "This server has had"
IGNORED = "ignored"   # sent to a box the page had drawn disabled (locked): Streamlit drops it, nothing is said


@pytest.fixture
def store(tmp_path, default_store_file):
    return copy_default_store(default_store_file, tmp_path / "store.duckdb")


def _server(store: Path, tmp_path: Path, trusted: str | None):
    env = {k: v for k, v in os.environ.items() if k not in ("EVALCORE_TRUSTED_PROXIES", "FORWARDED_ALLOW_IPS")}
    env.update(EVALCORE_DB=str(store), EVALCORE_UPLOAD_PASSWORD=PASSWORD)
    if trusted is not None:
        env["EVALCORE_TRUSTED_PROXIES"] = trusted
    return serve(["app.py", "--server.address", "127.0.0.1"], env, ROOT, tmp_path / "server.log")


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Nginx:
    """nginx in front of one page server, the README's settings plus X-Forwarded-For; stopped by its pid."""

    def __init__(self, upstream: str, folder: Path):
        self.port = free_port()
        folder.mkdir(parents=True, exist_ok=True)
        user = "user root;\n" if os.geteuid() == 0 else ""
        temps = "".join(f"{k}_temp_path {folder}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        (folder / "nginx.conf").write_text(f"""{user}daemon off;
worker_processes 1;
error_log {folder}/error.log;
pid {folder}/nginx.pid;
events {{ worker_connections 256; }}
http {{
  access_log off;
  {temps}
  upstream evalcore {{ ip_hash; server {upstream.removeprefix('http://').replace('localhost', '127.0.0.1')}; }}
  server {{
    listen 127.0.0.1:{self.port};
    location / {{
      proxy_pass http://evalcore;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection "upgrade";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_read_timeout 86400;
    }}
  }}
}}
""")
        self.proc = subprocess.Popen([NGINX, "-p", str(folder), "-c", str(folder / "nginx.conf")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"
        if not healthy(self.base, tries=60):
            self.stop()
            raise RuntimeError((folder / "error.log").read_text())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


async def _guess(base: str, guesses: list[str], *, per_session: int, source: str | None = None,
                 spoof: bool = False) -> list[str]:
    """Each guess's outcome (CHECKED, HELD, SERVER_HELD, IGNORED or 'right'), a new session every `per_session` guesses,
    each session claiming a new made-up X-Forwarded-For when `spoof`."""
    rng = random.Random(7)
    out: list[str] = []
    for start in range(0, len(guesses), per_session):
        headers = {"X-Forwarded-For": f"203.0.113.{rng.randrange(1, 255)}"} if spoof else {}
        tab = await Session(base, PAGE, QUERY, headers=headers, local_addr=(source, 0) if source else None).open()
        try:
            for given in guesses[start:start + per_session]:
                if not _drawn(tab, BOX):   # the gate let this session in
                    out.append("right")
                    continue
                await tab.fill(BOX, given)
                await tab.run()
                out.append("right" if not _drawn(tab, BOX) else CHECKED if tab.said(CHECKED) else
                           SERVER_HELD if tab.said(SERVER_HELD) else HELD if tab.said(HELD) else IGNORED)
        finally:
            await tab.close()
    return out


def _drawn(tab: Session, label: str) -> bool:
    return any(w.label == label for w in tab.widgets.values())


# alone: its locks last 1, 2, 4 ... s, so on a loaded machine the last lock had run out before the right password
# came (2026-11-28, once in a full run); its check depends on the machine's speed
@pytest.mark.serial
def test_guesses_from_loopback_with_new_sessions_and_made_up_addresses_are_held(store, tmp_path):
    """The issue's guesser: 120 wrong passwords in 40 s from 127.0.0.1, a new session every five guesses. Now
    the 40 wrong guesses below (each session claiming another X-Forwarded-For, which nobody is trusted to set)
    are counted against one client, 'local': five free, then 1, 2, 4 ... s locks, so at most 5 + 1 + log2 of
    the seconds spent are checked. The right password while locked is not checked either."""
    proc, base = _server(store, tmp_path, trusted=None)
    try:
        started = time.monotonic()
        outcomes = asyncio.run(_guess(base, [f"wrong{k}" for k in range(40)], per_session=5, spoof=True))
        spent = time.monotonic() - started
        checked = outcomes.count(CHECKED)
        assert set(outcomes) <= {CHECKED, HELD, IGNORED} and HELD in outcomes, outcomes
        assert 5 <= checked <= 5 + 1 + int(spent).bit_length(), (checked, spent, outcomes)
        assert asyncio.run(_right_while_locked(base)) in (HELD, IGNORED)   # locked: not even checked
    finally:
        _stop(proc)


async def _right_while_locked(base: str) -> str:
    """The right password sent while this client is surely locked: a wrong guess first, and the right one at once
    after it when the lock has 2 s or more left (else, once it ran out, another wrong guess starts a longer one).
    Sent straight after the burst it met a lock that had just run out on a loaded machine (2026-11-28), and was
    rightly checked: when it comes, not whether it is held, decided that test."""
    import re

    tab = await Session(base, PAGE, QUERY).open()
    try:
        for k in range(20):
            await tab.fill(BOX, f"again{k}")
            await tab.run()
            held = next((t for t in tab.texts() if HELD in t), None)
            left = re.search(r"checked in (\d+(?:\.\d+)?) s", held or "")
            if tab.said(CHECKED) or (left and float(left.group(1)) >= 2):
                break   # a lock just started (a checked wrong guess) or has 2 s or more left
            await asyncio.sleep(float(left.group(1)) + 0.3 if left else 0.5)
        await tab.fill(BOX, PASSWORD)
        await tab.run()
        if not _drawn(tab, BOX):
            return "right"
        return CHECKED if tab.said(CHECKED) else HELD if tab.said(HELD) else IGNORED
    finally:
        await tab.close()


@pytest.mark.skipif(not Path(NGINX).exists(), reason="nginx is not installed (apt-get install nginx)")
def test_behind_the_readme_nginx_each_client_is_counted_apart_and_the_server_has_a_limit(store, tmp_path):
    """EVALCORE_TRUSTED_PROXIES=127.0.0.1 names the nginx: a guesser at 127.0.0.2 (new sessions, made-up
    X-Forwarded-For) is held after its five free guesses, while a colleague at 127.0.0.3 gets in with the right
    password at once. Then 40 guessers at 40 addresses, one guess each: the server checks 30 at most in a minute
    whoever makes them, and says so to the rest."""
    proc, base = _server(store, tmp_path, trusted="127.0.0.1")
    proxy = Nginx(base, tmp_path / "nginx")
    try:
        outcomes = asyncio.run(_guess(proxy.base, [f"wrong{k}" for k in range(12)], per_session=3,
                                      source="127.0.0.2", spoof=True))
        assert outcomes[:5] == [CHECKED] * 5 and HELD in outcomes[5:], outcomes
        assert outcomes.count(CHECKED) <= 8, outcomes
        assert asyncio.run(_guess(proxy.base, [PASSWORD], per_session=1, source="127.0.0.3")) == ["right"]

        async def crowd() -> list[str]:
            return [o for k in range(40) for o in
                    await _guess(proxy.base, [f"crowd{k}"], per_session=1, source=f"127.0.1.{k + 1}")]

        crowd_outcomes = asyncio.run(crowd())
        before = outcomes.count(CHECKED)   # this server's wrong guesses in the minute before the crowd
        assert crowd_outcomes.count(CHECKED) == 30 - before, crowd_outcomes
        assert crowd_outcomes.count(SERVER_HELD) == 40 - (30 - before), crowd_outcomes
    finally:
        proxy.stop()
        _stop(proc)


@pytest.mark.skipif(not Path(NGINX).exists(), reason="nginx is not installed (apt-get install nginx)")
def test_behind_an_unnamed_proxy_every_client_is_one_and_the_log_says_why(store, tmp_path):
    """Without EVALCORE_TRUSTED_PROXIES the nginx's X-Forwarded-For is not read (nor anyone's): every client
    behind it is 'local', so one guesser holds everyone back (the price of an unnamed proxy, never a way in),
    and the server's log says what to set."""
    proc, base = _server(store, tmp_path, trusted=None)
    proxy = Nginx(base, tmp_path / "nginx")
    try:
        outcomes = asyncio.run(_guess(proxy.base, [f"wrong{k}" for k in range(7)], per_session=7, source="127.0.0.2"))
        assert outcomes == [CHECKED] * 6 + [HELD], outcomes   # the sixth is checked, then locks
        # not checked either way: said held, or sent to the box the new session drew locked (which one depends on
        # when its first page came, 2026-11-28: 'ignored' once in a clean clone's full run)
        assert asyncio.run(_guess(proxy.base, [PASSWORD], per_session=1, source="127.0.0.3")) in ([HELD], [IGNORED])
    finally:
        proxy.stop()
        _stop(proc)
    assert "EVALCORE_TRUSTED_PROXIES does not name" in (tmp_path / "server.log").read_text()


def _task(store: Path):
    from evalcore.services.defaults import DEMO_TASK
    from evalcore.store import connect
    from evalcore.store import tasks as stored

    con = connect(store)
    try:
        # an English task: the guesses are read from the page's English (the demo task on demo-zh is zh-CN)
        con.execute("UPDATE tasks SET lang = 'en' WHERE name = ?", [DEMO_TASK])
        return next(stored.get(con, int(t)) for t, n in con.execute("SELECT task_id, name FROM tasks").fetchall()
                    if n == DEMO_TASK)
    finally:
        con.close()


async def _code_guess(base: str, task, codes: list[str], *, per_session: int, source: str | None = None,
                      spoof: bool = False) -> list[str]:
    """Annotate's login over the protocol: each code given with a new name in one form submit; the outcome read
    from the page (CHECKED: 'not this task's access code', HELD: 'Too many wrong access codes', 'right': the
    personal key was issued)."""
    rng = random.Random(11)
    out = []
    for start in range(0, len(codes), per_session):
        headers = {"X-Forwarded-For": f"198.51.100.{rng.randrange(1, 255)}"} if spoof else {}
        tab = await Session(base, "annotate", f"task={task.task_id}", headers=headers,
                            local_addr=(source, 0) if source else None).open()
        try:
            for k, code in enumerate(codes[start:start + per_session]):
                await tab.fill("Your name", f"guesser {start + k} {rng.random()}")
                await tab.fill("Access code", code)
                await tab.click(label="Start rating")
                out.append("right" if tab.said("Your personal key") else
                           CHECKED if tab.said("not this task's access code") else
                           HELD if tab.said("Too many wrong access codes") else
                           SERVER_HELD if tab.said(SERVER_HELD) else " ".join(tab.texts()))
        finally:
            await tab.close()
    return out


@pytest.mark.skipif(not Path(NGINX).exists(), reason="nginx is not installed (apt-get install nginx)")
def test_task_access_codes_are_held_from_loopback_and_behind_nginx(store, tmp_path):
    """Issue 46, item 8, for Annotate's access code: from 127.0.0.1 with new sessions and made-up
    X-Forwarded-For, five wrong codes are checked and then the guesser is held (the right code too); behind
    the README's nginx (named in EVALCORE_TRUSTED_PROXIES) a guesser at 127.0.0.2 is held while an annotator
    at 127.0.0.3 enters with the right code at once."""
    task = _task(store)
    proc, base = _server(store, tmp_path, trusted=None)
    try:
        outcomes = asyncio.run(_code_guess(base, task, [f"nope{k}" for k in range(9)], per_session=3, spoof=True))
        assert outcomes[:5] == [CHECKED] * 5 and HELD in outcomes[5:], outcomes
        assert asyncio.run(_code_guess(base, task, [task.access_code], per_session=1)) == [HELD]
    finally:
        _stop(proc)
    proc, base = _server(store, tmp_path, trusted="127.0.0.1")   # 127.0.0.1 is now the nginx, and only it
    proxy = Nginx(base, tmp_path / "nginx")
    try:
        outcomes = asyncio.run(_code_guess(proxy.base, task, [f"nah{k}" for k in range(9)], per_session=3,
                                           source="127.0.0.2", spoof=True))
        assert outcomes[:5] == [CHECKED] * 5 and HELD in outcomes[5:], outcomes
        assert asyncio.run(_code_guess(proxy.base, task, [task.access_code], per_session=1,
                                       source="127.0.0.3")) == ["right"]
    finally:
        proxy.stop()
        _stop(proc)


def test_a_proxy_list_that_is_not_addresses_stops_the_server_with_one_sentence(store, tmp_path):
    env = {**os.environ, "EVALCORE_DB": str(store), "EVALCORE_TRUSTED_PROXIES": "127.0.0.1, nginx.local"}
    done = subprocess.run([sys.executable, "app.py", "--server.port", str(free_port()), "--server.headless", "true"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "'nginx.local' is not an address or a network" in done.stderr
    assert "Traceback" not in done.stderr
