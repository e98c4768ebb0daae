"""The commands that compute: `score` (the metrics a store lacks), `worker` and `jobs` (the scoring jobs the
dashboard queues), and `learned train` (a learned metric trained on a store's dialogues)."""
from __future__ import annotations

import json
import os
import sys
import time

from evalcore.cli.output import emit, on_wait
from evalcore.core.errors import ReadOnlyStore, StoreError
from evalcore.metrics import judge, neural
from evalcore.metrics.learned.train import train_command
from evalcore.metrics.registry import GROUPS
from evalcore.scoring import ray
from evalcore.scoring import score as score_store
from evalcore.services import jobs as scoring_jobs
from evalcore.store import Handle, lock_wait, resolve_db_path, writable
from evalcore.store.endpoints import get as registered


def judge_from_registry(con, args) -> None:
    """--judge-endpoint NAME: the judge's URL, model, key variable and timeout from the registered endpoint;
    its sampling stays the judge flags' (greedy by default), which the judge's signature carries."""
    if args.judge_base_url or args.judge_model:
        raise ValueError("give the judge as --judge-endpoint NAME or as --judge-base-url and --judge-model, not both")
    entry = registered(con, args.judge_endpoint)
    args.judge_base_url, args.judge_model, args.judge_timeout = entry.base_url, entry.model, entry.timeout
    if entry.api_key_env:
        args.judge_api_key_env = entry.api_key_env


def score(con, args) -> int | None:
    start = time.perf_counter()
    if args.judge_endpoint:
        judge_from_registry(con, args)
    opts = neural.options(args, **judge.options(args))
    # The store is let go while values are computed: the dashboard serves pages meanwhile.
    handle = Handle(resolve_db_path(args.db), con, lock_wait(), on_wait)
    try:
        report = score_store(con, metrics=args.metrics, dataset=args.dataset, track=args.track,
                             flavor=args.flavor, tokenizer=args.tokenizer, neural=opts, handle=handle,
                             system_aggregate=args.system_aggregate, ray=ray.options(args))
    finally:
        if handle.con is not con:  # let go and taken back: the new connection is ours to close (running closes con)
            handle.con.close()
    print(report.render())
    print(f"took {time.perf_counter() - start:.1f} s")
    # a metric asked for by name that could not run anywhere (a bad path, no Java) is a failure
    named = [m.strip() for m in args.metrics.split(",") if m.strip() and m.strip() not in GROUPS]
    failed = [m for m in named if m in report.unavailable]
    if failed:
        print(f"error: {', '.join(failed)} could not run (see the notes above)", file=sys.stderr)
        return 1
    return None


def learned(con, args) -> None:
    frame = train_command(con, args)
    if args.format == "json" and len(frame) == 1:   # one model: one object with its figures
        print(json.dumps(json.loads(frame.to_json(orient="records"))[0], indent=2))
    else:
        emit(frame, args.format, 4)


def jobs(con, args) -> None:
    emit(scoring_jobs.listing(con, args.dataset, args.limit).round({"progress": 3}), args.format)


def worker(args) -> int:
    """Opens no store itself: the worker holds the store only to write (jobs.work lets it go meanwhile)."""
    path = resolve_db_path(args.db)
    if not path.exists():
        raise StoreError(f"no store at {path}; give --db the store whose jobs to run")
    if not writable(path):
        raise ReadOnlyStore(f"{path} cannot be written here (a read-only file system, or a file this user may not "
                            "write): a job writes its scores into the store, so none was run")
    if hasattr(os, "nice"):
        os.nice(scoring_jobs.NICE)   # background work: the page servers' runs come first when the cores are busy
    done = scoring_jobs.work(path, args.job, on_wait=on_wait)
    for job, state in done:
        print(f"job {job}: {state}")
    if not done:
        print("no job to run")
    return 0
