"""Processes on this machine: whether one lives (the store's locks, the temp-folder sweep), and a server that ends
with the `evalcore app --processes N` that started it (app.py calls die_with_parent before anything heavy is
imported: here, not in evalcore.cli, whose imports take seconds)."""
from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
import threading
import time

PARENT_VAR = "EVALCORE_GROUP_PARENT"   # the pid of `evalcore app --processes N`, set for the servers it starts
ORPHAN_GRACE = 10.0   # seconds a server whose group parent died has to stop on SIGTERM before it is killed


def alive(pid: int) -> bool:
    """Whether process `pid` exists (one owned by another user counts: signalling it is refused, not unknown)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def alive_on(pid: int | None, host: str | None) -> bool:
    """Whether process `pid` of machine `host` still runs, as far as this machine can tell: another machine's
    (or one with no pid) is taken to (it cannot be checked from here); a zombie is not."""
    try:
        number = int(pid)
    except (TypeError, ValueError):   # None, or a missing pid as pandas reads it (NaN, NA)
        return True
    if host != socket.gethostname():
        return True
    return alive(number) and not zombie(number)


def zombie(pid: int) -> bool:
    """A process that ended and nobody reaped (a killed server's worker, in a container whose first process
    reaps nothing): kill(pid, 0) still finds it, Linux's /proc says Z."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def die_with_parent() -> None:
    """In a server `evalcore app --processes N` started (PARENT_VAR): end when that parent ends, however it ends.
    A parent killed with SIGKILL sends its servers nothing, and they would keep serving, orphaned, holding the
    store's server lock. On Linux the kernel sends SIGTERM at the parent's death (prctl PR_SET_PDEATHSIG);
    everywhere a thread also watches the parent (its pid stops being this process's parent) and, should the server
    not have stopped ORPHAN_GRACE s after the SIGTERM it sends, kills it."""
    try:
        parent = int(os.environ.pop(PARENT_VAR, ""))
    except ValueError:
        return
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)   # 1: PR_SET_PDEATHSIG

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(ORPHAN_GRACE)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="evalcore-parent-watch", daemon=True).start()
