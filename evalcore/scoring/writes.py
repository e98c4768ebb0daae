"""Writing a run's new values into the value cache (metric_scores), with their signatures' descriptions."""
from __future__ import annotations

import json
from contextlib import nullcontext

import numpy as np
import pandas as pd
import pyarrow as pa

from evalcore.metrics.base import TRANSIENT
from evalcore.scoring.plan import Plan
from evalcore.store import Handle, insert_frame, transaction


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


def write_rows(con, handle: Handle | None, plan: Plan, rows: np.ndarray, keys: dict, missing: dict, values: dict,
                stats: dict, reasons: dict | None, appends: Appends) -> int:
    """The values of `rows` (indexes into keys, missing, values, stats and reasons) for the plan's metrics,
    written in one short transaction: on `con`, or on the store taken briefly from a let-go `handle`."""
    frames = row_frames(plan, rows, keys, missing, values, stats, reasons)
    if not frames:
        return 0
    with (nullcontext(con) if con is not None else handle.briefly()) as c, transaction(c):
        return appends.write(c, plan, frames)


def row_frames(plan: Plan, rows: np.ndarray, keys: dict, missing: dict, values: dict, stats: dict,
                reasons: dict | None) -> list[pd.DataFrame]:
    """The value cache's new rows for `rows` (indexes into the other arguments)."""
    return _value_frames(plan, {m.name: keys[m.name][rows] for m in plan.metrics},
                         {m.name: missing[m.name][rows] for m in plan.metrics},
                         {m.name: values[m.name][rows] for m in plan.metrics},
                         {m.name: stats[m.name][rows] if stats.get(m.name) is not None else None for m in plan.metrics},
                         reasons={name: why[rows] for name, why in (reasons or {}).items()})


def clear_failures(con, plan: Plan) -> None:
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
    up which keys are cached and writes each new key once (pending.first_of_keys); while nobody else has written
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
