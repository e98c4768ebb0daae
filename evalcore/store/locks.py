"""Between processes sharing a store: the wait mark (`<store>.wait`, a waiter asks servers to let the file go)
and the server lock (`<store>.server.lock`, one dashboard server per store, or one group of them)."""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from evalcore.core.errors import StoreError
from evalcore.core.processes import alive
from evalcore.store.paths import resolve_db_path, writable

WAITING_FRESH = 3.0   # seconds a waiter's mark counts (it renews it every retry, 20 times a second)


def waiting(db: Path) -> None:
    """Mark that this process waits for the store's file: `<store>.wait` holds its pid, renewed (and so its
    modification time) while it waits. A hint that other processes' servers read (someone_waits): they stop
    handing out cursors of their open instance, so it closes once their runs end and the waiter gets in.
    Nothing is locked by it."""
    try:
        Path(f"{db}.wait").write_text(str(os.getpid()))
    except OSError:   # a read-only folder: the waiter gets in when the holder's runs happen to pause
        pass


def done_waiting(db: Path) -> None:
    """This process got the file: its mark goes (another waiter's stays; it renews its own anyway)."""
    try:
        mark = Path(f"{db}.wait")
        if mark.read_text() == str(os.getpid()):
            mark.unlink()
    except OSError:
        pass


def someone_waits(db: Path) -> bool:
    """Another process waits for the file now (its mark is fresh and not this process's own)."""
    try:
        mark = Path(f"{db}.wait")
        return time.time() - mark.stat().st_mtime < WAITING_FRESH and mark.read_text() != str(os.getpid())
    except OSError:
        return False


class ServerLockHeld(StoreError):
    """Another dashboard server serves this store."""


_SERVER_LOCKS: dict[str, int] = {}


def server_lock(path: str | os.PathLike | None = None) -> Path | None:
    """Take `<store>.server.lock` (an OS lock, fcntl.flock) for this process's life: one dashboard server
    per store. A second server on the same store is refused with a message naming the processes that hold
    the lock (lock_holders); the lock goes with its holders, however they end (SIGKILL included). CLI commands
    do not take it: they share the store with a running server as before. Taking it again in the holding process
    is a no-op. The servers of `evalcore app --processes N` share their parent's lock (GROUP_VAR): N page-serving
    processes on one store, by intent, and a further server is still refused. The lock file's path; None for a
    store this process cannot write (a read-only file system): its server serves it read-only, and no server can
    write it, so there is nothing to keep apart."""
    import fcntl

    db = Path(os.path.abspath(resolve_db_path(path)))
    lock = Path(f"{db}.server.lock")
    if str(lock) in _SERVER_LOCKS:
        return lock
    group = _group_lock(lock)
    if group is not None:   # one of `evalcore app --processes N`'s servers: the group's lock, inherited
        _SERVER_LOCKS[str(lock)] = group
        return lock
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if db.is_file() and not writable(db):
            return None
        raise StoreError(f"cannot take the server lock {lock}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holders = lock_holders(lock, fd)
        os.close(fd)
        who = (f"pid {holders[0]}" if len(holders) == 1 else f"pids {', '.join(map(str, holders))}" if holders
               else "a process this user cannot see")
        raise ServerLockHeld(f"another dashboard server ({who}) already serves {db}; stop it first, or "
                             f"give this one another store (EVALCORE_DB). Two servers writing one store would "
                             f"take its lock from each other. CLI commands can still use the store.") from None
    _SERVER_LOCKS[str(lock)] = fd
    record_holders(lock, [os.getpid()])
    return lock


def record_holders(lock: Path, pids: list[int]) -> None:
    """Write the processes that hold a server lock this process took into its file, one `pid host` a line: what a
    refused server names where the system cannot say who holds it (lock_holders). A full disk leaves it empty."""
    fd = _SERVER_LOCKS[str(lock)]
    host = socket.gethostname()
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, "".join(f"{pid} {host}\n" for pid in pids).encode(), 0)
    except OSError:
        pass


def lock_holders(lock: Path, mine: int | None = None) -> list[int]:
    """The live processes that hold `lock` open (a server, or the parent and the servers of a group), apart from
    this one: on Linux as the system knows them (/proc/PID/fd), so a group whose parent was killed is named by
    its servers; elsewhere, or where /proc shows nothing, the pids recorded in the file that are still alive."""
    try:
        target = os.stat(lock)
    except OSError:
        return []
    found = set()
    if os.path.isdir("/proc/self/fd"):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                for fd in os.scandir(f"/proc/{entry.name}/fd"):
                    st = os.stat(fd.path)
                    if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
                        found.add(int(entry.name))
                        break
            except OSError:   # gone meanwhile, or another user's
                continue
    if not found:
        try:
            text = os.pread(mine, 4096, 0) if mine is not None else lock.read_bytes()[:4096]
        except OSError:
            text = b""
        host = socket.gethostname()
        for line in text.decode("utf-8", "replace").splitlines():
            pid, _, where = line.strip().partition(" ")
            if pid.isdigit() and where == host and alive(int(pid)):
                found.add(int(pid))
    return sorted(found)


def lock_descriptor(lock: Path) -> int:
    """The open file that holds a server lock this process took (server_lock), to hand down to a group."""
    return _SERVER_LOCKS[str(lock)]


GROUP_VAR = "EVALCORE_SERVER_LOCK_FD"   # set by `evalcore app --processes N` for the servers it starts


def _group_lock(lock: Path) -> int | None:
    """The descriptor of `lock` this process inherited from `evalcore app --processes N` (which holds the
    OS lock on it for the group: an flock belongs to the open file, shared by every process given it), or None."""
    try:
        fd = int(os.environ.get(GROUP_VAR, ""))
        held, here = os.fstat(fd), os.stat(lock)
    except (ValueError, OSError):
        return None
    return fd if (held.st_dev, held.st_ino) == (here.st_dev, here.st_ino) else None
