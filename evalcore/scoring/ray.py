"""`evalcore score --engine ray`: the heavy metrics scored by Ray Data actors.

The rows still missing from the value cache are exported to Parquet, one file per batch, handed to
Ray Data and scored by `map_batches` with a callable class: each actor loads its models once (on its
first batch) and keeps them for the run, `--actors` of them, `--gpus-per-actor` GPUs each. Results
stream back to this process batch by batch; the caller writes each batch in one short transaction,
keyed exactly as local scores are (the plan's signatures and cache keys), so a later local run finds
them and an interrupted run keeps every batch written.

Which metrics go to Ray: those marked `scale_out` (the model-based ones and ABLSTM). The lexical
metrics, METEOR 1.5 and the LLM judges stay local: the lexical ones score faster than the hand-off
costs, METEOR runs one Java process, and a judge's throughput is its server's (its concurrency is
already bounded by --judge-concurrency).

An actor that dies (a crash, an out-of-memory kill) is restarted and its batch retried by Ray, at
most RESTARTS times each, so a model that always crashes fails the run instead of looping.
"""
from __future__ import annotations

import copy
import logging
import os
import tempfile
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from evalcore.metrics.options import RAY_ACTORS, RAY_BATCH, RAY_GPUS_PER_ACTOR, RAY_INSTALL
from evalcore.scoring.plan import compute

RESTARTS = 3   # restarts per actor and retries per batch before the run fails


class EngineUnavailable(ValueError):
    """The engine asked for cannot run here (Ray is not installed, or its workers disagree)."""


@dataclass(frozen=True)
class RayOptions:
    address: str | None = None   # None: a Ray started on this machine for the run (and stopped after)
    actors: int = RAY_ACTORS
    gpus_per_actor: float = RAY_GPUS_PER_ACTOR
    batch_size: int = RAY_BATCH

    def __post_init__(self):
        if self.actors < 1:
            raise ValueError(f"--actors must be at least 1, got {self.actors}")
        if self.gpus_per_actor < 0:
            raise ValueError(f"--gpus-per-actor must be 0 or more, got {self.gpus_per_actor}")
        if self.batch_size < 1:
            raise ValueError(f"the Ray batch size must be at least 1, got {self.batch_size}")


def missing() -> str | None:
    """Why `--engine ray` cannot run here, or None."""
    try:
        import ray.data  # noqa: F401
    except ImportError as exc:
        return f"--engine ray needs Ray Data, which is not installed here ({exc}); install it with: {RAY_INSTALL}"
    return None


def require() -> None:
    why = missing()
    if why:
        raise EngineUnavailable(why)


def shipped(plan, metrics: list, opts: RayOptions) -> object:
    """The plan an actor receives: only the metrics it scores, no per-track memo (each actor makes its
    own on its first batch), no tokenizer (scale-out metrics are not tokenized), and the device its
    resources say: a CPU actor must not use a GPU it did not reserve (Ray leaves them visible), and a
    GPU actor sees its own GPU as the first. The device is in no signature: values are the same."""
    sub = copy.copy(plan)
    sub.metrics = list(metrics)
    sub.signatures = {m.name: plan.signatures[m.name] for m in metrics}
    sub.memo, sub.tokenizer = {}, None
    sub.neural = replace(plan.neural, device="cuda" if opts.gpus_per_actor else "cpu")
    return sub


def signatures(plan) -> dict[str, str]:
    """Each metric's signature as this process computes it (run on a Ray worker before scoring)."""
    return {m.name: str(m.signature(plan)) for m in plan.metrics}


def preflight(plan, opts: RayOptions) -> None:
    """Refuse before any actor starts: when the cluster cannot hold one actor (Ray Data would wait for it
    forever), or when a worker computes other signatures than this machine (other packages or model
    files on a node: its values would be stored under a false name)."""
    import ray

    have = ray.cluster_resources()
    if have.get("CPU", 0) < 1 or have.get("GPU", 0) < opts.gpus_per_actor:
        raise EngineUnavailable(f"the Ray cluster has {have.get('CPU', 0):g} CPUs and {have.get('GPU', 0):g} GPUs: "
                                f"one actor needs 1 CPU and {opts.gpus_per_actor:g} GPUs (--gpus-per-actor)")
    there = ray.get(ray.remote(num_cpus=1, num_gpus=opts.gpus_per_actor or None)(signatures).remote(plan))
    wrong = [n for n, s in there.items() if s != plan.signatures[n]]
    if wrong:
        raise EngineUnavailable(f"a Ray worker computes {wrong[0]} under the signature {there[wrong[0]]!r}, this "
                                f"machine under {plan.signatures[wrong[0]]!r}: install the same packages and "
                                "model files on every node")


class Scorer:
    """The callable class of `map_batches`: one per actor, models loaded once per actor."""

    def __init__(self, plan):
        self.plan = plan

    def __call__(self, batch: pd.DataFrame) -> pd.DataFrame:
        batch = batch.reset_index(drop=True)
        refs = [[str(r) for r in rs] if rs is not None else [] for rs in batch["refs"]]
        why: dict = {}
        result = compute(self.plan, batch["text"].tolist(), refs, batch["last_turn"].tolist(), rows=batch, reasons=why)
        out = {"row": batch["row"].to_numpy()}
        for name, (values, stats) in result.items():
            out[f"v\x1f{name}"] = np.asarray(values, dtype=float)
            for j in range(stats.shape[1]):   # plain columns: no tensor types between Ray and pandas
                out[f"s\x1f{name}\x1f{j}"] = np.asarray(stats[:, j], dtype=float)
            if name in why:
                out[f"r\x1f{name}"] = np.asarray(why[name], dtype=object)
        return pd.DataFrame(out)


