"""How sure is a model's rank on a track: a paired bootstrap over the track's items.

Each resample draws the track's items with replacement (the same draw for every model, so the
models stay paired) and recomputes every ranked model's corpus value on it from the per-response
statistics that `evalcore score` cached: sums for corpus F1 and BLEU (the same formula as the
system score), means for the other metrics and for human dimensions. The models are ranked in
every resample; the interval is the 2.5th and 97.5th percentile of a model's ranks. Seeded, and
the rank_ci column records B, the seed and what was resampled.

A metric whose corpus value is pooled from the texts (DIST-n pools distinct n-grams over a model's
whole output) cannot be rebuilt from cached statistics per resample: its interval is left blank
with the metric's reason (Metric.no_resample).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore.analysis.humans import per_target_cte
from evalcore.analysis.ties import snap
from evalcore.metrics import registry
from evalcore.metrics.registry import METRICS
from evalcore.scoring import cached_stats, computed_filter, item_stats_rows, keys_by_metric, load_track, stored_item_stats

CHUNK = 50  # resamples per matrix product: bounds memory on 20,000-item tracks
TRACKS_PER_READ = 5  # tracks whose stored statistics are read in one query: 4 reads instead of 20 on a 20-track
                     # dataset; each query's Arrow result (a fifth of a 10M store's statistics of one metric)
                     # is let go once its rows are split out


def competition_ranks(values: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """1 = best; equal values share the better rank ("1, 2, 2, 4"), values equal up to float noise too
    (ties.snap); NaN stays NaN. Ranks along the last axis (rows of a 2-D array are ranked independently)."""
    v = snap(values)
    v = v if higher_is_better else -v
    with np.errstate(invalid="ignore"):
        better = (v[..., None, :] > v[..., :, None]).sum(axis=-1)  # NaN compares False: not better
    return np.where(np.isnan(v), np.nan, 1.0 + better)


def corpus_from_sums(name: str, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Corpus values from summed per-response statistics (rows: resamples). `counts` is how many
    responses each row sums; NaN where there are none. Each metric's own rule (the mean for human
    dimensions)."""
    info = METRICS.get(name)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = info.from_sums(sums, counts) if info else sums[:, 0] / counts
    return np.where(counts > 0, value, np.nan)


def bootstrap_ranks(per_item: dict[str, np.ndarray], name: str, higher_is_better: bool, *,
                    resamples: int = 1000, seed: int = 0) -> dict[str, tuple[float, float]]:
    """per_item: model -> (items x k) statistics on the track's items in one shared order, NaN rows
    where the model has no value. Returns model -> (rank_ci_low, rank_ci_high)."""
    return bootstrap_tracks([(per_item, name, higher_is_better)], resamples=resamples, seed=seed)[0]


def bootstrap_tracks(tracks: list[tuple[dict[str, np.ndarray], str, bool]], *, resamples: int = 1000,
                     seed: int = 0) -> list[dict[str, tuple[float, float]]]:
    """bootstrap_ranks of several tracks, (per_item, name, higher_is_better) each, with the same seed. Tracks
    with as many items draw the same resamples, so each chunk's resample weights (the draws and their counts,
    25 of a chunk's 29 ms at 50,000 items) are made once and multiplied with every such track's statistics:
    the same intervals as one track at a time (tests/analysis/test_rank_ci.py), in one matrix product per chunk for
    all of them. A model's ranks on the 10M store's 20 tracks of 50,000 items (pagedata.boards.model_ranks): 10.6 s
    with one track at a time, 6.7 s sharing the draws, 4.8 s with one product and reads beside the resampling."""
    out: list = [{} for _ in tracks]
    by_size: dict[int, list[int]] = {}
    for j, (per_item, _, _) in enumerate(tracks):
        if per_item:
            by_size.setdefault(next(iter(per_item.values())).shape[0], []).append(j)
    for n_items, members in by_size.items():
        stacked, places = _stacked([tracks[j][0] for j in members])
        ranks = {j: np.empty((resamples, len(tracks[j][0]))) for j in members}
        rng = np.random.default_rng(seed)
        for start in range(0, resamples, CHUNK):
            b = min(CHUNK, resamples - start)
            draw = rng.integers(0, n_items, size=(b, n_items))
            # how often each item is drawn in each resample: a bincount per resample (np.add.at took seconds at
            # 50,000 items; one bincount of the offset draws, 3.4x as long as these)
            weights = np.empty((b, n_items))
            for i in range(b):
                weights[i] = np.bincount(draw[i], minlength=n_items)
            product = weights @ stacked   # every such track at once: 1.5x as fast as a product per track
            for j, (begin, end, cuts) in zip(members, places):
                _, name, higher_is_better = tracks[j]
                sums = np.split(product[:, begin:end], cuts, axis=1)
                values = np.column_stack([corpus_from_sums(name, sums[2 * m], sums[2 * m + 1][:, 0])
                                          for m in range(len(tracks[j][0]))])
                ranks[j][start:start + b] = competition_ranks(values, higher_is_better)
        for j in members:
            for m, model in enumerate(tracks[j][0]):
                col = ranks[j][:, m][~np.isnan(ranks[j][:, m])]
                out[j][model] = ((float(np.floor(np.quantile(col, 0.025))), float(np.ceil(np.quantile(col, 0.975))))
                                 if len(col) else (np.nan, np.nan))
    return out


