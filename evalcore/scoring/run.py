"""`score`: compute what is missing for the selected tracks, batch by batch, locally (scoring.batches) or on
Ray actors (scoring.ray), cache every response's statistics (scoring.writes) and write the system scores
(scoring.system), letting the store go while a batch computes."""
from __future__ import annotations

from contextlib import nullcontext
from copy import copy
from dataclasses import dataclass, field, replace

import duckdb
import numpy as np
import pandas as pd
from tqdm import tqdm

from evalcore.core.malloc import give_back
from evalcore.core.text import blank as is_blank
from evalcore.metrics import registry
from evalcore.metrics.base import Metric
from evalcore.metrics.neural import NeuralOptions
from evalcore.metrics.registry import get_flavor, pick_tokenizer, resolve_metrics
from evalcore.scoring import ray as distributed
from evalcore.scoring.batches import compute_rows
from evalcore.scoring.pending import cached_keys, copy_rows, distinct_rows, first_of_keys, pending_rows
from evalcore.scoring.plan import (
    ANY,
    CHUNK,
    SENTENCE_MEAN,
    Plan,
    check_aggregate,
    keys_by_metric,
    load_track,
    needs_docs,
    track_documents,
)
from evalcore.scoring.ray import RayOptions
from evalcore.scoring.stored import forget_item_stats, write_item_stats
from evalcore.scoring.system import system_scores
from evalcore.scoring.writes import Appends, clear_failures, row_frames, write_rows
from evalcore.store import Handle, bump_revision, insert_frame, revision, transaction

LET_GO = 2_000  # responses to compute before the CLI lets the store go meanwhile (reopening costs ~20 ms)
WRITE_EVERY = 100_000  # values computed before they are written (a short transaction): memory stays per batch
ATTEMPTS = 3  # tracks scored again when the store changed while let go; the last attempt keeps it


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
    _blank_notes(plan, data, report, label)
    if ref_based and not has_ref.any():
        report.note(f"{label}: {ref_based} unavailable: no item of this track has a reference")
    elif ref_based and not has_ref.all():
        report.note(f"{label}: {ref_based} skip {int((~has_ref).sum())} responses whose items have no reference")
    cached = cached_keys(con, plan, keys)
    missing = {m.name: usable[m.name] & ~pd.Index(keys[m.name]).isin(cached[plan.signatures[m.name]])
               for m in plan.metrics}
    remote = [m for m in plan.metrics if ray is not None and m.scale_out]
    local = [m for m in plan.metrics if m not in remote]
    todo = pending_rows(data, missing, local)
    todo, copies, sources = distinct_rows(todo, keys, local, data)   # the same inputs again are computed once
    fresh = first_of_keys(todo, keys, missing, local)   # the rows whose values are written: each new key once
    far = distinct_rows(pending_rows(data, missing, remote), keys, remote, data)[0]   # a copy's key is its source's
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
            clear_failures(con, plan)
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
            written += write_rows(target, handle, sub, rows, keys, fresh, values, stats, reasons, appends)
            give_back()   # the CLI's raised trim threshold would keep every batch's freed memory

        # no forked helpers beside Ray: its driver's threads (gRPC) are not safe to fork
        compute_rows(plan, data, todo, size, values, stats, bar, on_progress, label, reasons, local,
                     write if batched else None, every=WRITE_EVERY, forks=ray is None)
    bar.close()
    computed_here = todo
    copy_rows(copies, sources, values, stats, reasons)   # a copy's key is its source's: one value for both
    todo = np.concatenate([todo, copies])
    _run_notes(plan, report, label, todo, reasons, stats)   # notes are the local metrics' (judges)
    frames = [] if batched else row_frames(sub, computed_here, keys, fresh, values, stats, reasons)
    if let_go:
        con = handle.con
        if revision(con) != rev:
            # Another process wrote while the store was let go: keep the values (keyed by text and
            # signature, right whatever changed) and score the track again as the store is now.
            if frames:
                with transaction(con):
                    clear_failures(con, sub)
                    written += Appends.checked().write(con, sub, frames)
            report.computed[label] = report.computed.get(label, 0) + written
            return True
    system_rows, per_item = system_scores(con, ds, tr, data, plan, keys, usable, missing, stats, forks=ray is None)
    if not frames and not system_rows:  # nothing new: the store (and its revision) stays as it was
        report.computed[label] = report.computed.get(label, 0) + written
        report.system[label] = 0
        return False
    with transaction(con):
        bump_revision(con, ds)
        if not batched:
            clear_failures(con, sub)
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
        written += write_rows(con, handle, sub, np.arange(len(rows)), {m.name: keys[m.name][rows] for m in metrics},
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


def _blank_notes(plan: Plan, data: pd.DataFrame, report: ScoreReport, label: str) -> None:
    """Per model with responses that are empty or whitespace: how many, scored as what they are (an empty
    answer matches nothing a reference holds), and the pooled metrics that have no value for a model with
    nothing but blanks (no n-gram to count: unavailable, not 0). The other models are scored as usual."""
    blank = data["text"].fillna("").map(is_blank).astype(bool)
    if not blank.any():
        return
    pooled = [m.name for m in plan.metrics if m.pools] if plan.system_aggregate == "corpus" else []
    counts = pd.DataFrame({"model": data["model"], "blank": blank}).groupby("model")["blank"].agg(["sum", "size"])
    for model, (k, n) in counts[counts["sum"] > 0].iterrows():
        note = (f"{label}: {model}: {k:,} of {n:,} responses are empty or whitespace, scored as empty answers "
                "(nothing in them matches a reference)")
        if k == n and pooled:
            note += f"; {', '.join(pooled)} unavailable for it: none of its responses has a word to count"
        report.note(note)


def _run_notes(plan: Plan, report: ScoreReport, label: str, todo: np.ndarray, reasons: dict, stats: dict) -> None:
    """What each metric says about this run's responses (how many judgments gave no value and why, the
    position bias of pairwise judgments)."""
    if len(todo) == 0:
        return
    for m in plan.metrics:
        why, st = reasons.get(m.name), stats.get(m.name)
        for note in m.notes(plan, st[todo] if st is not None else None, why[todo] if why is not None else None):
            report.note(f"{label}: {note}")