def unpack(out: pd.DataFrame, names: list[str]) -> tuple[np.ndarray, dict, dict]:
    """A result batch as (rows, {metric: (values, stats)}, {metric: reasons}), as compute() gives them."""
    result, reasons = {}, {}
    for name in names:
        width = sum(1 for c in out.columns if c.startswith(f"s\x1f{name}\x1f"))
        stats = np.column_stack([out[f"s\x1f{name}\x1f{j}"].to_numpy(dtype=float) for j in range(width)]) \
            if width else np.empty((len(out), 0))
        result[name] = (out[f"v\x1f{name}"].to_numpy(dtype=float), stats)
        if f"r\x1f{name}" in out:
            reasons[name] = out[f"r\x1f{name}"].to_numpy(dtype=object)
    return out["row"].to_numpy(dtype=np.int64), result, reasons


def export(data: pd.DataFrame, todo: np.ndarray, size: int, folder: Path) -> list:
    """The rows `todo` of a track, `size` to a Parquet file in `folder`: one Ray block, one actor call
    each; the files' tables."""
    import pyarrow.parquet as pq

    tables = []
    for n, start in enumerate(range(0, len(todo), size)):
        rows = todo[start:start + size]
        part = data.iloc[rows].reset_index(drop=True)
        part.insert(0, "row", rows.astype(np.int64))
        table = pa.Table.from_pandas(part, preserve_index=False)
        pq.write_table(table, folder / f"batch-{n:06d}.parquet")
        tables.append(table)
    return tables


def start(opts: RayOptions) -> bool:
    """Connect to Ray: --ray-address, else RAY_ADDRESS or a cluster `ray start` began on this machine,
    else a local Ray for this run. True when this call connected (the caller calls stop() after)."""
    require()
    import ray

    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")   # offline: Ray must not report usage
    root = Path(__file__).resolve().parents[2]   # the checkout holding evalcore/scoring/ray.py
    env = {}
    if (root / "pyproject.toml").is_file():   # a source checkout (the README's commands): workers import it
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    ray.init(address=opts.address, include_dashboard=False, logging_level=logging.WARNING,
             log_to_driver=False, runtime_env={"env_vars": env} if env else None)
    return True


def stop() -> None:
    import ray

    ray.shutdown()


def score_rows(plan, metrics: list, data: pd.DataFrame, todo: np.ndarray, opts: RayOptions, on_batch) -> None:
    """Score the rows `todo` of `data` with `metrics` (all scale_out) on Ray actors (Ray connected by
    start(), once per scoring run); after each batch, on_batch(rows, result, reasons) with result as
    compute() gives it."""
    if len(todo) == 0:
        return
    import ray
    from ray.data import DataContext

    names = [m.name for m in metrics]
    batches = None
    try:
        plan = shipped(plan, metrics, opts)
        preflight(plan, opts)
        ctx = DataContext.get_current()
        ctx.enable_progress_bars = False     # the scorer draws its own bar, per batch written
        with tempfile.TemporaryDirectory(prefix="evalcore-ray-") as folder:
            # One block per file, put in Ray's object store from here: no read tasks, which on a small
            # machine would wait for a CPU the actors hold (and a cluster's nodes need no shared disk).
            ds = ray.data.from_arrow(export(data, todo, opts.batch_size, Path(folder)))
            with warnings.catch_warnings():   # max_restarts has no named parameter yet (Ray 2.60)
                warnings.simplefilter("ignore")
                ds = ds.map_batches(
                    Scorer, fn_constructor_kwargs={"plan": plan}, batch_size=None,
                    batch_format="pandas", compute=ray.data.ActorPoolStrategy(size=opts.actors), num_cpus=1,
                    num_gpus=opts.gpus_per_actor or None, max_restarts=RESTARTS, max_task_retries=RESTARTS)
            batches = iter(ds.iter_batches(batch_format="pandas", batch_size=None))
            for out in batches:
                on_batch(*unpack(out, names))
    finally:
        if batches is not None and hasattr(batches, "close"):
            batches.close()   # interrupted: stop the run's actors, not only this loop


def options(args) -> RayOptions | None:
    """--engine ray's options, or None for the local engine; options without --engine ray are refused."""
    if args.engine != "ray":
        given = [f for f, v in (("--ray-address", args.ray_address), ("--actors", args.actors != RayOptions.actors),
                                ("--gpus-per-actor", args.gpus_per_actor), ("--ray-batch-size", args.ray_batch_size != RAY_BATCH))
                 if v]
        if given:
            raise ValueError(f"{', '.join(given)} only apply with --engine ray")
        return None
    return RayOptions(address=args.ray_address, actors=args.actors, gpus_per_actor=args.gpus_per_actor,
                      batch_size=args.ray_batch_size)
