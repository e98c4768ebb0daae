"""Scoring jobs: what an upload needs scored, run in the background, recorded in the store.

A job's steps are one `score` call each: (track, flavor, tokenizer, metrics). After an upload the
steps are every lexical configuration the track has been scored with before (so the new model
appears on the leaderboard under each flavor), the default one on a track never scored, and the
model-based metrics when asked. The job updates its row per batch; pages read the row."""
from __future__ import annotations

import atexit
import json
import os
import socket
import sys
import threading
import traceback
from datetime import datetime

import duckdb
import pandas as pd

from evalcore.core.errors import StoreError
from evalcore.core.malloc import give_back
from evalcore.core.tokenize import TOKENIZERS
from evalcore.metrics.neural import NeuralOptions
from evalcore.metrics.registry import METRICS
from evalcore.scoring import ANY, score
from evalcore.store import WRITE_LOCK, lease, lock_wait

BATCH = 1_000  # responses per progress step of a job
COLUMNS = ["job_id", "kind", "dataset", "model", "state", "progress", "detail", "created_at", "finished_at", "tracks"]


def scoring_steps(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str], *, neural: bool = False) -> list[dict]:
    """What to score on these tracks so a new model has every column the others have."""
    steps = []
    for track in tracks:
        rows = con.execute("""
            SELECT flavor, tokenizer, list(DISTINCT name ORDER BY name) FROM system_scores
            WHERE dataset = ? AND track = ? AND origin = 'computed' AND flavor <> ? GROUP BY ALL ORDER BY 1, 2
        """, [dataset, track, ANY]).fetchall()
        configs = [(fl, tk, [n for n in names if n in METRICS]) for fl, tk, names in rows] or [("default", None, ["lexical"])]
        for flavor, tokenizer, names in configs:
            if names:
                steps.append({"track": track, "flavor": flavor, "tokenizer": _tokenizer_name(tokenizer),
                              "metrics": names})
        if neural:
            steps.append({"track": track, "flavor": "default", "tokenizer": None, "metrics": ["neural"]})
    return steps


def _tokenizer_name(signature: str | None) -> str | None:
    """The tokenizer a stored signature names (None: the flavor's own)."""
    return next((name for name, tok in TOKENIZERS.items() if tok.signature == signature), None)


def create(con: duckdb.DuckDBPyConnection, dataset: str, steps: list[dict], *, model: str | None = None,
           kind: str = "score") -> int:
    job_id = con.execute("SELECT coalesce(max(job_id), 0) + 1 FROM jobs").fetchall()[0][0]
    con.execute("INSERT INTO jobs (job_id, kind, dataset, model, steps, state, created_at, pid, host) "
                "VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?)",
                [job_id, kind, dataset, model, json.dumps(steps, ensure_ascii=False), datetime.now(),
                 os.getpid(), socket.gethostname()])
    return int(job_id)


def set_fields(con, job_id: int, **values) -> None:
    """Write some of a job's columns (state, progress, detail...), one short write."""
    cols = ", ".join(f"{k} = ?" for k in values)
    with WRITE_LOCK:  # a write like any other: never beside another transaction of this process
        con.execute(f"UPDATE jobs SET {cols} WHERE job_id = ?", [*values.values(), job_id])


def run(con: duckdb.DuckDBPyConnection, job_id: int, neural: NeuralOptions | None = None) -> None:
    """Run a job's steps in order on this connection, recording progress per batch; a failure is
    recorded with its message (the scores of finished steps stay: each step is its own transaction)."""
    dataset, steps = con.execute("SELECT dataset, steps FROM jobs WHERE job_id = ?", [job_id]).fetchall()[0]
    steps = json.loads(steps)
    set_fields(con, job_id, state="running", pid=os.getpid(), host=socket.gethostname())
    try:
        for i, step in enumerate(steps):
            where = f"{step['track']} ({', '.join(step['metrics'])}; flavor {step['flavor']})"
            set_fields(con, job_id, progress=i / len(steps), detail=f"step {i + 1} of {len(steps)}: {where}")

            def moved(done, total, label, i=i, where=where):
                set_fields(con, job_id, progress=(i + done / max(total, 1)) / len(steps),
                     detail=f"step {i + 1} of {len(steps)}: {where}: {done:,} of {total:,} responses")

            report = score(con, dataset=dataset, track=step["track"], metrics=step["metrics"], flavor=step["flavor"],
                           tokenizer=step["tokenizer"], neural=neural, progress=False, on_progress=moved, chunk=BATCH)
            notes = [n for n in report.notes]
            if notes:
                set_fields(con, job_id, detail="; ".join(notes)[:2000])
        set_fields(con, job_id, state="done", progress=1.0, finished_at=datetime.now(),
             detail=f"{len(steps)} step(s) done: " + ", ".join(dict.fromkeys(s["track"] for s in steps)))
    except Exception as exc:  # recorded for the user; the traceback goes to the server log
        traceback.print_exc()
        set_fields(con, job_id, state="failed", finished_at=datetime.now(), detail=f"{type(exc).__name__}: {exc}"[:2000])


