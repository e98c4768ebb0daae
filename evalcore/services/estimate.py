"""People-calibrated predictors: each system's mean on a human dimension from a predictor's values on all its
responses (a judge, or a stored metric on the dimension's scale) and people's ratings of a random subset of them,
by PPI++ (evalcore.analysis.ppi.finite_mean), with the people-only interval at the same ratings beside it.

The people's subset must be random, because the estimate's validity rests on it:
- ratings from a rating task that sampled its units at random (stratified: a simple random sample within each
  track's model; active: each unit with its stored inclusion probability) are weighted by 1 / probability, the
  probability scaled by the share of the task's units in that stratum that people have rated so far (units are
  shown in a random order, so the rated ones stay a random part of the drawn ones);
- ratings imported from a file are used only when the user declares them random (`assume_random`), and then as a
  uniform sample of each model's responses on a track; every row says so;
- anything else (a task that sampled where the metrics disagree; a mix) is refused with the reason.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis import judge_values, ppi
from evalcore.core import names
from evalcore.scoring import response_scores

ESTIMATOR = "PPI++ (power-tuned; finite population, inverse-probability weighted; 95% t interval)"
COLUMNS = ["track", "model", "estimate", "lower", "upper", "n_people", "n_predicted", "lam", "people_estimate",
           "people_lower", "people_upper", "gain", "uniform_width", "anytime_lower", "anytime_upper", "rank_low",
           "rank_high", "sampling", "note"]
# What the intervals assume about when people stop rating; the anytime columns are the ones that do not.
FIXED_SIZE = ("lower/upper assume the number of ratings was fixed before looking; to stop when a result looks "
              "settled, read anytime_lower/anytime_upper (a confidence sequence, valid however often it is looked at)")
RANDOM_SAMPLINGS = ("stratified", "active")


class NotRandom(ValueError):
    """The people's ratings are not a sample the estimate can rest on."""


@dataclass(frozen=True)
class Predictor:
    name: str
    signature: str
    values: pd.DataFrame      # track, item_id, model, value


def tracks_of(con, dataset: str, track: str | None) -> list[str]:
    known = [t for t, _ in judge_values.tracks(con, dataset)]
    if track is not None:
        names.require("track", track, known)
        return [track]
    return known


def per_response(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str],
                 name: str) -> tuple[pd.DataFrame, set[str]]:
    """A metric's per-response values on the tracks (track, item_id, model, value; empty when it has none), and
    every metric with per-response values there (what a refusal can name), from one read of each track."""
    frames, known = [], set()
    for t in tracks:
        values = response_scores(con, dataset, t)
        known |= set(values["metric"])
        frames.append(values[values["metric"] == name].assign(track=t))
    values = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["track", "item_id", "model",
                                                                                        "value"])
    return values[["track", "item_id", "model", "value"]], known


def predictor(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str], name: str,
              scale: tuple[float | None, float | None]) -> Predictor:
    """The predictor's per-response values on the tracks; refused when it has none, or when a value lies off the
    dimension's scale (a metric on another scale is not a stand-in for this rating)."""
    values, computed = per_response(con, dataset, tracks, name)
    if values.empty:
        known = sorted(computed)
        raise ValueError(f"{name!r} has no per-response values on {dataset}"
                         + (f" ({', '.join(tracks)})" if len(tracks) < 3 else "")
                         + (f"; computed there: {', '.join(known)}" if known else "; score the dataset first "
                            "(`evalcore score`, or `evalcore score --judge ...` for a judge)"))
    lo, hi = scale
    off = values[(values["value"] < lo) | (values["value"] > hi)] if lo is not None and hi is not None else values[:0]
    if len(off):
        raise ValueError(f"{name!r} gives values from {values['value'].min():g} to {values['value'].max():g}, off the "
                         f"dimension's scale {lo:g}-{hi:g}: a predictor stands in for a rating on the same scale")
    sigs = con.execute("SELECT DISTINCT signature FROM system_scores WHERE dataset = ? AND name = ? AND origin = "
                       "'computed' AND list_contains(?, track) ORDER BY 1", [dataset, name, tracks]).fetchall()
    return Predictor(name, " ; ".join(s for (s,) in sigs), values)


def people(con, dataset: str, tracks: list[str], dimension: str, origin: str | None = None) -> pd.DataFrame:
    """People's ratings of responses on the dimension (only those of `origin`, e.g. 'task:3', when given), one row
    per response: track, item_id, model, y (the mean over its annotators), origins (a list)."""
    return con.execute("""
        SELECT track, item_id, model, avg(score) AS y, list(DISTINCT coalesce(origin, '')) AS origins
        FROM human_ratings WHERE dataset = ? AND list_contains(?, track) AND dimension = ? AND target = 'response'
          AND (? IS NULL OR origin = ?)
        GROUP BY track, item_id, model""", [dataset, tracks, dimension, origin, origin]).df()


def _task_of(origin: str) -> int | None:
    return int(origin[5:]) if origin.startswith("task:") and origin[5:].isdigit() else None


