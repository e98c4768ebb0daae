"""Stored scores read back: each response's cached statistics, which flavor and tokenizer a dataset's
computed scores used, and the per-response values of a track as the analysis layer reads them."""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from evalcore.core.tokenize import TOKENIZERS
from evalcore.metrics import registry
from evalcore.metrics.registry import get_flavor, pick_tokenizer
from evalcore.scoring.plan import ANY, SENTENCE_MEAN, check_aggregate, keys_by_metric, load_track
from evalcore.store import registered


def cached_stats(con, sig: str, keys: list[str]) -> dict[str, np.ndarray]:
    """The cached statistics of `keys` under a signature (text_key -> stats); keys without any are absent."""
    with registered(con, "_evalcore_keys", pd.DataFrame({"text_key": keys})):
        rows = con.execute("SELECT m.text_key, m.stats FROM metric_scores m JOIN _evalcore_keys k USING (text_key) "
                           "WHERE m.signature = ?", [sig]).fetchall()
    return {k: np.asarray(s, dtype=float) for k, s in rows}



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
                    tokenizer: str | None = None, data: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per-response values of every metric computed for a track under a flavor (and tokenizer):
    columns item_id, model, metric, value. Responses without a value (no reference) are absent.
    `data` is the track as load_track gives it, when the caller has it already."""
    cond, params = computed_filter(con, dataset, flavor, tokenizer)
    sigs = con.execute(f"""
        SELECT DISTINCT name, signature FROM system_scores
        WHERE dataset = ? AND track = ? AND origin = 'computed' AND {cond}
    """, [dataset, track, *params]).fetchall()
    empty = pd.DataFrame(columns=["item_id", "model", "metric", "value"])
    if not sigs:
        return empty
    data = load_track(con, dataset, track) if data is None else data
    keys = keys_by_metric([name for name, _ in sigs], data, registry.of(con))   # imported metrics too
    frames = []
    for name, sig in sigs:
        lookup = pd.DataFrame({"text_key": keys[name], "item_id": data["item_id"], "model": data["model"]})
        with registered(con, "_evalcore_keys", lookup):
            frame = con.execute("""
                SELECT k.item_id, k.model, ? AS metric, m.value FROM _evalcore_keys k
                JOIN metric_scores m ON m.text_key = k.text_key AND m.signature = ? WHERE m.value IS NOT NULL
            """, [name, sig]).df()
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else empty
