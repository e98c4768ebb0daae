"""`score`: compute what is missing for the selected tracks, batch by batch, locally or on Ray actors
(scoring.ray), cache every response's statistics and write the system scores, letting the store go while
a batch computes."""
from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import signal
import sys
import threading
from contextlib import nullcontext
from copy import copy
from dataclasses import dataclass, field, replace

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
from tqdm import tqdm

from evalcore.core.malloc import give_back
from evalcore.metrics import registry
from evalcore.metrics.base import TRANSIENT, Metric
from evalcore.metrics.neural import NeuralOptions
from evalcore.metrics.registry import get_flavor, pick_tokenizer, resolve_metrics
from evalcore.scoring import ray as distributed
from evalcore.scoring.plan import (
    ANY,
    CHUNK,
    SENTENCE_MEAN,
    Plan,
    check_aggregate,
    compute,
    keys_by_metric,
    load_track,
    needs_docs,
    track_documents,
)
from evalcore.scoring.ray import RayOptions
from evalcore.scoring.stored import cached_matrix, forget_item_stats, write_item_stats
from evalcore.store import Handle, bump_revision, insert_frame, registered, revision, transaction

LET_GO = 2_000  # responses to compute before the CLI lets the store go meanwhile (reopening costs ~20 ms)
WRITE_EVERY = 100_000  # values computed before they are written (a short transaction): memory stays per batch
ATTEMPTS = 3  # tracks scored again when the store changed while let go; the last attempt keeps it
PROCESSES_VAR = "EVALCORE_SCORING_PROCESSES"
"""Processes that compute a track's batches (default: one per core this process may use, at most
MAX_PROCESSES; 1: this process alone). Only metrics that are pure CPU work (Metric.forks) are computed in
the forked helpers, and only on Linux, where fork shares the loaded track without copying it."""
MAX_PROCESSES = 4
FORK_POOLED_FROM = CHUNK   # responses in a track before its DIST values are computed in helpers too


@dataclass
class ScoreReport:
    computed: dict[str, int] = field(default_factory=dict)   # per track: new per-response scores
    system: dict[str, int] = field(default_factory=dict)     # per track: system scores written
    notes: list[str] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)  # metric -> why it could not run (a path, Java)

    def note(self, text: str) -> None:
        """A note, said once (a track scored again after the store changed says its notes again)."""
        if text not in self.notes:
            self.notes.append(text)

    def render(self) -> str:
        lines = [f"{t}: {n} new response scores, {self.system.get(t, 0)} system scores"
                 for t, n in self.computed.items()]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines) or "nothing to score"


def _cached_keys(con, plan: Plan, keys: dict) -> dict[str, set[str]]:
    """Per signature of the plan's metrics, those of the rows' keys with a cached value (or a lasting reason
    for none: a judge's unparseable answer). Asked for the given keys only (a store of millions of values is
    not read into memory per track), in one read for every metric: each metric's keys are asked of every
    signature, which does no harm (a key is looked up only under its own metric's signature), and the 10
    lexical metrics' took 2.5 s on the 10M store together against 5.8 s one by one."""
    sigs = list(dict.fromkeys(plan.signatures[m.name] for m in plan.metrics))
    kinds = {id(keys[m.name]): keys[m.name] for m in plan.metrics}.values()   # each kind of key once
    asked = pd.unique(np.concatenate([np.asarray(k, dtype=object) for k in kinds]))
    out: dict[str, set[str]] = {sig: set() for sig in sigs}
    with registered(con, "_evalcore_keys", pd.DataFrame({"text_key": asked})):
        for sig, key in con.execute(
                "SELECT m.signature, m.text_key FROM metric_scores m SEMI JOIN _evalcore_keys k USING (text_key) "
                "WHERE m.signature IN (SELECT unnest(?::VARCHAR[])) AND (m.reason IS NULL OR NOT starts_with(m.reason, ?))",
                [sigs, TRANSIENT]).fetchall():
            out[sig].add(key)
    return out



