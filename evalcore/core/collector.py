"""Python's cycle collector in the long-lived dashboard: not scanning again what a server keeps for its life.

A page server's heap is mostly what its first runs create and keep: modules (Streamlit, pandas, plotly, evalcore),
compiled page scripts, cached tables. Python's full collections scan all of it: about 9 a minute per server at
150 users, 140 ms each, every run of that process held meanwhile (bench/load.py, gc.callbacks timed). gc.freeze()
moves the objects alive now to a generation the collector leaves alone; after each of a server's first runs
(FREEZE_RUNS), so what the pages import and cache first is frozen once. Objects frozen stay freed by reference
counting; only cycles among them that become garbage are kept, at most what the first runs left, once."""
from __future__ import annotations

import gc
import threading

FREEZE_RUNS = 50
_runs = 0
_lock = threading.Lock()


def after_run() -> None:
    """Called when a page run ends (app.py): freezes the heap after each of the process's first FREEZE_RUNS runs,
    the garbage found first (the whole heap the first time, the young generations after: what runs just left)."""
    global _runs
    with _lock:
        if _runs >= FREEZE_RUNS:
            return
        _runs += 1
        first = _runs == 1
    gc.collect(2 if first else 1)
    gc.freeze()
