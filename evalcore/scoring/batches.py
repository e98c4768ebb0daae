"""Computing a track's rows batch by batch: in this process, and on Linux in forked helper processes that
share the loaded track (pure CPU metrics only); the pooled metrics' (DIST) corpus values likewise."""
from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading

import numpy as np
import pandas as pd

from evalcore.metrics.base import Metric
from evalcore.scoring.plan import CHUNK, Plan, compute

PROCESSES_VAR = "EVALCORE_SCORING_PROCESSES"
"""Processes that compute a track's batches (default: one per core this process may use, at most
MAX_PROCESSES; 1: this process alone). Only metrics that are pure CPU work (Metric.forks) are computed in
the forked helpers, and only on Linux, where fork shares the loaded track without copying it."""
MAX_PROCESSES = 4
FORK_POOLED_FROM = CHUNK   # responses in a track before its DIST values are computed in helpers too


def compute_rows(plan: Plan, data: pd.DataFrame, todo: np.ndarray, size: int, values: dict, stats: dict, bar,
                 on_progress, label: str, reasons: dict | None = None, metrics: list[Metric] | None = None,
                 write=None, every: int = 0, forks: bool = True) -> None:
    """Values and statistics of the rows `todo` for `metrics` (default: the plan's), in batches of
    `size`, into `values` and `stats` (and judge metrics' reasons into `reasons`); `write(rows)`, when
    given, is handed the rows computed since its last call every `every` rows and at the end.
    With helper processes (helpers(); `forks` False: none), each round computes one batch here and one in
    each helper."""
    n = len(data)
    since = 0
    chosen = plan.metrics if metrics is None else metrics
    batches = [todo[start:start + size] for start in range(0, len(todo), size)]
    extra = helpers(chosen, len(batches)) if forks else 0
    pool = None
    if extra:
        pool = _fork_helpers(extra, (plan, data, metrics))
    rounds = [batches[first:first + 1 + extra] for first in range(0, len(batches), 1 + extra)]

    def ask(r: int) -> list:   # round r's batches after its first, handed to the helpers
        return [pool.apply_async(_helper_batch, (rows,)) for rows in rounds[r][1:]] if pool and r < len(rounds) else []

    try:
        end = 0
        asked = ask(0)
        for r, group in enumerate(rounds):
            done = [_batch(plan, data, group[0], metrics)] + [a.get() for a in asked]
            asked = ask(r + 1)   # the helpers go on while this process stores and writes this round
            for rows, (result, why) in zip(group, done):
                for name, arr in why.items():
                    if reasons is not None:
                        reasons.setdefault(name, np.full(n, None, dtype=object))[rows] = arr
                for name, (vals, st) in result.items():
                    if stats[name] is None:
                        stats[name] = np.full((n, st.shape[1]), np.nan)
                    values[name][rows] = vals
                    stats[name][rows] = st
                end += len(rows)
            if write is not None and (end - since >= every or end == len(todo)):
                write(todo[since:end])
                since = end
            bar.update(sum(len(rows) for rows in group))
            if on_progress:
                on_progress(end, len(todo), label)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()


_FORKED = None   # (plan, data, metrics) of the track being computed, as the forked helpers inherit it
_FORK_LOCK = threading.Lock()


def _fork_helpers(count: int, work: tuple):
    """`count` helper processes forked with `work` in _FORKED: they share the loaded track, nothing is pickled
    but each batch's rows and results. Under a lock: another thread scoring meanwhile forks its own."""
    global _FORKED
    with _FORK_LOCK:
        _FORKED = work
        try:
            return multiprocessing.get_context("fork").Pool(count, initializer=_helper_start,
                                                            initargs=(os.getpid(),))
        finally:
            _FORKED = None


def helpers(metrics: list[Metric], batches: int) -> int:
    """How many helper processes compute batches beside this one: none for one batch, for metrics that are
    not pure CPU work, or off Linux; else one per core this process may use (EVALCORE_SCORING_PROCESSES) less
    this one. Computing the 10 lexical metrics was 57% of scoring a 100,000-response track (py-spy), on one
    core of two; with a helper a 500,000-response track took 42.0 s instead of 54.3 s."""
    if batches < 2 or not metrics or not all(m.forks for m in metrics) or not sys.platform.startswith("linux"):
        return 0
    asked = os.environ.get(PROCESSES_VAR, "").strip()
    cores = int(asked) if asked.isdigit() and int(asked) > 0 else len(os.sched_getaffinity(0))
    return max(0, min(cores, MAX_PROCESSES, batches) - 1)


def _batch(plan: Plan, data: pd.DataFrame, rows: np.ndarray, metrics: list[Metric] | None):
    why: dict = {}
    result = compute(plan, data["text"].iloc[rows].tolist(), data["refs"].iloc[rows].tolist(),
                     data["last_turn"].iloc[rows].tolist(), rows=data.iloc[rows].reset_index(drop=True), reasons=why,
                     metrics=metrics)
    return result, why


def _helper_start(parent: int) -> None:
    """A helper ends with the process that forked it (a scoring run killed does not leave it waiting)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle; it ends the helpers
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:   # the parent ended before the line above took effect
        os._exit(0)


def _helper_batch(rows: np.ndarray):
    plan, data, metrics = _FORKED
    return _batch(plan, data, rows, metrics)


def pooled_corpus_values(plan: Plan, data: pd.DataFrame, dues: dict, forks: bool) -> dict:
    """(metric, model) -> the corpus value of each due model's responses for the metrics that pool texts
    (DIST): all of a model's responses, encoded again one model at a time, 5 s of a 500,000-response track's
    10 models after its batches, in one process. With helpers (helpers()), the models are shared out
    between forked processes, which inherit the texts."""
    pooled = [m for m in plan.metrics if m.pools and dues[m.name]]
    if not pooled:
        return {}
    tasks: dict = {}   # per model, its (metric, rows): metrics of one model share the memo (its encoding)
    for m in pooled:
        for model, idx in dues[m.name]:
            tasks.setdefault(model, []).append((m, idx))
    work = (plan, data["text"].tolist())
    extra = helpers(pooled, len(tasks)) if forks and len(data) >= FORK_POOLED_FROM else 0
    if extra:
        pool = _fork_helpers(extra + 1, work)
        try:
            done = pool.map(_helper_pooled, list(tasks.values()), chunksize=1)
        finally:
            pool.terminate()
            pool.join()
    else:
        done = [_pooled(work, mine) for mine in tasks.values()]
    return {(m.name, model): value for (model, mine), values in zip(tasks.items(), done)
            for (m, _), value in zip(mine, values)}


def _pooled(work: tuple, mine: list) -> list:
    plan, texts = work
    memo: dict = {}
    return [m.pooled_value(plan, texts, idx, memo) for m, idx in mine]


def _helper_pooled(mine: list) -> list:
    return _pooled(_FORKED, mine)
