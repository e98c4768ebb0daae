"""Keep freed numpy buffers in the process heap (glibc only).

glibc returns large blocks to the OS with munmap and hands out fresh pages for the next one; on
the VMs this project runs on, those page faults cost more than the numpy work itself (the
bootstrap and the lexical engine ran 2-4x slower). Raising the mmap and trim thresholds keeps the
memory for reuse. Called by the CLI and the dashboard, never on plain `import evalcore`.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
_done = False


def tune() -> bool:
    """Apply once; True when glibc accepted both settings."""
    global _done
    if _done or not sys.platform.startswith("linux"):
        return _done
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        ok = libc.mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024) == 1  # glibc's maximum on 64-bit
        ok = libc.mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024) == 1 and ok
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to tune
        return False
    _done = ok
    return ok


def give_back() -> None:
    """Return the heap's free memory to the OS (glibc malloc_trim): after an upload or a scoring job
    in the long-lived dashboard, whose raised trim threshold (above) would otherwise keep it."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
