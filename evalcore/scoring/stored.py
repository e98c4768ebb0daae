"""Stored scores read back: each response's cached statistics, which flavor and tokenizer a dataset's
computed scores used, and the per-response values of a track as the analysis layer reads them."""
from __future__ import annotations

import hashlib

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.core.tokenize import TOKENIZERS
from evalcore.metrics import registry
from evalcore.metrics.lexical import Lexical
from evalcore.metrics.registry import get_flavor, pick_tokenizer
from evalcore.scoring.plan import ANY, SENTENCE_MEAN, check_aggregate, keys_by_metric, load_track
from evalcore.store import registered


def cached_stats(con, sig: str, keys: list[str]) -> dict[str, np.ndarray]:
    """The cached statistics of `keys` under a signature (text_key -> stats); keys without any are absent."""
    with registered(con, "_evalcore_keys", pd.DataFrame({"text_key": keys})):
        rows = con.execute("SELECT m.text_key, m.stats FROM metric_scores m JOIN _evalcore_keys k USING (text_key) "
                           "WHERE m.signature = ?", [sig]).fetchall()
    return {k: np.asarray(s, dtype=float) for k, s in rows}



def cached_matrix(con, sig: str, keys, width: int | None = None) -> np.ndarray:
    """The cached statistics of each of `keys` as the rows of a matrix (keys may repeat; NaN rows for keys
    without any), read as one Arrow column: no Python object per response (millions at scale)."""
    with registered(con, "_evalcore_keys", pd.DataFrame({"text_key": keys, "pos": np.arange(len(keys))})):
        # con.sql, not con.execute: DuckDB 2 copies a DB-API result's rows once more to give Arrow
        found = con.sql("SELECT k.pos, m.stats FROM _evalcore_keys k JOIN metric_scores m USING (text_key) "
                        "WHERE m.signature = ? AND m.stats IS NOT NULL", params=[sig]).to_arrow_table()
    lists = found.column("stats").combine_chunks()
    lengths = lists.value_lengths().to_numpy(zero_copy_only=False)
    if width is None:
        width = int(lengths.max()) if len(lengths) else 1
    keep = lengths == width   # a metric's statistics have one width
    out = np.full((len(keys), width), np.nan)
    if keep.any():
        flat = lists.filter(pa.array(keep)).flatten().to_numpy(zero_copy_only=False)
        out[found.column("pos").to_numpy()[keep]] = np.asarray(flat, dtype=float).reshape(-1, width)
    return out


def computed_config(con: duckdb.DuckDBPyConnection, dataset: str, flavor: str,
                    tokenizer: str | None = None) -> tuple[str, str]:
    """(flavor name, tokenizer signature) that the computed scores of a dataset carry for this choice."""
    fl = get_flavor(flavor)
    language = con.execute("SELECT language FROM datasets WHERE dataset = ?", [dataset]).fetchall()
    return fl.name, pick_tokenizer(fl, language[0][0] if language else None, tokenizer).signature


def elsewhere(con: duckdb.DuckDBPyConnection, dataset: str, flavor: str, tokenizer: str | None = None) -> list[str]:
    """When the dataset has no lexical scores under this flavor and tokenizer but has them under others:
    those others, as the options that select them (e.g. '--flavor default --tokenizer jieba')."""
    chosen = computed_config(con, dataset, flavor, tokenizer)
    stored = con.execute("SELECT DISTINCT flavor, tokenizer FROM system_scores WHERE dataset = ? "
                         "AND origin = 'computed' AND flavor <> ? ORDER BY 1, 2", [dataset, ANY]).fetchall()
    if not stored or tuple(chosen) in {tuple(s) for s in stored}:
        return []
    names = {tok.signature: name for name, tok in TOKENIZERS.items()}
    return [f"--flavor {fl} --tokenizer {names.get(tk, tk)}" for fl, tk in stored]


