"""Scoring jobs: what an upload needs scored, run in a worker process of its own, recorded in the store.

A job's steps are one `score` call each: (track, flavor, tokenizer, metrics). After an upload the
steps are every lexical configuration the track has been scored with before (so the new model
appears on the leaderboard under each flavor), the default one on a track never scored, and the
model-based metrics when asked. The job updates its row as it goes; pages read the row. The dashboard
starts one worker per job (start); its check (watch) resumes a job whose worker is gone; `evalcore worker`
runs them by hand."""
from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import threading
import time
import traceback
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pandas as pd

from evalcore.core import lazy
from evalcore.core.errors import StoreError
from evalcore.core.processes import alive_on as alive
from evalcore.core.words import count
from evalcore.store import Handle, connect, file_stamp, lease, lock_wait, next_id, transaction
from evalcore.store.transactions import database_path

# What a job's steps run is imported when a job runs (in its worker process): the server imports this module at
# start for its job check (watch), and these took 0.2 s of it (the metric registry, the endpoint client)
generation = lazy.module("evalcore.generation.run")
neural_family = lazy.module("evalcore.metrics.neural")
registry = lazy.module("evalcore.metrics.registry")
scoring = lazy.module("evalcore.scoring")
simulation = lazy.module("evalcore.simulation.run")
tokenize = lazy.module("evalcore.core.tokenize")
if TYPE_CHECKING:
    from evalcore.metrics.neural import NeuralOptions

BATCH = 1_000  # responses per progress step of a job
# attempts: how many times a worker claimed the job (more than one: it was resumed after its worker ended)
COLUMNS = ["job_id", "kind", "dataset", "model", "state", "attempts", "progress", "detail", "created_at", "finished_at",
           "tracks"]


def scoring_steps(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str], *, neural: bool = False) -> list[dict]:
    """What to score on these tracks so a new model has every column the others have."""
    steps = []
    for track in tracks:
        rows = con.execute("""
            SELECT flavor, tokenizer, list(DISTINCT name ORDER BY name) FROM system_scores
            WHERE dataset = ? AND track = ? AND origin = 'computed' AND flavor <> ? GROUP BY ALL ORDER BY 1, 2
        """, [dataset, track, scoring.ANY]).fetchall()
        configs = [(fl, tk, [n for n in names if n in registry.METRICS]) for fl, tk, names in rows] or [("default", None, ["lexical"])]
        for flavor, tokenizer, names in configs:
            if names:
                steps.append({"track": track, "flavor": flavor, "tokenizer": _tokenizer_name(tokenizer),
                              "metrics": names})
        if neural:
            steps.append({"track": track, "flavor": "default", "tokenizer": None, "metrics": ["neural"]})
    return steps


def _tokenizer_name(signature: str | None) -> str | None:
    """The tokenizer a stored signature names (None: the flavor's own)."""
    return next((name for name, tok in tokenize.TOKENIZERS.items() if tok.signature == signature), None)


def create(con: duckdb.DuckDBPyConnection, dataset: str, steps: list[dict], *, model: str | None = None,
           kind: str = "score") -> int:
    job_id = next_id(con, "jobs", "job_id")
    con.execute("INSERT INTO jobs (job_id, kind, dataset, model, steps, state, created_at, pid, host) "
                "VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?)",
                [job_id, kind, dataset, model, json.dumps(steps, ensure_ascii=False), datetime.now(),
                 os.getpid(), socket.gethostname()])
    return int(job_id)


def set_fields(con, job_id: int, **values) -> None:
    """Write some of a job's columns (state, progress, detail...), one short write."""
    cols = ", ".join(f"{k} = ?" for k in values)
    with transaction(con):  # a write like any other (WRITE_LOCK; a full disk is one sentence, store_error)
        con.execute(f"UPDATE jobs SET {cols} WHERE job_id = ?", [*values.values(), job_id])


NICE = 10             # a worker's niceness (`evalcore worker`): with the cores busy, page runs come first
MAX_ATTEMPTS = 3      # claims of one job: a job whose worker ended unfinished this often is marked failed
PROGRESS_EVERY = 2.0  # seconds between progress writes within a step: each write is a commit, and a commit
                      # changes the store's stamp, which every page's cache is keyed on (pages/kit/runtime.data)


