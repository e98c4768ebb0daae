"""Which rows of a track a run computes: those without a cached value for some metric, each distinct set of
inputs once, and per metric the rows whose new values are written (each new key once)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore.metrics.base import TRANSIENT, Metric
from evalcore.scoring.plan import Plan
from evalcore.store import registered


def cached_keys(con, plan: Plan, keys: dict) -> dict[str, set[str]]:
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


def pending_rows(data: pd.DataFrame, missing: dict, metrics: list[Metric]) -> np.ndarray:
    """Rows that some of `metrics` has no cached value for, in the order they are scored."""
    if not metrics:
        return np.array([], dtype=np.int64)
    todo = np.flatnonzero(np.logical_or.reduce([missing[m.name] for m in metrics]))
    if any(m.group_by_item for m in metrics):
        # an item's responses in one batch: its references are embedded once for all models
        todo = todo[np.argsort(data["item_id"].to_numpy()[todo], kind="stable")]
    return todo


def distinct_rows(todo: np.ndarray, keys: dict, metrics: list[Metric],
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


def copy_rows(copies: np.ndarray, sources: np.ndarray, values: dict, stats: dict, reasons: dict) -> None:
    for name in values:
        values[name][copies] = values[name][sources]
        if stats.get(name) is not None:
            stats[name][copies] = stats[name][sources]
        if name in reasons:
            reasons[name][copies] = reasons[name][sources]


def first_of_keys(todo: np.ndarray, keys: dict, missing: dict, metrics: list[Metric]) -> dict:
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