def computed_filter(con: duckdb.DuckDBPyConnection, dataset: str, flavor: str,
                    tokenizer: str | None = None, system_aggregate: str = "corpus") -> tuple[str, list]:
    """SQL condition (and its parameters) on system_scores for the computed rows of this choice:
    the flavor's lexical scores and the model-based scores, which depend on no flavor, aggregated
    to system level as chosen (corpus, or sentence-mean: signatures ending in SENTENCE_MEAN)."""
    check_aggregate(system_aggregate)
    return ("((flavor = ? AND tokenizer = ?) OR flavor = ?) AND ends_with(signature, ?) = ?",
            [*computed_config(con, dataset, flavor, tokenizer), ANY, SENTENCE_MEAN, system_aggregate == "sentence-mean"])


def response_scores(con: duckdb.DuckDBPyConnection, dataset: str, track: str, *, flavor: str = "default",
                    tokenizer: str | None = None, data: pd.DataFrame | None = None,
                    items: list[str] | None = None) -> pd.DataFrame:
    """Per-response values of every metric computed for a track under a flavor (and tokenizer):
    columns item_id, model, metric, value. Responses without a value (no reference) are absent.
    `data` is the track as load_track gives it, when the caller has it already (load_track(items=items)
    when `items` is given: the values of those items only)."""
    cond, params = computed_filter(con, dataset, flavor, tokenizer)
    sigs = con.execute(f"""
        SELECT DISTINCT name, signature FROM system_scores
        WHERE dataset = ? AND track = ? AND origin = 'computed' AND {cond}
    """, [dataset, track, *params]).fetchall()
    empty = pd.DataFrame(columns=["item_id", "model", "metric", "value"])
    if not sigs:
        return empty
    known = registry.of(con)   # imported metrics too
    here = set(pd.unique(data["model"])) if data is not None else {m for (m,) in con.execute(
        "SELECT DISTINCT r.model FROM responses r JOIN items i USING (dataset, item_id) WHERE r.dataset = ? "
        "AND i.track = ?", [dataset, track]).fetchall()}
    frames, covered = stored_values(con, dataset, track, [n for n, _ in sigs if value_of_stats(known.get(n))],
                                     here, known, cond, params, items)
    # the rest through the value cache, keyed by each response's text: a metric without stored per-item
    # statistics, and the models whose system score no longer stands on their responses (or has none)
    rest = [(name, sig) for name, sig in sigs if here - covered.get(name, set())]
    if rest:
        if data is None or ("refs" not in data and any(_reads_item(known.get(name)) for name, _ in rest)):
            # a bare track (load_track(bare=True)) read again with what these metrics' keys are made of
            data = load_track(con, dataset, track, items=items,
                              models=None if data is None else sorted(here))
        keys = keys_by_metric(list(dict.fromkeys(name for name, _ in rest)), data, known)
        for name, sig in rest:
            mine = ~data["model"].isin(covered.get(name, set())).to_numpy()
            lookup = pd.DataFrame({"text_key": keys[name][mine], "item_id": data["item_id"].to_numpy()[mine],
                                   "model": data["model"].to_numpy()[mine]})
            with registered(con, "_evalcore_keys", lookup):
                frames.append(con.execute("""
                    SELECT k.item_id, k.model, ? AS metric, m.value FROM _evalcore_keys k
                    JOIN metric_scores m ON m.text_key = k.text_key AND m.signature = ? WHERE m.value IS NOT NULL
                """, [name, sig]).df())
    return pd.concat(frames, ignore_index=True) if frames else empty


def _reads_item(metric) -> bool:
    """Is a metric's cache key made of its item's references or last turn (plan.metric_keys)?"""
    return metric is None or (not metric.per_item and (metric.needs_context or metric.needs_references))


def value_of_stats(metric) -> bool:
    """Is a response's cached value its metric's sentence value of its statistics (the lexical metrics)?"""
    return metric is not None and type(metric).compute is Lexical.compute