def probabilities(con, dataset: str, rated: pd.DataFrame, population: pd.DataFrame, *,
                  assume_random: bool) -> tuple[pd.Series, pd.Series]:
    """Each rated response's inclusion probability (aligned to `rated`) and a sentence per row on how it was
    sampled; raises NotRandom with the reason where the ratings are not a random sample."""
    origins = sorted({o for os in rated["origins"] for o in os})
    tasks = {o: _task_of(o) for o in origins}
    # an imported rating's origin is its file and row: the files are what the user knows them by
    imported = list(dict.fromkeys(re.sub(r" row \d+.*$", "", o) or "an import" for o, t in tasks.items() if t is None))
    if imported and not assume_random:
        raise NotRandom(f"the ratings come from {', '.join(imported[:3])}, not from a rating task that sampled them at "
                        "random: the estimate needs a random sample. Rate with a task (`evalcore task create`, "
                        "stratified or active sampling), or declare the imported ratings random with --assume-random "
                        "(every figure then says so)")
    ids = [t for t in tasks.values() if t is not None]
    info = {}
    if ids:
        rows = con.execute("SELECT task_id, sampling, mode, coalesce(level, 'response'), dataset FROM tasks "
                           "WHERE list_contains(?, task_id)", [ids]).fetchall()
        info = {r[0]: r[1:] for r in rows}
    for t in ids:
        sampling, mode, level, ds = info.get(t, (None, None, None, None))
        if sampling not in RANDOM_SAMPLINGS or mode != "absolute" or level != "response" or ds != dataset:
            raise NotRandom(f"task {t} sampled its units {'where the metrics disagree' if sampling == 'disagreement' else 'not at random'}"
                            f" ({sampling}, {mode}, {level}): its ratings are not a random sample of the responses")
    if len(ids) > 1 or (ids and imported):
        raise NotRandom("the ratings come from " + ", ".join([f"task {t}" for t in ids] + imported[:2])
                        + ": one random sample is needed (estimate from one task's ratings at a time)")
    size = population.groupby(["track", "model"]).size()
    if not ids:   # declared random: a uniform sample of each (track, model)
        n = rated.groupby(["track", "model"])["y"].transform("size")
        m = [size[(t, mo)] for t, mo in zip(rated["track"], rated["model"])]
        return n / np.asarray(m, float), pd.Series("assumed random (--assume-random): a uniform sample", index=rated.index)
    task = ids[0]
    units = con.execute("SELECT item_id, track, model_a AS model, probability FROM task_units WHERE task_id = ?",
                        [task]).df()
    units["drawn"] = units.groupby(["track", "model"])["item_id"].transform("size")
    merged = rated.merge(units, on=["track", "item_id", "model"], how="left", validate="one_to_one")
    if merged["drawn"].isna().any():
        raise NotRandom(f"some ratings of task {task} are of responses that are not its units")
    merged["rated"] = merged.groupby(["track", "model"])["y"].transform("size")
    m = np.asarray([size[(t, mo)] for t, mo in zip(merged["track"], merged["model"])], float)
    stored = merged["probability"].astype(float)
    base = stored.where(stored.notna(), merged["drawn"] / m)   # a task from before probabilities were stored: uniform
    pi = base * merged["rated"] / merged["drawn"]
    kind = info[task][0]
    return pd.Series(pi.to_numpy(), index=rated.index), pd.Series(f"task {task} ({kind} sampling)", index=rated.index)