def claim(con: duckdb.DuckDBPyConnection, job_id: int) -> bool:
    """Take the job for this process, in one transaction: a queued job, or a running one whose process is
    gone (resumed: the values its worker cached are not computed or written again). False, and nothing
    changed, for a job that is done, failed, or running in a live process (two workers never run one job:
    DuckDB lets one process at a time write, so the read and the update below cannot interleave with
    another process's). A job claimed MAX_ATTEMPTS times already is marked failed, with the reason."""
    with transaction(con):
        row = con.execute("SELECT state, pid, host, coalesce(attempts, 0), detail FROM jobs WHERE job_id = ?",
                          [job_id]).fetchall()
        if not row:
            raise StoreError(f"no job {job_id} in the store; `evalcore jobs` lists them")
        state, pid, host, attempts, detail = row[0]
        if state in ("done", "failed") or (state == "running" and pid != os.getpid() and alive(pid, host)):
            return False
        if state == "running" and attempts >= MAX_ATTEMPTS:
            con.execute("UPDATE jobs SET state = 'failed', finished_at = ?, detail = ? WHERE job_id = ?", [
                datetime.now(), (f"interrupted {attempts} times: its worker process ended before finishing each "
                                 f"time (killed, out of memory, or the machine restarted); last seen: {detail}")[:2000],
                job_id])
            return False
        note = f"resumed after an interruption (attempt {attempts + 1} of {MAX_ATTEMPTS})" if state == "running" else detail
        con.execute("UPDATE jobs SET state = 'running', pid = ?, host = ?, attempts = ?, detail = ? WHERE job_id = ?",
                    [os.getpid(), socket.gethostname(), attempts + 1, note, job_id])
        return True


def run(con: duckdb.DuckDBPyConnection, job_id: int, neural: NeuralOptions | None = None,
        handle: Handle | None = None) -> bool:
    """Claim the job (see claim) and run its steps in order, recording progress per batch (at most every
    PROGRESS_EVERY s within a step); a failure is recorded with its message (the scores of finished steps
    stay: each step is its own transaction). With a `handle` (a worker process), the store is let go while
    values are computed, as the CLI's `score` does. False: the job was not this process's to run."""
    def store():
        return handle.con if handle is not None else con

    def write(skippable: bool = False, **values):
        # a step's progress is skipped while page runs hold the store (the step's end is written anyway):
        # waiting for it took a worker 6.6 of its 10.5 s beside 150 viewers, for 0.6 s of computing
        try:
            with (handle.now(0 if skippable else None) if handle is not None else nullcontext(con)) as c:
                set_fields(c, job_id, **values)
        except StoreError:
            if not skippable:
                raise

    if not claim(store(), job_id):
        return False
    dataset, steps, model = store().execute("SELECT dataset, steps, model FROM jobs WHERE job_id = ?",
                                            [job_id]).fetchall()[0]
    steps = json.loads(steps)
    last = [0.0]
    try:
        for i, step in enumerate(steps):
            if "simulate" in step:   # a chat task's simulated conversations (started from the Chat tasks page)
                outcome = _simulate(store(), handle, step["simulate"], i, len(steps), write)
                if outcome.failed:
                    write(state="failed", finished_at=datetime.now(), detail=outcome.summary()[:2000])
                    return True
                continue
            if "generate" in step:   # an endpoint's replies first; the steps after it score them
                outcome = _generate(store(), handle, step["generate"], i, len(steps), write)
                if outcome.missing:
                    write(state="failed", finished_at=datetime.now(), detail=" ".join(outcome.lines())[:2000])
                    return True
                continue
            where = f"{step['track']} ({', '.join(step['metrics'])}; flavor {step['flavor']})"
            write(progress=i / len(steps), detail=f"step {i + 1} of {len(steps)}: {where}")

            def moved(done, total, label, i=i, where=where):
                if done < total and time.monotonic() - last[0] < PROGRESS_EVERY:
                    return
                last[0] = time.monotonic()
                write(skippable=True, progress=(i + done / max(total, 1)) / len(steps),
                      detail=f"step {i + 1} of {len(steps)}: {where}: {done:,} of {total:,} responses")

            report = scoring.score(store(), dataset=dataset, track=step["track"], metrics=step["metrics"],
                           flavor=step["flavor"], tokenizer=step["tokenizer"], neural=neural, progress=False,
                           on_progress=moved, chunk=BATCH, handle=handle,
                           models=None if model is None else [model])   # an upload's job: its model's responses
            if report.notes:
                write(detail="; ".join(report.notes)[:2000])
        write(state="done", progress=1.0, finished_at=datetime.now(),
              detail=f"{count(len(steps), 'step')} done: " + ", ".join(step_tracks(steps)))
    except Exception as exc:  # recorded for the user; the traceback goes to the server log
        traceback.print_exc()
        write(state="failed", finished_at=datetime.now(), detail=f"{type(exc).__name__}: {exc}"[:2000])
    return True


def step_tracks(steps: list[dict]) -> list[str]:
    """The tracks a job's steps cover, in order, once each (a generation step names its tracks)."""
    found = []
    for step in steps:
        if "simulate" in step:
            found.append(f"chat task {step['simulate']['task']}")
            continue
        found += (step["generate"].get("tracks") or []) if "generate" in step else [step["track"]]
    return list(dict.fromkeys(found))


