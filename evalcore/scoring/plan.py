"""A scoring plan: which metrics run on one track with which flavor, tokenizer and model options, each
metric's signature, the cache keys a value is stored under, and `compute` (values and statistics for a
batch of responses). Knows nothing of where a batch runs: scoring.run runs it here, scoring.ray on actors."""
from __future__ import annotations

import hashlib

import duckdb
import numpy as np
import pandas as pd

from evalcore.core.tokenize import Tokenizer
from evalcore.metrics.base import Batch, Metric
from evalcore.metrics.neural import NeuralOptions
from evalcore.metrics.options import SYSTEM_AGGREGATES
from evalcore.metrics.registry import METRICS, Flavor

CHUNK = 20_000  # responses per batch: bounds memory on large tracks
SENTENCE_MEAN = "|system:sentence-mean"  # a system score's signature suffix: the mean of sentence values
ANY = "any"  # flavor and tokenizer of scores that depend on neither (model-based metrics)


def response_key(text: str, refs: list[str] | None) -> str:
    """Cache key of a response: its text and, for reference-based metrics, its references."""
    joined = "\x1e".join(refs) if refs is not None else ""
    return hashlib.md5((text + "\x1f" + joined).encode("utf-8")).hexdigest()


def context_key(text: str, context: str | None) -> str:
    """Cache key of a response scored against its context (learned metrics)."""
    return hashlib.md5((text + "\x1f\x1d" + (context or "")).encode("utf-8")).hexdigest()


def item_key(item_id: str, text: str) -> str:
    """Cache key of a value that belongs to one item's response (imported, or judged on the whole
    item): the item and the response's text, so a replaced response does not keep the old value."""
    return hashlib.md5(("item\x1f" + item_id + "\x1f" + text).encode("utf-8")).hexdigest()


def metric_keys(info: Metric | None, data: pd.DataFrame) -> list[str]:
    """Each row's cache key for a metric: what its value depends on."""
    if info is not None and info.per_item:
        return [item_key(i, t) for i, t in zip(data["item_id"], data["text"])]
    if info is not None and info.needs_context:
        return [context_key(t, c) for t, c in zip(data["text"], data["last_turn"])]
    if info is None or info.needs_references:
        return [response_key(t, r) for t, r in zip(data["text"], data["refs"])]
    return [response_key(t, None) for t in data["text"]]


def keys_by_metric(names: list[str], data: pd.DataFrame, known: dict[str, Metric] | None = None) -> dict[str, np.ndarray]:
    """Per metric name, its rows' cache keys; metrics whose values depend on the same things share
    one array (hashing a large track once per kind of key, not once per metric). `known`: the metrics
    by name (default: built-in; registry.of(con) adds a store's imported ones)."""
    made: dict[tuple, np.ndarray] = {}
    out = {}
    for name in names:
        info = (METRICS if known is None else known).get(name)
        kind = (False, False, True) if info is None else (info.per_item, info.needs_context, info.needs_references)
        if kind not in made:
            made[kind] = np.array(metric_keys(info, data), dtype=object)
        out[name] = made[kind]
    return out


def load_track(con: duckdb.DuckDBPyConnection, dataset: str, track: str, full: bool = False,
               models: list[str] | None = None, items: list[str] | None = None, bare: bool = False) -> pd.DataFrame:
    """Responses of a track (of `models` and of `items` only, when given) with their references (a list,
    empty when the item has none); `full` adds each item's whole context and grounding (JSON), which judges
    read. An item's references and last turn are one object shared by its responses' rows (ten models' rows
    do not hold ten copies: a 500,000-response track took 1.5 GB). `bare`: item_id, model and text only
    (a table of stored values: the references and last turns took 0.8 of 2.0 s for 550,000 responses)."""
    only = "AND (?::VARCHAR[] IS NULL OR {col} IN (SELECT unnest(?::VARCHAR[])))"   # a semi-join, not a scan per row
    chosen = None if items is None else list(items)
    if bare:
        return _responses(con, dataset, track, models, chosen, only)
    items_frame = con.execute(f"""
        WITH refs AS (
            SELECT item_id, list(text ORDER BY ref_index) AS refs
            FROM item_references WHERE dataset = ? {only.format(col="item_id")} GROUP BY item_id)
        SELECT i.item_id, refs.refs, json_extract_string(i.context, '$[#-1]') AS last_turn
               {", i.context, i.grounding" if full else ""}
        FROM items i LEFT JOIN refs USING (item_id)
        WHERE i.dataset = ? AND i.track = ? {only.format(col="i.item_id")}
    """, [dataset, chosen, chosen, dataset, track, chosen, chosen]).df()
    frame = _responses(con, dataset, track, models, chosen, only)
    items_frame["refs"] = [list(r) if isinstance(r, (list, np.ndarray)) else [] for r in items_frame["refs"]]
    items_frame["last_turn"] = items_frame["last_turn"].fillna("")   # an item without context
    at = pd.Index(items_frame["item_id"]).get_indexer(frame["item_id"])
    for col in items_frame.columns.drop("item_id"):
        frame[col] = items_frame[col].to_numpy(dtype=object)[at] if len(frame) else pd.Series(dtype=object)
    return frame