def estimate(con: duckdb.DuckDBPyConnection, dataset: str, dimension: str, predictor_name: str, *,
             track: str | None = None, assume_random: bool = False, task: int | None = None,
             alpha: float = 0.05) -> dict:
    """{'rows': COLUMNS frame (a track's rows per model, then 'all tracks' rows when there are several),
    'differences': every pair of models per track, 'predictor', 'signature', 'estimator', 'assumption', 'stopping'}.
    `task`: only that rating task's ratings (where the store holds other ratings of the dimension too)."""
    names.require("dataset", dataset, [d for (d,) in con.execute("SELECT dataset FROM datasets ORDER BY 1").fetchall()])
    scale = con.execute("SELECT scale_min, scale_max FROM dimensions WHERE dataset = ? AND dimension = ?",
                        [dataset, dimension]).fetchone()
    if scale is None:
        known = [d for (d,) in con.execute("SELECT DISTINCT dimension FROM human_ratings WHERE dataset = ? ORDER BY 1",
                                           [dataset]).fetchall()]
        names.require("dimension", dimension, known)
        scale = (None, None)
    tracks = tracks_of(con, dataset, track)
    pred = predictor(con, dataset, tracks, predictor_name, scale)
    rated = people(con, dataset, tracks, dimension, None if task is None else f"task:{task}")
    if rated.empty:
        raise ValueError(f"no one rated {dimension} on {dataset}" + (f" / {track}" if track else "")
                         + ": the predictor cannot be calibrated without people's ratings")
    population = pred.values
    rated = rated.merge(population, on=["track", "item_id", "model"], how="left")
    unvalued = int(rated["value"].isna().sum())
    pi, how = probabilities(con, dataset, rated, population, assume_random=assume_random)
    rated = rated.assign(pi=pi, how=how)
    rows, by_model, diffs = [], {}, []
    for t in tracks:
        here = {}
        for model, units in population[population["track"] == t].groupby("model", sort=True):
            got = rated[(rated["track"] == t) & (rated["model"] == model)]
            f_all = units["value"].to_numpy(float)
            uniform = math.nan
            if unvalued and got["value"].isna().any():
                e = p = ppi.unavailable("people rated responses the predictor has no value on", len(got), len(f_all))
            else:
                args = (got["y"].to_numpy(float), got["value"].to_numpy(float), f_all)
                e = ppi.finite_mean(*args, pi=got["pi"].to_numpy(float), alpha=alpha)
                p = ppi.finite_mean(*args, pi=got["pi"].to_numpy(float), lam=0, alpha=alpha)
                if not e.reason and e.se > 0:   # the same quantile, a uniform sample's standard error
                    quantile = (e.upper - e.estimate) / e.se
                    uniform = 2 * quantile * ppi.uniform_se(*args, pi=got["pi"].to_numpy(float), lam=e.lam)
                elif not e.reason:   # no spread left in the residual: no sample of this size would have any
                    uniform = 0.0
            here[model] = (e, p, got["how"].iloc[0] if len(got) else "no ratings", uniform)
            by_model.setdefault(model, []).append((len(f_all), e, p))
        rows += _rows(t, here, alpha)
        diffs += _differences(t, {m: v[0] for m, v in here.items()}, alpha)
    if len(tracks) > 1:
        whole = {m: (ppi.combine([(k, e) for k, e, _ in parts], alpha=alpha),
                     ppi.combine([(k, p) for k, _, p in parts], alpha=alpha), "strata: the tracks", math.nan)
                 for m, parts in by_model.items() if len(parts) == len(tracks)}
        rows += _rows("all tracks", whole, alpha)
        diffs += _differences("all tracks", {m: v[0] for m, v in whole.items()}, alpha)
    assumption = ("the people's ratings were declared random (--assume-random): the intervals hold only if they are"
                  if assume_random and not any(h.startswith("task") for h in rated["how"]) else
                  "the people's ratings are a random sample drawn by the tool (rating task), weighted by 1/probability")
    frame = pd.DataFrame(rows, columns=COLUMNS)
    lo, hi = scale
    if lo is not None and hi is not None:   # the mean of ratings on lo-hi lies in lo-hi: no interval needs to leave it
        bounds = ["lower", "upper", "people_lower", "people_upper", "anytime_lower", "anytime_upper"]
        frame[bounds] = frame[bounds].clip(lower=lo, upper=hi)
    return {"rows": frame, "differences": pd.DataFrame(diffs, columns=DIFF_COLUMNS),
            "predictor": predictor_name, "signature": pred.signature, "estimator": ESTIMATOR,
            "assumption": assumption, "dimension": dimension, "dataset": dataset, "stopping": FIXED_SIZE}


def _rows(track: str, here: dict, alpha: float) -> list[dict]:
    ranks = ppi.rank_intervals({m: v[0] for m, v in here.items()}, alpha=alpha)
    out = []
    for model, (e, p, how, uniform) in here.items():
        note = e.reason
        if not note and e.n == e.big_n:
            note = "people rated every response: the estimate is their mean"
        gain = p.width / e.width if e.width > 0 and not (e.reason or p.reason) else math.nan
        low, high = ranks.get(model, (None, None))
        # the sequence is for independent draws: the finite population's factor is taken back out (cautious)
        iid_se = e.se / math.sqrt(1 - e.n / e.big_n) if e.big_n > e.n else math.nan
        anytime = ppi.anytime_half_width(iid_se, e.n, alpha=alpha) if not e.reason else math.nan
        # never narrower than the fixed-size interval: at a few heavily weighted ratings the t quantile is the wider
        anytime = max(anytime, e.upper - e.estimate) if math.isfinite(anytime) else anytime
        out.append({"track": track, "model": model, "estimate": e.estimate, "lower": e.lower, "upper": e.upper,
                    "n_people": e.n, "n_predicted": e.big_n, "lam": e.lam, "people_estimate": p.estimate,
                    "people_lower": p.lower, "people_upper": p.upper, "gain": gain, "uniform_width": uniform,
                    "anytime_lower": e.estimate - anytime, "anytime_upper": e.estimate + anytime,
                    "rank_low": low, "rank_high": high, "sampling": how, "note": note})
    return out


DIFF_COLUMNS = ["track", "model_a", "model_b", "difference", "lower", "upper", "settled"]


def _differences(track: str, estimates: dict[str, ppi.Estimate], alpha: float) -> list[dict]:
    models = sorted(m for m, e in estimates.items() if not e.reason)
    out = []
    for i, a in enumerate(models):
        for b in models[i + 1:]:
            d = ppi.difference(estimates[a], estimates[b], alpha=alpha)
            out.append({"track": track, "model_a": a, "model_b": b, "difference": d.estimate, "lower": d.lower,
                        "upper": d.upper, "settled": bool(d.lower > 0 or d.upper < 0)})
    return out