def _progress(write, i: int, total: int, what):
    """on_progress(done, of) for step i of `total`: its progress written at most every PROGRESS_EVERY s (and at its
    end), worded "step i of total: " + what(done, of) (both written with thousands separators)."""
    last = [0.0]

    def moved(done: int, of: int) -> None:
        if done < of and time.monotonic() - last[0] < PROGRESS_EVERY:
            return
        last[0] = time.monotonic()
        write(skippable=True, progress=(i + done / max(of, 1)) / total,
              detail=f"step {i + 1} of {total}: " + what(f"{done:,}", f"{of:,}"))
    return moved


def _generate(con, handle: Handle | None, params: dict, i: int, total: int, write) -> generation.Outcome:
    """A job's generation step: the replies stored as they come (resumed where a killed worker left them), its
    progress written at most every PROGRESS_EVERY s."""
    moved = _progress(write, i, total, lambda done, of: f"generating {params['model']}: {done} of {of} replies")
    write(progress=i / total, detail=f"step {i + 1} of {total}: generating {params['model']} with endpoint "
                                     f"{params['endpoint']}")
    if handle is None:
        handle = Handle(database_path(con), con)
    return generation.generate(handle, on_progress=moved, **params)


def _simulate(con, handle: Handle | None, params: dict, i: int, total: int, write):
    """A job's simulation step: the task's simulated conversations run (resumed where a killed worker left them),
    the store let go while requests are in flight (a worker's handle), progress at most every PROGRESS_EVERY s."""
    moved = _progress(write, i, total, lambda done, of: f"{done} of {of} simulated conversations")
    write(progress=i / total, detail=f"step {i + 1} of {total}: simulated conversations of chat task {params['task']}")
    return simulation.simulate(con, params["task"], simulators=params.get("simulators"), handle=handle,
                               on_progress=moved)


CHECK_VAR = "EVALCORE_JOB_CHECK"  # seconds between the server's checks for jobs no process runs (default 30)
_CLAIMED: dict[tuple[str, int], "Worker"] = {}  # (store, job) this process started a worker for: never twice
_CLAIM = threading.Lock()
_WATCHING: dict[str, threading.Thread] = {}
_HERE = Path(__file__).resolve().parents[2]   # where `python -m evalcore` finds the package


class Worker:
    """A job's worker process, as the server that started it sees it. A thread waits for it, so its exit is
    reaped (a zombie would keep its pid 'alive'); one that ended with an error (killed, out of memory) is
    let go, so the server's next check (watch) claims the job again: resumed, or failed after MAX_ATTEMPTS."""

    def __init__(self, key: tuple[str, int], proc: subprocess.Popen):
        self.key, self.proc = key, proc
        self._reaper = threading.Thread(target=self._reap, name=f"evalcore-job-{key[1]}", daemon=True)
        self._reaper.start()

    def _reap(self) -> None:
        if self.proc.wait() != 0:
            with _CLAIM:
                if _CLAIMED.get(self.key) is self:
                    del _CLAIMED[self.key]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def is_alive(self) -> bool:
        return self.proc.poll() is None

    def join(self, timeout: float | None = None) -> None:
        self._reaper.join(timeout)


def start(path: str, job_id: int) -> Worker:
    """Run the job in a worker process of its own (`python -m evalcore worker --job N`): its CPU is not the
    page server's (one core for every page, Python's GIL), and it goes on when the page that started it
    is left or closed, or the server is stopped (its own session: a Ctrl-C to the server does not reach
    it). It reports progress through the store. A job this process started already is not started again."""
    key = (os.path.abspath(path), int(job_id))
    with _CLAIM:
        if key in _CLAIMED:
            return _CLAIMED[key]
        proc = subprocess.Popen([sys.executable, "-m", "evalcore", "worker", "--db", key[0], "--job", str(job_id)],
                                cwd=_HERE, stdin=subprocess.DEVNULL, start_new_session=True)
        worker = _CLAIMED[key] = Worker(key, proc)
    return worker


