"""Active sampling of a rating task (`task create --sampling active --judge J`): a predictor's values on every
candidate response (a judge's, or any metric's computed per response), how uncertain it is about each, and each
candidate's inclusion probability in its stratum (a track's responses of one model: the population a model's
mean on the track is estimated over, evalcore.analysis.ppi.finite_mean). services.tasks.sample draws the units
from these probabilities and stores each drawn unit's.

Uncertainty, one rule for the whole task (evalcore.analysis.inclusion):
- a judge asked k >= 2 times per response (`--judge-sample`, signatures that differ only in `sample:i`): the
  standard deviation of its k answers, where every candidate has at least two answers and they differ somewhere;
- otherwise the distance from the decision boundary, p (1 - p), p the predictor's value (its mean over samples)
  rescaled to [0, 1] by the least and the greatest of its values on the dataset's responses.
"""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis import inclusion
from evalcore.analysis.judge_stability import unsampled
from evalcore.analysis.judge_values import judge_names, judge_values, tracks
from evalcore.core import names
from evalcore.metrics.base import Signature
from evalcore.services.estimate import per_response

COLUMNS = ["track", "item_id", "model", "value", "answers", "spread"]
SHOWN = 3   # missing responses named in a refusal


def predictor(con: duckdb.DuckDBPyConnection, dataset: str, judge: str) -> pd.DataFrame:
    """Per response of the dataset that the predictor valued: its value (a judge asked several times: the mean
    of its answers), how many answers, and their standard deviation (NaN under two). `judge`: a judge's name or
    one of its signatures (with or without `sample:i`), or a metric's name (its values as `evalcore score`
    computed them, the default flavor)."""
    name = Signature.parse(judge).name
    if name in set(judge_names(con)):
        frames = []
        for track, _ in tracks(con, dataset):
            values = judge_values(con, dataset, track, name)
            if judge != name:   # one configuration: its k samples
                values = values[values["signature"].map(unsampled) == unsampled(judge)]
            if len(values):
                frames.append(values.assign(track=track))
        if not frames:
            raise ValueError(f"the judge {judge!r} has no values on {dataset}'s responses: run it first "
                             f"(`evalcore score --metrics {name}`), then create the task")
        values = pd.concat(frames, ignore_index=True)
        configurations = sorted(values["signature"].map(unsampled).unique())
        if len(configurations) > 1:
            raise ValueError(f"the judge {name!r} was asked under {len(configurations)} configurations on {dataset} "
                             f"({'; '.join(configurations)}): give --judge one of these signatures, so that one "
                             "judge steers the task")
    else:
        values, computed = per_response(con, dataset, [t for t, _ in tracks(con, dataset)], judge)
        if values.empty:
            names.require("judge or metric with per-response values", judge, sorted(computed | set(judge_names(con))),
                          f"on {dataset}")
            raise ValueError(f"{judge!r} has no per-response values on {dataset}: score it first")
    return (values.groupby(["track", "item_id", "model"], sort=True)["value"]
            .agg(value="mean", answers="count", spread="std").reset_index()[COLUMNS])


def plan(con: duckdb.DuckDBPyConnection, dataset: str, pool: pd.DataFrame, per_track: dict[str, int],
         judge: str) -> pd.Series:
    """Each candidate's inclusion probability (indexed as `pool`: absolute units of single responses, columns
    track, item_id, model_a): a track's `per_track` units spread over its models as the stratified round robin
    spreads them (per_model), and within each model the probabilities proportional to the predictor's
    uncertainty, summing to the model's share, with inclusion.FLOOR's floor and a cap of 1. Refused, with a
    sentence naming what is missing, when the predictor has no value on some candidate: an estimate stands the
    predictor in for every unit it does not rate (finite_mean needs it on all of them)."""
    values = predictor(con, dataset, judge)
    merged = pool[["track", "item_id", "model_a"]].merge(
        values, how="left", left_on=["track", "item_id", "model_a"], right_on=["track", "item_id", "model"])
    merged.index = pool.index
    missing = merged[merged["value"].isna()]
    if len(missing):
        named = ", ".join(f"{r.track} {r.model_a}'s response to {r.item_id}" for r in missing.head(SHOWN).itertuples())
        more = f" and {len(missing) - SHOWN:,} more" if len(missing) > SHOWN else ""
        raise ValueError(f"{judge!r} has no value on {len(missing):,} of the {len(pool):,} candidate responses "
                         f"({named}{more}): an active task needs the predictor on every response it may stand in "
                         f"for. Score them first, or leave those tracks or models out (--tracks, --models)")
    lo, hi = float(values["value"].min()), float(values["value"].max())
    sampled = bool((merged["answers"] >= 2).all() and (merged["spread"] > 0).any())
    u = merged["spread"] if sampled else pd.Series(inclusion.boundary(merged["value"], lo, hi), index=pool.index)
    pi = pd.Series(0.0, index=pool.index)
    for track, group in pool.groupby("track", sort=True):
        taken = per_model(group.groupby("model_a").size(), per_track.get(track, 0))
        for model, part in group.groupby("model_a", sort=True):
            pi[part.index] = inclusion.probabilities(u[part.index].to_numpy(), taken[model])
    return pi


def per_model(sizes: pd.Series, k: int) -> dict:
    """How many of a track's k units each model gets when the units go over the models in turn (services.tasks'
    round robin, the models in sorted order, a model with none left passed over): `sizes` its candidates per
    model."""
    sizes = sizes.sort_index()
    out = dict.fromkeys(sizes.index, 0)
    left, turn = min(k, int(sizes.sum())), 0
    while left > 0:
        for key in sizes.index:
            if left > 0 and turn < sizes[key]:
                out[key] += 1
                left -= 1
        turn += 1
    return out


def draw(pool: pd.DataFrame, pi: pd.Series, rng: np.random.Generator) -> pd.DataFrame:
    """The candidates drawn, each on its own with its probability (inclusion.draw), with that probability."""
    drawn = inclusion.draw(pi.to_numpy(), rng)
    return pool[drawn].assign(probability=pi[drawn].to_numpy())