CHECK_VAR = "EVALCORE_JOB_CHECK"  # seconds between the server's checks for jobs no process runs (default 30)
_CLAIMED: dict[tuple[str, int], threading.Thread] = {}  # (store, job) this process runs or ran: never twice
_CLAIM = threading.Lock()
_WATCHING: dict[str, threading.Thread] = {}


def start(path: str, job_id: int, neural: NeuralOptions | None = None) -> threading.Thread:
    """Run the job in a background thread of this process on a cursor of the process's shared store
    instance: it goes on when the page that started it is left or closed. A job this process already
    runs is not started again: its thread is returned."""
    key = (os.path.abspath(path), int(job_id))
    with _CLAIM:
        if key in _CLAIMED:
            return _CLAIMED[key]

        def work():

            con = lease(path, wait=lock_wait())
            try:
                run(con, job_id, neural)
            finally:
                con.close()
                give_back()  # the dashboard lives on: its memory returns near where it was

        worker = _CLAIMED[key] = threading.Thread(target=work, name=f"evalcore-job-{job_id}", daemon=True)
    worker.start()
    return worker


def orphans(con: duckdb.DuckDBPyConnection, path: str) -> list[int]:
    """Jobs no live process runs: queued or running, recorded by this machine, by a process that is gone
    or by this one (a job this process recorded but has not started: the page that recorded it was closed,
    or a process before it had the same pid), and not run by this process already."""
    rows = con.execute("SELECT job_id, pid, host FROM jobs WHERE state IN ('queued', 'running') "
                       "ORDER BY job_id").fetchall()
    me, here, store = os.getpid(), socket.gethostname(), os.path.abspath(path)
    with _CLAIM:
        return [int(j) for j, pid, host in rows
                if (store, int(j)) not in _CLAIMED and host == here and (pid == me or not _alive(pid, host))]


def recover(path: str, neural: NeuralOptions | None = None, wait: float = 0.0) -> list[threading.Thread]:
    """Start every orphaned job of the store (see orphans); the threads started."""
    con = lease(path, wait=wait)
    try:
        found = orphans(con, path)
    finally:
        con.close()
    return [start(path, job, neural) for job in found]


_STOP = threading.Event()


@atexit.register
def _stop_checks() -> None:
    """At interpreter exit, end the checks before Python tears itself down: a daemon thread caught inside
    DuckDB's connect then aborts the whole process (exit 134, seen at the end of a test run)."""
    _STOP.set()
    for thread in list(_WATCHING.values()):
        thread.join(timeout=60)


def watch(path: str, every: float | None = None) -> threading.Thread:
    """The server's check for orphaned jobs: now and every `every` seconds (CHECK_VAR), in a daemon
    thread, once per store and process. A store busy with a command is checked next time."""
    if every is None:
        try:
            every = float(os.environ.get(CHECK_VAR, 30))
        except ValueError:
            every = 30.0

    def loop():
        while not _STOP.is_set():
            if os.path.exists(path):  # a store not created yet has no jobs: not created here
                try:
                    recover(path, NeuralOptions())
                except StoreError as exc:
                    print(f"evalcore: job check skipped: {exc}", file=sys.stderr)
                except Exception:  # the check never dies; the next one tries again
                    traceback.print_exc()
            _STOP.wait(every)

    key = os.path.abspath(path)
    with _CLAIM:
        if key not in _WATCHING:
            _WATCHING[key] = threading.Thread(target=loop, name="evalcore-job-check", daemon=True)
            _WATCHING[key].start()
        return _WATCHING[key]


def _alive(pid: int | None, host: str | None) -> bool:
    if pid is None or pd.isna(pid) or host != socket.gethostname():
        return True  # another machine's job: it cannot be checked from here
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def listing(con: duckdb.DuckDBPyConnection, dataset: str | None = None, limit: int = 50) -> pd.DataFrame:
    """Recent jobs, newest first; a queued or running job whose process is gone shows as interrupted."""
    frame = con.execute("""
        SELECT job_id, kind, dataset, model, state, progress, detail, created_at, finished_at, steps, pid, host
        FROM jobs WHERE (? IS NULL OR dataset = ?) ORDER BY job_id DESC LIMIT ?""", [dataset, dataset, limit]).df()
    if frame.empty:
        return pd.DataFrame(columns=COLUMNS)
    gone = frame["state"].isin(["queued", "running"]) & ~pd.Series(
        [_alive(p, h) for p, h in zip(frame["pid"], frame["host"])], index=frame.index)
    frame.loc[gone, "state"] = "interrupted"
    frame["tracks"] = [", ".join(dict.fromkeys(s["track"] for s in json.loads(x))) for x in frame["steps"]]
    return frame[COLUMNS]
