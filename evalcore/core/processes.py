"""Processes on this machine, as the store's locks and the temp-folder sweep ask about them."""
from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether process `pid` exists (one owned by another user counts: signalling it is refused, not unknown)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