def _tracks(con, dataset: str | None, track: str | None) -> list[tuple[str, str, str | None]]:
    rows = con.execute("""
        SELECT t.dataset, t.track, d.language FROM tracks t JOIN datasets d USING (dataset)
        WHERE (? IS NULL OR t.dataset = ?) AND (? IS NULL OR t.track = ?) ORDER BY 1, 2
    """, [dataset, dataset, track, track]).fetchall()
    if not rows:
        where = " ".join(x for x in (dataset and f"dataset {dataset!r}", track and f"track {track!r}") if x)
        raise ValueError(f"no track to score for {where or 'this store'}")
    return rows


def score(con: duckdb.DuckDBPyConnection, *, metrics: str | list[str] = "lexical", dataset: str | None = None,
          track: str | None = None, flavor: str = "default", tokenizer: str | None = None,
          neural: NeuralOptions | None = None, progress: bool = True, on_progress=None,
          chunk: int | None = None, handle: Handle | None = None, system_aggregate: str = "corpus",
          ray: RayOptions | None = None, models: list[str] | None = None) -> ScoreReport:
    """Compute what is missing for every selected track; write caches and system scores per track.

    on_progress(done, total, label), when given, is called after each batch of `chunk` responses
    (default CHUNK, less for metrics with a smaller batch_size): a job's progress. With a `handle` (the CLI),
    the store is let go while a track's values are computed, so other processes (the dashboard) can
    open it meanwhile; the results are written on the connection taken back (handle.con).
    system_aggregate: a model's system score is its `corpus` value (each metric's corpus rule, as
    today) or the `sentence-mean` of its responses' values (signature suffix SENTENCE_MEAN); both
    can be stored side by side, and readers choose (computed_filter).
    ray: score the scale-out metrics (model-based, ABLSTM) on Ray actors (evalcore.scoring.ray); the
    others stay local. None: everything local. models: only these models' responses (an upload's job: the
    other models' values and system scores stand as they are, and the track's other rows are not read)."""
    check_aggregate(system_aggregate)
    if ray is not None:
        distributed.require()
    infos, fl = resolve_metrics(metrics, registry.of(con)), get_flavor(flavor)
    report = ScoreReport()
    # one Ray for every track (each track's actors load their models once)
    on_ray = ray is not None and any(m.scale_out for m in infos) and distributed.start(ray)
    try:
        for ds, tr, language in _tracks(con, dataset, track):
            for attempt in range(ATTEMPTS):
                con = handle.con if handle else con
                # the last attempt keeps the store: it cannot be changed under it again
                if not _score_one(con, ds, tr, language, infos, fl, tokenizer, neural, report, progress,
                                  on_progress, chunk, handle if attempt < ATTEMPTS - 1 else None, system_aggregate,
                                  ray, models):
                    break
    finally:
        for m in infos:
            m.release()  # one METEOR process per scoring run
        if on_ray:
            distributed.stop()
    return report


def language_note(con, dataset: str, language: str | None, tok_signature: str) -> str:
    """The score report's line on the language a dataset was scored as (it picks the default tokenizer and
    METEOR's mode), where that language came from, and the tokens used."""
    rows = con.execute("SELECT language_source FROM datasets WHERE dataset = ?", [dataset]).fetchall()
    source = rows[0][0] if rows else None
    meteor = "en" if (language or "").lower().startswith("en") else "other"
    if language is None:
        said = "no language (none declared, none detected from the texts), so as a non-English one"
    else:
        said = f"{language} ({'detected from the texts' if source == 'detected' else 'declared'})"
    return f"{dataset}: scored as {said}: tokens {tok_signature}, METEOR -l {meteor}"


def _score_one(con, ds, tr, language, infos, fl, tokenizer, neural, report, progress, on_progress, chunk,
               handle, system_aggregate: str = "corpus", ray: RayOptions | None = None,
               models: list[str] | None = None) -> bool:
    """Score one track; True when the store changed while it was let go (score it again)."""
    data = load_track(con, ds, tr, full=any(m.needs_item for m in infos), models=models)
    if data.empty:
        return False
    tok = pick_tokenizer(fl, language, tokenizer)
    report.note(language_note(con, ds, language, tok.signature))
    opts = replace(neural or NeuralOptions(), lang="en" if (language or "").lower().startswith("en") else "zh")
    for m in infos:   # a metric adds what it needs to the rows (a baseline's text) or options (a model)
        opts = m.prepare(con, data, opts)
    plan = Plan(infos, fl, tok, track_documents(con, ds, tr) if needs_docs(infos, opts) else [], opts,
                system_aggregate)
    for name, reason in plan.unavailable.items():
        report.note(f"{ds}:{tr}: {name} unavailable: {reason}")
        report.unavailable[name] = reason
    if not plan.metrics:
        return False
    return _score_track(con, ds, tr, data, plan, report, progress, on_progress, chunk, handle, ray)