def _stacked(per_items: list[dict[str, np.ndarray]]) -> tuple[np.ndarray, list[tuple[int, int, np.ndarray]]]:
    """Every track's models' statistics, each followed by its has-a-value column, side by side (one matrix
    product per chunk), filled in place (no second copy of a share's 160 MB at 10 tracks of 50,000 items): the
    matrix, and per track where its columns begin and end and where to split them."""
    widths = [[w for s in per_item.values() for w in (s.shape[1], 1)] for per_item in per_items]
    out = np.empty((next(iter(per_items[0].values())).shape[0], sum(map(sum, widths))))
    places, col = [], 0
    for per_item, w in zip(per_items, widths):
        places.append((col, col + sum(w), np.cumsum(w)[:-1]))
        for s in per_item.values():
            ok = ~np.isnan(s).any(axis=1)
            out[:, col:col + s.shape[1]] = np.where(ok[:, None], s, 0.0)
            out[:, col + s.shape[1]] = ok
            col += s.shape[1] + 1
    return out, places


def describe(resamples: int, seed: int) -> str:
    return f"paired bootstrap over items, B={resamples}, seed={seed}, 95% percentile"


def stored_rows(con, dataset: str, tracks: list[str], name: str, *, flavor: str, tokenizer: str | None) -> dict | None:
    """The item_stats rows of metric `name` on `tracks`, read at once for per_item_stats(stored=...); None
    for a name that is no metric (a human dimension)."""
    if name not in registry.of(con):
        return None
    cond, params = computed_filter(con, dataset, flavor, tokenizer)
    out: dict = {}
    for start in range(0, len(tracks), TRACKS_PER_READ):
        out.update(item_stats_rows(con, dataset, tracks[start:start + TRACKS_PER_READ], [name], cond, params))
    return out


def per_item_stats(con, dataset: str, track: str, name: str, models: list[str], items: list[str], *,
                   flavor: str, tokenizer: str | None, aggregate: str = "mean",
                   stored: dict | None = None) -> dict[str, np.ndarray] | str:
    """model -> (items x k) statistics of `name` in the order of `items`, or the reason there are none.
    `stored`: stored_rows of this and other tracks, when the caller ranks several."""

    position = {item: i for i, item in enumerate(items)}
    known = registry.of(con)   # the built-in metrics and this store's imported ones
    if name not in known:   # a human dimension: per-response score, annotators combined
        rows = con.execute(f"""
            WITH base AS (SELECT target, item_id, dialogue_id, model, dimension, score FROM human_ratings
                          WHERE dataset = ? AND track = ? AND dimension = ? AND target = 'response'),
            {per_target_cte(aggregate, "base")}
            SELECT model, item_id, score FROM per_target""", [dataset, track, name]).df()
        if rows.empty:
            return f"no per-response {name} ratings on this track"
        out = {}
        for m in models:
            arr = np.full((len(items), 1), np.nan)
            mine = rows[(rows["model"] == m) & rows["item_id"].isin(position)]
            arr[[position[i] for i in mine["item_id"]], 0] = mine["score"].to_numpy(float)
            out[m] = arr
        return out
    if known[name].no_resample:
        return known[name].no_resample
    cond, params = computed_filter(con, dataset, flavor, tokenizer)
    sigs = dict(con.execute(f"""SELECT model, signature FROM system_scores WHERE dataset = ? AND track = ?
                                AND name = ? AND origin = 'computed' AND {cond}""",
                            [dataset, track, name, *params]).fetchall())
    # stored at scoring time (item_stats): one row per model; the value cache only for models without one
    asked = list(models)
    out = {m: arr for m, arr in stored_item_stats(con, dataset, track, name, [m for m in models if m in sigs], items,
                                                  cond, params, None if stored is None else stored.get(track, [])).items()
           if not np.isnan(arr).all()}
    models = [m for m in models if m not in out]
    if not any(m in sigs for m in models):
        return _in_order(out, asked) if out else f"no cached per-response {name} statistics (run evalcore score)"
    data = load_track(con, dataset, track)
    data = data[data["model"].isin(models) & data["item_id"].isin(position)].reset_index(drop=True)
    keys = keys_by_metric([name], data, known)[name]
    owners = data["model"].to_numpy()
    # one read of the value cache per signature (the models of a track share one), not one per model:
    # each read scans the signature's values in the whole store, tens of millions of them at scale
    by_sig: dict[str, list[str]] = {}
    for m in models:
        if m in sigs:
            by_sig.setdefault(sigs[m], []).append(m)
    caches = {sig: cached_stats(con, sig, list(dict.fromkeys(keys[np.isin(owners, ms)]))) for sig, ms in by_sig.items()}
    for m in models:
        if m not in sigs:
            continue
        mine = np.flatnonzero(owners == m)
        cached = caches[sigs[m]]
        found = [r for r in mine if keys[r] in cached]
        if not found:   # none of this model's values is cached
            continue
        arr = np.full((len(items), len(cached[keys[found[0]]])), np.nan)
        rows = [position[i] for i in data["item_id"].to_numpy()[found]]
        arr[rows] = np.array([cached[keys[r]] for r in found])
        out[m] = arr
    return _in_order(out, asked) if out else f"no cached per-response {name} statistics (run evalcore score)"


def _in_order(found: dict, models: list[str]) -> dict:
    return {m: found[m] for m in models if m in found}


def rank_frame(values: pd.Series, higher_is_better: bool) -> pd.Series:
    return pd.Series(competition_ranks(values.to_numpy(float), higher_is_better), index=values.index)