def stored_values(con, dataset: str, track: str, names: list[str], models: set[str], known: dict, cond: str,
                   params: list, items: list[str] | None = None):
    """Per-response values of `names` from the per-item statistics stored at scoring time (item_stats, one
    read for the track): their sentence values, as the value cache holds them, without reading the track's
    texts or joining the value cache (2.6 of 2.9 s for a 50,000-response track on a 1M store). Returns
    the frames of `models` (and of `items`, when given) and, per metric, the models they cover."""
    if not names:
        return [], {}
    rows = item_stats_rows(con, dataset, [track], names, cond, params).get(track, [])
    orders = item_orders(con, {r[1] for r in rows}) if rows else {}
    # the rows of `items` in each order (all of them without), and their ids: made once per order, not per row
    wanted = None if items is None else list(items)
    keep = {k: slice(None) if wanted is None else np.flatnonzero(pd.Index(v).isin(wanted))   # hashed, not sorted
            for k, v in orders.items()}
    ids = {k: pd.array(v, dtype="string")[keep[k]] for k, v in orders.items()}
    frames, covered = [], {}
    for model, key, width, flat, name in rows:
        if key not in orders or model not in models:
            continue
        values = known[name].sentence_values(flat.reshape(-1, width)[keep[key]])
        ok = ~np.isnan(values)
        frames.append(pd.DataFrame({"item_id": ids[key][ok], "model": model,
                                    "metric": name, "value": values[ok]}))
        covered.setdefault(name, set()).add(model)
    return frames, covered


def forget_item_stats(con, dataset: str, track: str, replaced: list[tuple[str, str]]) -> None:
    """Drop the per-item statistics behind the system scores (model, signature) being replaced on a
    track, and those of the same models no stored system score stands on any more (an older
    configuration's signature); derived rows, made again by the next score."""
    if not replaced:
        return
    with registered(con, "_evalcore_replaced", pd.DataFrame(replaced, columns=["model", "signature"])):
        con.execute("""DELETE FROM item_stats s WHERE s.dataset = ? AND s.track = ?
                       AND s.model IN (SELECT model FROM _evalcore_replaced)
                       AND ((s.model, s.signature) IN (SELECT (model, signature) FROM _evalcore_replaced)
                            OR NOT EXISTS (SELECT 1 FROM system_scores ss WHERE ss.dataset = s.dataset
                                           AND ss.track = s.track AND ss.model = s.model
                                           AND ss.signature = s.signature AND ss.n = s.n))""", [dataset, track])


VALUES_PER_ROW = 4096
"""At most this many statistics per item_stats row (whole items): a read of one track then skips the other
tracks' rows instead of decompressing every list (migration 14)."""


