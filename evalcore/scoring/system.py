"""The system scores a track's run writes: per model and metric, formed anew where its responses changed, from
the statistics computed in the run and those cached before, with the per-item statistics behind them."""
from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore.scoring.batches import pooled_corpus_values
from evalcore.scoring.plan import SENTENCE_MEAN
from evalcore.scoring.stored import cached_matrix


def system_scores(con, ds, tr, data, plan, keys, usable, missing, stats, forks: bool = True) -> tuple[list[dict], list[dict]]:
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
    pooled_values = {} if mean_of_sentences else pooled_corpus_values(plan, data, dues, forks)
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