def _score_track(con, ds: str, tr: str, data: pd.DataFrame, plan: Plan, report: ScoreReport, progress: bool,
                 on_progress=None, chunk: int | None = None, handle: Handle | None = None,
                 ray: RayOptions | None = None) -> bool:
    label = f"{ds}:{tr}"
    n = len(data)
    has_ref = data["refs"].map(len).to_numpy() > 0
    keys = keys_by_metric([m.name for m in plan.metrics], data)
    usable = {m.name: (has_ref if m.needs_references else np.ones(n, bool)) for m in plan.metrics}
    ref_based = ", ".join(m.name for m in plan.metrics if m.needs_references)
    if ref_based and not has_ref.any():
        report.note(f"{label}: {ref_based} unavailable: no item of this track has a reference")
    elif ref_based and not has_ref.all():
        report.note(f"{label}: {ref_based} skip {int((~has_ref).sum())} responses whose items have no reference")
    cached = _cached_keys(con, plan, keys)
    missing = {m.name: usable[m.name] & ~pd.Index(keys[m.name]).isin(cached[plan.signatures[m.name]])
               for m in plan.metrics}
    remote = [m for m in plan.metrics if ray is not None and m.scale_out]
    local = [m for m in plan.metrics if m not in remote]
    todo = _todo(data, missing, local)
    todo, copies, sources = _distinct(todo, keys, local, data)   # the same inputs again are computed once
    fresh = _first_of_keys(todo, keys, missing, local)   # the rows whose values are written: each new key once
    far = _distinct(_todo(data, missing, remote), keys, remote, data)[0]   # a copy's key is its source's
    if remote:
        report.note(f"{label}: on Ray ({ray.actors} actors): {', '.join(m.name for m in remote)}"
                    + (f"; here: {', '.join(m.name for m in local)}" if local else ""))
    # Per metric, values and stats of every row computed in this run (NaN elsewhere).
    values = {m.name: np.full(n, np.nan) for m in plan.metrics}
    stats: dict[str, np.ndarray | None] = {m.name: None for m in plan.metrics}
    reasons: dict[str, np.ndarray] = {}   # judge metrics: why a response has no value
    size = min([chunk or CHUNK, *(m.batch_size for m in local if m.batch_size)])
    bar = tqdm(total=len(todo), desc=f"scoring {label}", unit="resp", disable=not progress or len(todo) == 0)
    let_go = handle is not None and len(todo) + len(far) >= LET_GO
    rev = revision(con) if let_go else None
    # A track of up to WRITE_EVERY responses is written in one transaction with its system scores (all or
    # nothing); a larger one (or one scored on Ray) writes its values as they are computed, every WRITE_EVERY
    # (memory stays per batch; an interrupted run leaves them cached, so the next computes only the rest),
    # then its system scores in one transaction.
    batched = len(todo) > WRITE_EVERY or len(far) > 0
    if batched and any(m.retries_failures for m in plan.metrics):
        with transaction(con):   # failed requests are asked again: their old rows make way, before new ones
            _clear_failures(con, plan)
    written = 0
    appends = Appends(con)   # the cache as this run looked it up (nobody else writes while it holds the store)
    with handle.let_go() if let_go else nullcontext():
        target = None if let_go else con   # while let go, each write takes the store briefly
        if remote:  # written batch by batch as they come back: what an interruption leaves stays
            written += _score_on_ray(target, handle, plan, remote, data, far, keys, missing, ray, progress,
                                     on_progress, label)
        sub = copy(plan)
        sub.metrics = local

        def write(rows: np.ndarray) -> None:
            nonlocal written
            written += _write_rows(target, handle, sub, rows, keys, fresh, values, stats, reasons, appends)
            give_back()   # the CLI's raised trim threshold would keep every batch's freed memory

        # no forked helpers beside Ray: its driver's threads (gRPC) are not safe to fork
        _compute_rows(plan, data, todo, size, values, stats, bar, on_progress, label, reasons, local,
                      write if batched else None, forks=ray is None)
    bar.close()
    computed_here = todo
    _copy_rows(copies, sources, values, stats, reasons)   # a copy's key is its source's: one value for both
    todo = np.concatenate([todo, copies])
    _run_notes(plan, report, label, todo, reasons, stats)   # notes are the local metrics' (judges)
    frames = [] if batched else _row_frames(sub, computed_here, keys, fresh, values, stats, reasons)
    if let_go:
        con = handle.con
        if revision(con) != rev:
            # Another process wrote while the store was let go: keep the values (keyed by text and
            # signature, right whatever changed) and score the track again as the store is now.
            if frames:
                with transaction(con):
                    _clear_failures(con, sub)
                    written += Appends.checked().write(con, sub, frames)
            report.computed[label] = report.computed.get(label, 0) + written
            return True
    system_rows, per_item = _system_rows(con, ds, tr, data, plan, keys, usable, missing, stats, forks=ray is None)
    if not frames and not system_rows:  # nothing new: the store (and its revision) stays as it was
        report.computed[label] = report.computed.get(label, 0) + written
        report.system[label] = 0
        return False
    with transaction(con):
        bump_revision(con, ds)
        if not batched:
            _clear_failures(con, sub)
        written += appends.write(con, sub, frames)
        for row in system_rows:
            # a model-based column holds the last configuration scored (its signature says which)
            # (of the same system aggregate: corpus and sentence-mean rows stand side by side)
            con.execute("DELETE FROM system_scores WHERE dataset = ? AND track = ? AND model = ? AND name = ? "
                        "AND origin = 'computed' AND (signature = ? OR flavor = ?) AND ends_with(signature, ?) = ?",
                        [ds, tr, row["model"], row["name"], row["signature"], ANY if row["flavor"] == ANY else None,
                         SENTENCE_MEAN, row["signature"].endswith(SENTENCE_MEAN)])
        if system_rows:
            insert_frame(con, "system_scores", pd.DataFrame(system_rows))
            forget_item_stats(con, ds, tr, [(row["model"], row["signature"]) for row in system_rows])
            write_item_stats(con, ds, tr, per_item)
    report.computed[label] = report.computed.get(label, 0) + written
    report.system[label] = len(system_rows)
    return False