def write_item_stats(con, dataset: str, track: str, entries: list[dict]) -> None:
    """Each entry's per-item statistics (model, signature, n, item_ids, stats: n x width), in parts of at
    most VALUES_PER_ROW values; called in the transaction that writes those system scores, after
    forget_item_stats."""
    if not entries:
        return
    orders: dict[str, list[str]] = {}
    heads, flats, lengths = [], [], []
    for e in entries:
        ids = [str(i) for i in e["item_ids"]]
        key = hashlib.md5("\x1f".join(ids).encode("utf-8")).hexdigest()
        orders.setdefault(key, ids)
        width = int(e["stats"].shape[1])
        flat = np.ascontiguousarray(e["stats"], dtype=float).ravel()
        step = max(1, VALUES_PER_ROW // width) * width
        sizes = [min(step, flat.size - start) for start in range(0, flat.size, step)] or [0]
        heads += [(e["model"], e["signature"], int(e["n"]), key, width, part) for part in range(len(sizes))]
        flats.append(flat)
        lengths += sizes
    with registered(con, "_evalcore_orders", pd.DataFrame({"order_key": list(orders), "item_ids": pd.arrays.ArrowExtensionArray(
            pa.array(list(orders.values()), pa.list_(pa.string())))})):
        con.execute("INSERT OR IGNORE INTO item_orders BY NAME SELECT * FROM _evalcore_orders")
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    stats = pa.ListArray.from_arrays(pa.array(offsets), pa.array(np.concatenate(flats)))
    columns = list(zip(*heads))
    frame = pd.DataFrame({"dataset": dataset, "track": track, "model": columns[0], "signature": columns[1],
                          "n": columns[2], "order_key": columns[3], "width": columns[4], "part": columns[5],
                          "stats": pd.arrays.ArrowExtensionArray(stats)})
    with registered(con, "_evalcore_item_stats", frame):
        con.execute("INSERT INTO item_stats BY NAME SELECT * FROM _evalcore_item_stats")


def item_stats_rows(con, dataset: str, tracks: list[str], names: list[str], cond: str, params: list) -> dict:
    """The item_stats rows of the metrics `names` on `tracks` whose computed system score (chosen by
    `cond`) still stands on the row's responses (same signature and n), read in one query and their parts
    joined: track -> [(model, order_key, width, flat statistics, metric)]."""
    rows = con.sql(f"""
        WITH ss AS (SELECT track, model, name, signature, n FROM system_scores WHERE dataset = ?
                    AND list_contains(?, track) AND list_contains(?, name) AND origin = 'computed' AND {cond})
        SELECT s.track, s.model, ss.name, s.order_key, s.width, s.stats FROM item_stats s
        JOIN ss USING (track, model, signature, n) WHERE s.dataset = ?
        ORDER BY s.track, s.model, ss.name, s.part""",
                   params=[dataset, list(tracks), list(names), *params, dataset]).to_arrow_table()   # con.sql: no extra copy
    out: dict[str, list] = {}
    if not rows.num_rows:
        return out
    stats = rows.column("stats").combine_chunks()
    values = stats.flatten().to_numpy(zero_copy_only=False)
    ends = np.cumsum(pc.list_value_length(stats).fill_null(0).to_numpy())
    heads = list(zip(*(rows.column(c).to_pylist() for c in ("track", "model", "name", "order_key", "width"))))
    start = 0
    for j, head in enumerate(heads):
        if j + 1 < len(heads) and heads[j + 1][:3] == head[:3]:
            continue   # the next row is this statistics' next part
        track, model, metric, key, width = head
        out.setdefault(track, []).append((model, key, width, values[start:ends[j]], metric))
        start = ends[j]
    return out


def item_orders(con, keys) -> dict[str, list[str]]:
    """order_key -> the item ids an item_stats row's statistics follow."""
    return {k: ids for k, ids in con.execute("SELECT order_key, item_ids FROM item_orders WHERE list_contains(?, order_key)",
                                             [sorted(set(keys))]).fetchall()}


def stored_item_stats(con, dataset: str, track: str, name: str, models: list[str], items: list[str],
                      cond: str, params: list, rows: list | None = None) -> dict[str, np.ndarray]:
    """model -> (items x width) statistics of `name` from item_stats, in the order of `items` (NaN rows
    for items the model has no value on), for the models whose computed system score (chosen by `cond`)
    still stands on the row's responses (same signature and n); the others are absent. `rows`: the
    track's item_stats_rows when the caller read them already (with other tracks')."""
    if rows is None:
        rows = item_stats_rows(con, dataset, [track], [name], cond, params).get(track, [])
    wanted_models = set(models)
    rows = [r for r in rows if r[0] in wanted_models]
    if not rows:
        return {}
    orders = item_orders(con, {r[1] for r in rows})
    wanted = pd.Index(items)
    places = {k: wanted.get_indexer(ids) for k, ids in orders.items()}
    out = {}
    for model, key, width, flat, _ in rows:
        if key not in places:
            continue
        mat = flat.reshape(-1, width)
        where = places[key]
        arr = np.full((len(items), width), np.nan)
        arr[where[where >= 0]] = mat[where >= 0]
        out[model] = arr
    return out
