"""`import scores`: per-response values of a metric computed elsewhere (a G-Eval run, a GPT-4 judge, a
colleague's metric), columns item_id, model, value.

An external metric then stands beside the built-in ones: its per-response values are cached under
its signature (NAME|external|sig:TEXT) keyed by item and response text, and each model's system value
is the mean of its values, stored for both system aggregates (corpus and sentence-mean are the same
mean here), so leaderboards, correlations at every level, trust, ensembles and ranking read it.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from evalcore.core.errors import ImportRefused, Problem
from evalcore.ingest import lookup
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.checker import Checker
from evalcore.ingest.readers import read_table
from evalcore.metrics.external import External
from evalcore.metrics.registry import BUILTIN
from evalcore.scoring import ANY, SENTENCE_MEAN, item_key

EXTERNAL_SOURCE = "import scores"


@dataclass(frozen=True)
class ExternalValue:
    item_id: str
    model: str
    value: float
    where: str


def external_signature(metric: str, signature: str | None) -> str:
    """What produced the numbers, as the user describes it (the file's sha256 is in the history)."""
    return str(External(metric).signature(text=signature))


def import_scores(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, metric: str,
                  track: str | None = None, higher_is_better: bool | None = None, signature: str | None = None,
                  shown: str | None = None) -> ImportReport:
    table = read_table(path)
    check = Checker(table.file)
    dataset, track = check.option("--dataset", dataset), check.option("--track", track)
    metric = check.option("--metric", metric, what="metric name")   # NFKC: '--metric ＢＬＥＵ４' is BLEU4 (built in)
    signature = check.option("--signature", signature, what="description")
    if not check.require_columns(table.columns, ["item_id", "model", "value"]):
        check.refuse_if_any()
    values = []
    for rec, where in zip(table.records, table.places):
        item_id, model = check.ident(rec, where, "item_id"), check.ident(rec, where, "model")
        value = check.number(rec, where, "value")
        if None not in (item_id, model, value):
            values.append(ExternalValue(item_id, model, value, where))
    batch, notes = external_batch(con, check, values, dataset=dataset, metric=metric, track=track,
                           higher_is_better=higher_is_better, signature=signature,
                           source=f"{EXTERNAL_SOURCE} {Path(shown or table.file).name}")
    batch.shown = shown
    report = ImportReport(table.file, batch.write(con, source=table.file))
    report.tracks = sorted({r["track"] for r in batch.rows.get("system_scores", [])})
    report.notes += [f"read as {table.encoding}", *check.notes(), *notes]
    return report


def external_batch(con: duckdb.DuckDBPyConnection, check: Checker, values: list[ExternalValue], *, dataset: str,
                   metric: str, track: str | None, higher_is_better: bool | None, signature: str | None,
                   source: str, pending_tracks: dict[str, str] | None = None,
                   pending_texts: dict[tuple[str, str], str] | None = None) -> tuple[Batch, list[str]]:
    """The rows that store `values` as external metric `metric` and notes for the report; every problem
    is added to `check` and the file refused when there is any. Also used by importers whose files
    carry judgments (MT-Bench): they write items and responses in the same batch, so those are given as
    pending_tracks (item_id -> track) and pending_texts ((item_id, model) -> text) and count as stored."""

    metric = " ".join(str(metric).split())
    file = check.file
    refuse = lambda field, expected, got: ImportRefused([Problem(file, "", field, expected, got)])  # noqa: E731
    if not metric:
        raise refuse("--metric", "a metric name", "nothing")
    if metric in BUILTIN:
        raise refuse("--metric", "a name that is not a built-in metric (give the external one its own name)",
                     repr(metric))
    pending_tracks, pending_texts = pending_tracks or {}, pending_texts or {}
    tracks = sorted(set(lookup.tracks_of(con, dataset)) | set(pending_tracks.values()))
    if not tracks:
        raise refuse("--dataset", "a dataset in the store (import its items first)", repr(dataset))
    if track is not None and track not in tracks:
        raise refuse("--track", f"a track of dataset {dataset!r}: " + ", ".join(tracks), repr(track))
    if metric in lookup.scales(con, dataset):
        raise refuse("--metric", f"a name that is not a human dimension of {dataset!r}", repr(metric))
    stored = con.execute("SELECT higher_is_better FROM external_metrics WHERE metric = ?", [metric]).fetchall()
    if stored and higher_is_better is not None and bool(stored[0][0]) != higher_is_better:
        way = "higher" if stored[0][0] else "lower"
        raise refuse("--higher-is-better/--lower-is-better", f"the stored direction of {metric!r} ({way} is better)",
                     "the other one")
    better = bool(stored[0][0]) if stored else (True if higher_is_better is None else higher_is_better)
    sig = external_signature(metric, signature)
    item_track = {**lookup.item_tracks(con, dataset), **pending_tracks}
    texts = {(i, m): t for i, m, t in con.execute(
        "SELECT item_id, model, text FROM responses WHERE dataset = ?", [dataset]).fetchall()}
    texts.update(pending_texts)
    have = {(t, m) for t, m in con.execute(
        "SELECT DISTINCT track, model FROM system_scores WHERE dataset = ? AND name = ? AND origin = 'computed'",
        [dataset, metric]).fetchall()}
    cached = dict(con.execute("SELECT text_key, value FROM metric_scores WHERE signature = ?", [sig]).fetchall())
    seen: dict[tuple[str, str], str] = {}
    per_model: dict[tuple[str, str], list[float]] = defaultdict(list)
    notes: list[str] = []
    batch = Batch()
    for v in values:
        tr = item_track.get(v.item_id)
        if tr is None or (track is not None and tr != track):
            where_to = f"track {track!r}" if track else f"dataset {dataset!r}"
            check.add(v.where, "item_id", f"an item of {where_to}", f"{v.item_id!r}, unknown")
            continue
        text = texts.get((v.item_id, v.model))
        if text is None:
            answered = "a response (stored or in this import)" if pending_texts else "a stored response"
            check.add(v.where, "model", f"a model with {answered} to item {v.item_id!r}", repr(v.model))
            continue
        if (v.item_id, v.model) in seen:
            check.add(v.where, "value", "one value per item and model", f"a second one (first at {seen[v.item_id, v.model]})")
            continue
        seen[v.item_id, v.model] = v.where
        if (tr, v.model) in have:
            check.add(v.where, "model", f"a model without {metric!r} values on track {tr!r} (import them under "
                      "another metric name, or set the model's values aside with delete-model)", repr(v.model))
            continue
        key = item_key(v.item_id, text)
        if key in cached and cached[key] != v.value:
            check.add(v.where, "value", f"the value stored for this response under signature {sig!r} "
                      f"({cached[key]:g}); give another --signature", f"{v.value:g}")
            continue
        per_model[tr, v.model].append(v.value)
        if key not in cached:
            cached[key] = v.value
            batch.add("metric_scores", signature=sig, text_key=key, value=v.value, stats=[v.value], reason=None)
    check.refuse_if_any()
    if not values:
        raise refuse("", "at least one row of values", "none")
    batch.add("external_metrics", metric=metric, higher_is_better=better, description=None,
              added_at=datetime.now().replace(microsecond=0))
    batch.add("metric_signatures", signature=sig, metric=metric,
              details=json.dumps({"origin": "external", "tokenizer": ANY, "flavor": ANY, "corpus": "mean",
                                  "sentence": "imported", "source": source}, ensure_ascii=False))
    sizes: dict[tuple[str, str], int] = defaultdict(int)   # responses per (track, model)
    for item_id, model in texts:
        sizes[item_track.get(item_id), model] += 1
    for (tr, model), vals in sorted(per_model.items()):
        mean = sum(vals) / len(vals)
        for suffix in ("", SENTENCE_MEAN):   # the same mean under either system aggregate
            batch.add("system_scores", dataset=dataset, track=tr, model=model, name=metric, value=mean,
                      origin="computed", signature=sig + suffix, source=source, flavor=ANY, tokenizer=ANY,
                      n=len(vals))
        if len(vals) < sizes[tr, model]:
            notes.append(f"{tr}: {model!r} has values for {len(vals):,} of its {sizes[tr, model]:,} responses "
                               "(its system value is their mean)")
    return batch, notes


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_scores(con, args.file, dataset=args.dataset, track=args.track, metric=args.metric,
                         higher_is_better=args.higher_is_better, signature=args.signature)