def work(path: str | os.PathLike, job: int | None = None, neural: NeuralOptions | None = None,
         on_wait=None) -> list[tuple[int, str]]:
    """`evalcore worker`: run one job (`job`), or every job no live process runs (queued, or running in a
    process that is gone), on a connection of its own that lets the store go while values are computed.
    (job, state after) for each job looked at; a job another live process runs is left to it.

    Workers of one store run one after another (`<store>.jobs.lock`, an OS lock their process holds while
    it runs; a killed one's goes with it): the page server keeps one core to itself on a two-core machine,
    and two jobs on one track never compute the same values side by side."""
    import fcntl

    try:
        gate = os.open(f"{os.path.abspath(path)}.jobs.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:   # a read-only file system, say: one sentence, never a traceback
        raise StoreError(f"cannot run jobs on {path}: its workers' lock {os.path.basename(path)}.jobs.lock cannot be "
                         f"opened ({exc.strerror}), so no job was run") from None
    try:
        fcntl.flock(gate, fcntl.LOCK_EX)   # waits for the worker before it
        return _work(path, job, neural, on_wait)
    finally:
        os.close(gate)   # the lock with it


def _work(path, job, neural, on_wait) -> list[tuple[int, str]]:
    con = connect(path, wait=lock_wait(), on_wait=on_wait)
    handle = Handle(path, con, lock_wait(), on_wait)
    out = []
    try:
        todo = [job] if job is not None else orphans(con, str(path), everyone=True)
        for j in todo:
            ran = run(handle.con, j, neural or neural_family.NeuralOptions(), handle=handle)
            state = handle.con.execute("SELECT state FROM jobs WHERE job_id = ?", [j]).fetchall()[0][0]
            out.append((j, state if ran else f"not run here ({state})"))
    finally:
        handle.con.close()
    return out


def orphans(con: duckdb.DuckDBPyConnection, path: str, everyone: bool = False) -> list[int]:
    """Jobs no live process runs: queued or running, recorded by this machine, by a process that is gone
    or by this one (a job this process recorded but has not started: the page that recorded it was closed,
    or a process before it had the same pid), and not started by this process already. `everyone`: every
    queued job too, whoever recorded it (`evalcore worker` run by hand)."""
    rows = con.execute("SELECT job_id, state, pid, host FROM jobs WHERE state IN ('queued', 'running') "
                       "ORDER BY job_id").fetchall()
    me, here, store = os.getpid(), socket.gethostname(), os.path.abspath(path)
    with _CLAIM:
        return [int(j) for j, state, pid, host in rows
                if (store, int(j)) not in _CLAIMED and host == here
                and (pid == me or not alive(pid, host) or (everyone and state == "queued"))]


def recover(path: str, wait: float = 0.0, active: list | None = None) -> list[Worker]:
    """Start a worker for every orphaned job of the store (see orphans); the workers started. `active`: filled with
    the (pid, host) of every queued or running job, as the store has them (watch keeps an eye on those)."""
    con = lease(path, wait=wait)
    try:
        if con.read_only:   # a store on a read-only file system: no job can write its scores
            return []
        found = orphans(con, path)
        if active is not None:
            active[:] = con.execute("SELECT pid, host FROM jobs WHERE state IN ('queued', 'running')").fetchall()
    finally:
        con.close()
    return [start(path, job) for job in found]


LOOK_EVERY = 60.0   # seconds: the check looks at the store at least this often, whatever else it sees


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
        # The store is looked at only when something can have changed since the last look: a commit (its files
        # changed), a queued or running job's process gone (or a worker of ours failed), or LOOK_EVERY passed.
        # Looking takes the store (an open and a read, 30-50 ms), which a scoring job's worker and the other page
        # servers then wait for: every second in the load benchmark, two servers' checks held it a tenth of the time.
        def state() -> tuple:   # the store's files, and the jobs this process runs (a failed worker leaves them)
            with _CLAIM:
                return file_stamp(path), frozenset(_CLAIMED)

        seen, active, looked = None, [], float("-inf")
        while not _STOP.is_set():
            if os.path.exists(path):  # a store not created yet has no jobs: not created here
                now = state()   # read before the look: a commit during it is seen next time
                quiet = (now == seen and time.monotonic() - looked < LOOK_EVERY
                         and all(alive(pid, host) for pid, host in active))
                if not quiet:
                    try:
                        recover(path, active=active)
                        # the jobs as the look left them (a worker it started is not a change to look at again)
                        seen, looked = (now[0], state()[1]), time.monotonic()
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


def listing(con: duckdb.DuckDBPyConnection, dataset: str | None = None, limit: int = 50) -> pd.DataFrame:
    """Recent jobs, newest first; a queued or running job whose process is gone shows as interrupted."""
    frame = con.execute("""
        SELECT job_id, kind, dataset, model, state, attempts, progress, detail, created_at, finished_at, steps, pid,
               host FROM jobs WHERE (? IS NULL OR dataset = ?) ORDER BY job_id DESC LIMIT ?""", [dataset, dataset, limit]).df()
    if frame.empty:
        return pd.DataFrame(columns=COLUMNS)
    gone = frame["state"].isin(["queued", "running"]) & ~pd.Series(
        [alive(p, h) for p, h in zip(frame["pid"], frame["host"])], index=frame.index)
    frame.loc[gone, "state"] = "interrupted"
    frame["tracks"] = [", ".join(step_tracks(json.loads(x))) for x in frame["steps"]]
    return frame[COLUMNS]