def _responses(con, dataset: str, track: str, models: list[str] | None, chosen: list[str] | None, only: str):
    return con.execute(f"""
        SELECT r.item_id, r.model, r.text FROM responses r JOIN items i USING (dataset, item_id)
        WHERE r.dataset = ? AND i.track = ? AND (?::VARCHAR[] IS NULL OR list_contains(?::VARCHAR[], r.model))
              {only.format(col="r.item_id")}
        ORDER BY r.model, r.item_id
    """, [dataset, track, models, models, chosen, chosen]).df()


def track_documents(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> list[list[str]]:
    """The references of every item of the track that has any: CIDEr's document-frequency corpus."""
    rows = con.execute("""
        SELECT list(f.text ORDER BY f.ref_index) FROM item_references f JOIN items i USING (dataset, item_id)
        WHERE f.dataset = ? AND i.track = ? GROUP BY f.item_id ORDER BY f.item_id
    """, [dataset, track]).fetchall()
    return [list(r[0]) for r in rows]


def _df_tag(docs: list[list[str]]) -> str:
    digest = hashlib.md5("\x1d".join("\x1e".join(d) for d in docs).encode("utf-8")).hexdigest()[:10]
    return f"df:track-refs-{len(docs)}-{digest}"


class Plan:
    """Metrics, flavor, tokenizer and model options for one track, with each metric's signature.

    Metrics that cannot run here (a missing checkpoint or package) are left out and listed in
    `unavailable` with the reason."""

    def __init__(self, metrics: list[Metric], flavor: Flavor, tokenizer: Tokenizer, docs: list[list[str]],
                 neural: NeuralOptions | None = None, system_aggregate: str = "corpus"):
        self.flavor, self.tokenizer, self.docs = flavor, tokenizer, docs
        self.neural = neural or NeuralOptions()
        self.memo: dict = {}   # metrics' per-track state (BERTScore's idf), made on the first batch
        self.system_aggregate = check_aggregate(system_aggregate)
        self.unavailable = {m.name: why for m in metrics if (why := m.availability(self.neural))}
        self.metrics = [m for m in metrics if m.name not in self.unavailable]
        self.df_tag = _df_tag(docs) if needs_docs(self.metrics, self.neural) else ""
        self.signatures = {m.name: str(m.signature(self)) for m in self.metrics}

    def config(self, m: Metric) -> tuple[str, str]:
        """(flavor, tokenizer) stored with a metric's scores: model-based ones depend on neither."""
        return (self.flavor.name, self.tokenizer.signature) if m.tokenized else (ANY, ANY)


def needs_docs(metrics: list[Metric], neural: NeuralOptions | None) -> bool:
    """CIDEr's document frequencies and BERTScore's idf come from the track's references."""
    return any(m.needs_docs(neural) for m in metrics)


def compute(plan: Plan, hyps: list[str], refs: list[list[str]], contexts: list[str] | None = None,
            rows: pd.DataFrame | None = None, reasons: dict | None = None,
            metrics: list[Metric] | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per metric (the plan's, or `metrics` of them): (values, stats) for each response. Values are NaN
    where a metric cannot apply. Judge metrics read `rows` (each response's item: context, grounding;
    baseline_text for pairwise) and put why a response got no value into `reasons` (metric -> array of
    reason or None)."""
    batch = Batch(plan, hyps, refs, contexts, rows)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for m in plan.metrics if metrics is None else metrics:
        result = m.compute(batch)
        out[m.name] = (result.values, result.stats)
        if reasons is not None and result.reasons is not None:
            reasons[m.name] = result.reasons
    return out


def check_aggregate(name: str) -> str:
    """`name` when it is a known system aggregate (SYSTEM_AGGREGATES), else a ValueError naming them."""
    if name not in SYSTEM_AGGREGATES:
        raise ValueError(f"unknown system aggregate {name!r}; known: {', '.join(SYSTEM_AGGREGATES)}")
    return name
