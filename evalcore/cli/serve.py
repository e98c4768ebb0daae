"""`evalcore app`: the dashboard served by Streamlit on a store, as one page-serving process or a group of
them (--processes N), with the signals this process gets passed on to its servers (Forwarding, one path for
both) and the note it prints at start when more processes would use more of the machine's cores."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from evalcore.core import lazy
from evalcore.core.paths import app_root, streamlit_flags
from evalcore.core.processes import PARENT_VAR

# the store layer (DuckDB, pandas: 0.3 s) is imported only where a store path or its lock is used: a plain
# `evalcore app` hands over to its server without it, and the server imports it itself
store = lazy.module("evalcore.store")

LOCAL = "127.0.0.1"  # `evalcore app` listens here unless --address says otherwise
STOPS = (signal.SIGINT, signal.SIGTERM)


def app(args) -> int:
    """The dashboard opens the store itself, page by page: not opened here."""
    if getattr(args, "lang", None):   # the servers' default language (pages/kit/lang.py), in their environment
        os.environ["EVALCORE_LANG"] = args.lang
    note = capacity_note(args.processes)
    if note:
        print(note, file=sys.stderr, flush=True)
    if args.processes > 1:
        return run_group(args.db, args.port or 8501, args.address, args.processes)
    return run_app(args.db, args.port, args.address)


def cores() -> int:
    """The cores this process may run on (a container's or taskset's share, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def capacity_note(processes: int, available: int | None = None) -> str | None:
    """What `evalcore app` says at start when it serves with fewer page-serving processes than the cores it may
    use (None: it uses them all, or there is one core). Not a default of one process per core: the servers listen
    on ports P, P+1, ..., and only a proxy that keeps each browser on one server spreads users over them
    (docs/operations/lab-server.md); without one, every user reaches the first server and the others only take memory
    (each its own Python, Streamlit and DuckDB instance), so one process stays the default and the start says when more pay."""
    available = cores() if available is None else available
    if processes >= available:
        return None
    return (f"evalcore: {processes} page-serving process{'es' if processes > 1 else ''} on {available} cores: one "
            f"process serves pages on one core, so with many users at once (docs/operations/lab-server.md, \"More "
            f"than one page-serving process\") run `evalcore app --processes {available}`, one per core, behind a proxy "
            "that keeps each browser on one server")


def server_args(root, port: int | None, address: str | None) -> list[str]:
    """The command line of one server: app.py's own `python app.py` path, which keeps Streamlit out of evalcore."""
    args = [sys.executable, str(root / "app.py"), *streamlit_flags(root)]
    if port:
        args.append(f"--server.port={port}")
    return args + [f"--server.address={address or LOCAL}"]


class Forwarding:
    """While in its `with` block, every SIGINT and SIGTERM this process gets is sent on to each of `procs` still
    running (`once`: only the first, since a second one cuts a server's own orderly shutdown short); `sent`
    holds the signals passed on. Calling it passes a signal on as if this process had got it."""

    def __init__(self, procs: list[subprocess.Popen], once: bool = False):
        self.procs, self.once, self.sent = procs, once, []
        self.old: dict = {}

    def __call__(self, signum, _frame=None) -> None:
        if self.once and self.sent:
            return
        self.sent.append(signum)
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    def __enter__(self) -> "Forwarding":
        self.old = {s: signal.signal(s, self) for s in STOPS}
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self.old.items():
            signal.signal(s, handler)


def run_app(db: str | None, port: int | None, address: str | None, extra: list[str] | None = None) -> int:
    """`evalcore app`: the dashboard on `db`, served by Streamlit on `address`, 127.0.0.1 unless another is given.

    On POSIX this process becomes the server (os.execve): a SIGTERM or SIGINT sent to `evalcore app`
    reaches Streamlit itself, which stops serving and exits; no child is left holding the port.
    Elsewhere the server runs as a child that is sent the signal this process gets, and waited for."""
    root = app_root()
    env = dict(os.environ)
    if db:
        env["EVALCORE_DB"] = str(store.resolve_db_path(db))
    args = server_args(root, port, address) + (extra or [])
    if os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, args, env)  # does not return
    proc = subprocess.Popen(args, env=env)
    with Forwarding([proc]):
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:  # forwarded already; wait for the server to stop
                continue


def run_group(db: str | None, port: int, address: str | None, processes: int) -> int:
    """`evalcore app --processes N`: N dashboard servers on one store, on ports port..port+N-1, each its own
    process (its own core: one Python process serves pages on one core). They share the store as the CLI
    shares it with a server: DuckDB lets one process at a time open the file, each page run holds it only
    while it queries (a page whose tables are cached never does), and every write is a transaction. This
    process holds the one-server-per-store lock for the group and hands it down (store.GROUP_VAR), records
    the group's pids in it (a refused server names them), waits, and passes on SIGTERM/SIGINT; when one server
    ends, the others are stopped; when this process dies, however (SIGKILL included), the servers end with it
    (die_with_parent). A reverse proxy in front (docs/operations/lab-server.md) must keep each browser on one server: a
    session and its uploads live in one process. A store this process cannot write is served read-only, with no lock."""
    path = store.resolve_db_path(db)
    lock = store.server_lock(path)   # refused here when another server already serves the store
    root = app_root()
    env = {**os.environ, "EVALCORE_DB": str(path), PARENT_VAR: str(os.getpid())}
    fds: tuple[int, ...] = ()
    if lock is not None:
        fds = (store.lock_descriptor(lock),)
        env[store.GROUP_VAR] = str(fds[0])
    procs = [subprocess.Popen(server_args(root, port + i, address), env=env, pass_fds=fds) for i in range(processes)]
    if lock is not None:
        store.record_holders(lock, [os.getpid(), *(proc.pid for proc in procs)])
    print(f"evalcore: {processes} servers on {path}: " + ", ".join(f"http://{address or LOCAL}:{port + i}"
                                                                   for i in range(processes)), flush=True)
    with Forwarding(procs, once=True) as stop:
        while all(proc.poll() is None for proc in procs):
            time.sleep(0.2)
        stop(signal.SIGTERM)   # one server ended (or we were told to stop): the others follow
        codes = [proc.wait() for proc in procs]
        # a server that ended on the signal it was sent stopped as asked
        return max((0 if stop.sent and c in (-signal.SIGTERM, -signal.SIGINT) else abs(c) for c in codes), default=0)