def _todo(data: pd.DataFrame, missing: dict, metrics: list[Metric]) -> np.ndarray:
    """Rows that some of `metrics` has no cached value for, in the order they are scored."""
    if not metrics:
        return np.array([], dtype=np.int64)
    todo = np.flatnonzero(np.logical_or.reduce([missing[m.name] for m in metrics]))
    if any(m.group_by_item for m in metrics):
        # an item's responses in one batch: its references are embedded once for all models
        todo = todo[np.argsort(data["item_id"].to_numpy()[todo], kind="stable")]
    return todo


def _distinct(todo: np.ndarray, keys: dict, metrics: list[Metric],
              data: pd.DataFrame | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows to compute, copies, their sources): of rows whose inputs are the same for every metric (the
    same response to the same references, context and item, as in a store of many repeated answers),
    only the first is computed, in todo's order; each copy takes its source's values after."""
    if len(todo) == 0 or not metrics:
        return todo, todo[:0], todo[:0]
    codes = np.zeros(len(todo), dtype=np.int64)
    inputs = list({id(keys[m.name]): keys[m.name] for m in metrics}.values())   # each kind of cache key once
    if data is not None and "is_baseline" in data:   # pairwise judging: the baseline's own row is not judged
        inputs.append(data["is_baseline"].to_numpy())
    for arr in inputs:
        part, uniques = pd.factorize(arr[todo])
        codes = pd.factorize(codes * len(uniques) + part)[0]
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    dup = np.ones(len(todo), bool)
    dup[first] = False
    return todo[first], todo[dup], todo[first[inverse[dup]]]


def _copy_rows(copies: np.ndarray, sources: np.ndarray, values: dict, stats: dict, reasons: dict) -> None:
    for name in values:
        values[name][copies] = values[name][sources]
        if stats.get(name) is not None:
            stats[name][copies] = stats[name][sources]
        if name in reasons:
            reasons[name][copies] = reasons[name][sources]


def _score_on_ray(con, handle: Handle | None, plan: Plan, metrics: list[Metric], data: pd.DataFrame,
                  todo: np.ndarray, keys: dict, missing: dict, opts: RayOptions, progress: bool, on_progress,
                  label: str) -> int:
    """Score `metrics` on the rows `todo` with Ray actors, writing each batch that comes back in its own
    short transaction (on `con`, or on the store taken briefly from a let-go `handle`); the number of
    values written."""
    bar = tqdm(total=len(todo), desc=f"scoring {label} on Ray", unit="resp", disable=not progress or len(todo) == 0)
    done = written = 0

    sub = copy(plan)
    sub.metrics = metrics

    def on_batch(rows: np.ndarray, result: dict, why: dict) -> None:
        nonlocal done, written
        # the batch's own rows only: work per batch, not per track
        written += _write_rows(con, handle, sub, np.arange(len(rows)), {m.name: keys[m.name][rows] for m in metrics},
                               {m.name: missing[m.name][rows] for m in metrics},
                               {name: vals for name, (vals, _) in result.items()},
                               {name: st for name, (_, st) in result.items()}, why, Appends.checked())
        done += len(rows)
        bar.update(len(rows))
        if on_progress:
            on_progress(done, len(todo), label)

    try:
        distributed.score_rows(plan, metrics, data, todo, opts, on_batch)
    finally:
        bar.close()
    return written


def _compute_rows(plan: Plan, data: pd.DataFrame, todo: np.ndarray, size: int, values: dict, stats: dict, bar,
                  on_progress, label: str, reasons: dict | None = None, metrics: list[Metric] | None = None,
                  write=None, forks: bool = True) -> None:
    """Values and statistics of the rows `todo` for `metrics` (default: the plan's), in batches of
    `size`, into `values` and `stats` (and judge metrics' reasons into `reasons`); `write(rows)`, when
    given, is handed the rows computed since its last call every WRITE_EVERY rows and at the end.
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
            if write is not None and (end - since >= WRITE_EVERY or end == len(todo)):
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


def _value_frames(plan: Plan, keys: dict, missing: dict, values: dict, stats: dict,
                  reasons: dict | None = None) -> list[pd.DataFrame]:
    """The value cache's new rows (one per key; a key cached meanwhile is left out by insert_frame(ignore=True))."""
    frames = []
    for m in plan.metrics:
        idx = np.flatnonzero(missing[m.name])
        idx = idx[~pd.Index(keys[m.name][idx]).duplicated()]   # one value per key
        if len(idx) == 0:
            continue
        why = (reasons or {}).get(m.name)
        frames.append(pd.DataFrame({"signature": plan.signatures[m.name], "text_key": keys[m.name][idx],
                                    "value": values[m.name][idx], "stats": _list_column(stats[m.name][idx]),
                                    "reason": why[idx] if why is not None else None}))
    return frames


def _list_column(mat: np.ndarray):
    """Rows of a matrix as one Arrow list column: no Python object per response (millions of them
    cost gigabytes), and DuckDB reads it as DOUBLE[] directly."""
    if mat.shape[1] == 0:
        return list(mat)
    flat = pa.array(np.ascontiguousarray(mat).ravel(), pa.float64())
    return pd.arrays.ArrowExtensionArray(pa.FixedSizeListArray.from_arrays(flat, mat.shape[1]).cast(pa.list_(pa.float64())))


def _write_rows(con, handle: Handle | None, plan: Plan, rows: np.ndarray, keys: dict, missing: dict, values: dict,
                stats: dict, reasons: dict | None, appends: Appends) -> int:
    """The values of `rows` (indexes into keys, missing, values, stats and reasons) for the plan's metrics,
    written in one short transaction: on `con`, or on the store taken briefly from a let-go `handle`."""
    frames = _row_frames(plan, rows, keys, missing, values, stats, reasons)
    if not frames:
        return 0
    with (nullcontext(con) if con is not None else handle.briefly()) as c, transaction(c):
        return appends.write(c, plan, frames)


def _row_frames(plan: Plan, rows: np.ndarray, keys: dict, missing: dict, values: dict, stats: dict,
                reasons: dict | None) -> list[pd.DataFrame]:
    """The value cache's new rows for `rows` (indexes into the other arguments)."""
    return _value_frames(plan, {m.name: keys[m.name][rows] for m in plan.metrics},
                         {m.name: missing[m.name][rows] for m in plan.metrics},
                         {m.name: values[m.name][rows] for m in plan.metrics},
                         {m.name: stats[m.name][rows] if stats.get(m.name) is not None else None for m in plan.metrics},
                         reasons={name: why[rows] for name, why in (reasons or {}).items()})


def _clear_failures(con, plan: Plan) -> None:
    """Judgments whose request failed are asked again: their old rows make way (once per run, before
    the run writes its own)."""
    for m in plan.metrics:
        if m.retries_failures:
            con.execute("DELETE FROM metric_scores WHERE signature = ? AND starts_with(reason, ?)",
                        [plan.signatures[m.name], TRANSIENT])


def _write_signatures(con, plan: Plan) -> None:
    for m in plan.metrics:
        fl, tk = plan.config(m)
        con.execute("INSERT OR IGNORE INTO metric_signatures VALUES (?, ?, ?)", [
            plan.signatures[m.name], m.name,
            json.dumps({"tokenizer": tk, "flavor": fl, "corpus": m.corpus, "sentence": m.sentence,
                        "description": m.description}, ensure_ascii=False)])


class Appends:
    """Writes a run's new values into the value cache, with their signatures' descriptions. The run looked
    up which keys are cached and writes each new key once (_first_of_keys); while nobody else has written
    to the cache since (its row count and last row id are what this run left: 30 ms to read), a plain
    append is right. Otherwise insert_frame's anti-join leaves out a value cached meanwhile (another
    process, an earlier Ray batch with the same text): it reads every cached key of the signatures, 3-4 s
    per write of 100,000 responses' values on the 10M store (89 million values), a third of a track's
    scoring there."""

    def __init__(self, con=None):
        self.mark = None if con is None else _cache_mark(con)

    @classmethod
    def checked(cls) -> Appends:
        """Every write checked against the cache (Ray's batches, a run whose store changed while let go)."""
        return cls()

    def write(self, con, plan: Plan, frames: list[pd.DataFrame]) -> int:
        """The number of values stored."""
        _write_signatures(con, plan)
        frames = [f for f in frames if len(f)]
        if not frames:
            return 0
        alone = self.mark is not None and _cache_mark(con) == self.mark
        n = insert_frame(con, "metric_scores", pd.concat(frames, ignore_index=True), ignore=not alone)
        # once committed, the rows take the next row ids (not readable before: DuckDB numbers a transaction's
        # own rows apart); once someone else wrote, every write is checked
        self.mark = (self.mark[0] + n, self.mark[1] + n) if alone else None
        return n


def _cache_mark(con) -> tuple[int, int]:
    """What changes when anyone adds or removes a cached value: the row count, and the last row id (an
    append takes the next ones: a delete and as many appends meanwhile move it)."""
    count, last = con.execute("SELECT count(*), max(rowid) FROM metric_scores").fetchall()[0]
    return int(count), -1 if last is None else int(last)


def _first_of_keys(todo: np.ndarray, keys: dict, missing: dict, metrics: list[Metric]) -> dict:
    """Per metric, a mask of the rows in `todo` that are the first (in todo's order) with a key it has no
    cached value for: rows with another response's inputs for one metric but not another (DIST counts
    the text alone, BLEU the text and references) are computed, but each key is written once."""
    out, made = {}, []   # metrics with the same keys and the same cached ones share a mask
    for m in metrics:
        k, miss = keys[m.name], missing[m.name]
        found = next((mask for kk, mm, mask in made if kk is k and np.array_equal(mm, miss)), None)
        if found is None:
            rows = todo[miss[todo]]
            found = np.zeros(len(k), bool)
            found[rows[~pd.Index(k[rows]).duplicated()]] = True
            made.append((k, miss, found))
        out[m.name] = found
    return out


def _run_notes(plan: Plan, report: ScoreReport, label: str, todo: np.ndarray, reasons: dict, stats: dict) -> None:
    """What each metric says about this run's responses (how many judgments gave no value and why, the
    position bias of pairwise judgments)."""
    if len(todo) == 0:
        return
    for m in plan.metrics:
        why, st = reasons.get(m.name), stats.get(m.name)
        for note in m.notes(plan, st[todo] if st is not None else None, why[todo] if why is not None else None):
            report.note(f"{label}: {note}")


def _system_rows(con, ds, tr, data, plan, keys, usable, missing, stats, forks: bool = True) -> tuple[list[dict], list[dict]]:
    """The system scores to write, and the per-item statistics each was formed from (item_stats: what a
    rank's bootstrap resamples) where it has them."""
    # a system score stands only when it was formed from as many responses as the model has now: values
    # cached without one (a Ray run or a let-go run interrupted after writing them) are not "nothing new"
    existing = {(model, sig): n for model, sig, n in con.execute(
        "SELECT model, signature, n FROM system_scores WHERE dataset = ? AND track = ? AND origin = 'computed'",
        [ds, tr]).fetchall()}
    models = data["model"].to_numpy()
    of_model = {model: models == model for model in pd.unique(models)}   # each model's rows, compared once
    rows, per_item = [], []
    mean_of_sentences = plan.system_aggregate == "sentence-mean"
    system_sigs = {m.name: plan.signatures[m.name] + (SENTENCE_MEAN if mean_of_sentences else "")
                   for m in plan.metrics}
    dues = {}   # per metric: (model, its rows) whose system score is formed anew
    for m in plan.metrics:
        dues[m.name] = []
        for model, theirs in of_model.items():
            mine = theirs & usable[m.name]
            if not mine.any():
                continue
            if existing.get((model, system_sigs[m.name])) == int(mine.sum()) and not missing[m.name][mine].any():
                continue  # nothing new for this model: its system score stands
            dues[m.name].append((model, np.flatnonzero(mine)))
    pooled_values = {} if mean_of_sentences else _pooled_values(plan, data, dues, forks)
    for m in plan.metrics:
        sig, system_sig = plan.signatures[m.name], system_sigs[m.name]   # the per-response cache's, the system score's
        pooled = m.pools and not mean_of_sentences
        due = dues[m.name]
        if not due:
            continue
        # responses scored in an earlier run: their statistics come from the cache, in one read per metric
        full = None if pooled else _with_cached(con, sig, keys[m.name], stats[m.name],
                                                np.concatenate([idx for _, idx in due]))
        for model, idx in due:
            mat = None if pooled else full[idx]
            if pooled:
                value = pooled_values[(m.name, model)]
            else:
                value = m.sentence_mean(mat) if mean_of_sentences else m.corpus_value(mat)
            if value is None:
                continue
            fl, tk = plan.config(m)
            rows.append({"dataset": ds, "track": tr, "model": model, "name": m.name, "value": value,
                         "origin": "computed", "signature": system_sig, "source": "evalcore score",
                         "flavor": fl, "tokenizer": tk, "n": int(len(idx))})
            if not pooled and mat.ndim == 2 and mat.shape[1]:
                per_item.append({"model": model, "signature": system_sig, "n": int(len(idx)),
                                 "item_ids": data["item_id"].to_numpy()[idx], "stats": mat})
    return rows, per_item


def _pooled_values(plan: Plan, data: pd.DataFrame, dues: dict, forks: bool) -> dict:
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


def _with_cached(con, sig: str, keys: np.ndarray, computed: np.ndarray | None, rows: np.ndarray) -> np.ndarray:
    """Statistics of every row (NaN where unknown): those computed in this run, and for `rows` computed
    in an earlier one, the cached ones (a response without a value, a judge's failed answer, stays NaN)."""
    gaps = rows if computed is None else rows[np.isnan(computed[rows]).all(axis=1)]
    if not len(gaps):
        return computed
    filled = cached_matrix(con, sig, keys[gaps], None if computed is None else computed.shape[1])
    out = np.full((len(keys), filled.shape[1]), np.nan) if computed is None else computed.copy()
    out[gaps] = filled
    return out
