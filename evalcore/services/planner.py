"""The planner over a store: how many units and raters a question needs (evalcore.analysis.planning), from the
store's own ratings of the dimension where there are some (a pilot) or from stated assumptions where there are
none; with a predictor named, also how many people's ratings PPI needs beside it (its correlation with people in
the pilot). With a task, what the ratings it collected can and cannot settle."""
from __future__ import annotations

import math

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis import planning, ppi
from evalcore.analysis.planning import QUESTIONS
from evalcore.core import names
from evalcore.services import estimate as estimating
from evalcore.store import tasks as stored_tasks


def pilot(con: duckdb.DuckDBPyConnection, dataset: str, dimension: str, *, track: str | None = None,
          origin: str | None = None) -> pd.DataFrame:
    """People's ratings of responses on the dimension: track, model, unit (the item), annotator, score."""
    return con.execute("""
        SELECT track, model, item_id AS unit, annotator, score FROM human_ratings
        WHERE dataset = ? AND dimension = ? AND target = 'response' AND (? IS NULL OR track = ?)
          AND (? IS NULL OR origin = ?)""", [dataset, dimension, track, track, origin, origin]).df()


def _rho(con, dataset: str, dimension: str, track: str | None, name: str, ratings: pd.DataFrame) -> float:
    """The predictor's Pearson correlation with people's unit means in the pilot (what PPI's variance shrinks by)."""
    tracks = estimating.tracks_of(con, dataset, track)
    pred = estimating.predictor(con, dataset, tracks, name, (None, None)).values
    means = ratings.groupby(["track", "unit", "model"], as_index=False)["score"].mean()
    joined = means.merge(pred.rename(columns={"item_id": "unit"}), on=["track", "unit", "model"])
    if len(joined) < 3 or joined["value"].std() == 0 or joined["score"].std() == 0:
        raise ValueError(f"{name!r} and people share fewer than 3 rated responses (or one is constant) on {dimension}: "
                         "its correlation with people, which the calibrated plan rests on, is unknown")
    return float(np.corrcoef(joined["value"], joined["score"])[0, 1])


def plan(con: duckdb.DuckDBPyConnection | None, question: str, *, dataset: str | None = None,
         dimension: str | None = None, track: str | None = None, models: list[str] | None = None,
         effect: float | None = None, sd: float | None = None, rater_sd: float = 0.0, raters: int = 1,
         budget: int | None = None, predictor: str | None = None, r: float | None = None, p: float | None = None,
         half_width: float | None = None, task: int | None = None) -> dict:
    """{'rows': one plan per row (people only; and with the predictor calibrated by people when one is named),
    'source': where the spread came from, 'settles': for a task, its pairs of models and whether the ratings tell
    them apart}."""
    if question not in QUESTIONS:
        raise ValueError(f"unknown question {question!r}; known: {', '.join(QUESTIONS)}")
    if raters < 1:
        raise ValueError(f"--raters must be at least 1, got {raters}")
    ratings, origin = pd.DataFrame(), None
    if task is not None:
        t = stored_tasks.get(con, task)
        dataset, origin = t.dataset, t.origin
        dimension = dimension or t.dimensions[0].dimension
    if dataset is not None:
        names.require("dataset", dataset, [d for (d,) in con.execute("SELECT dataset FROM datasets").fetchall()])
        if dimension is None:
            raise ValueError("--dimension is needed with --dataset: the ratings of which dimension are the pilot?")
        ratings = pilot(con, dataset, dimension, track=track, origin=origin)
        if models:
            ratings = ratings[ratings["model"].isin(models)]
    if task is not None and budget is None and len(ratings):
        budget = int(ratings.groupby("model")["unit"].nunique().min())
    out = {"question": question, "settles": pd.DataFrame(), "raters": pd.DataFrame(), "resampled": None}
    if question in ("difference", "ranking"):
        spreads, means = _spreads(ratings, sd, rater_sd, models, question)
        rhos = [0.0] + ([_rho(con, dataset, dimension, track, predictor, ratings)] if predictor else [])
        rows = []
        for rho in rhos:
            if question == "difference":
                if effect is None:
                    raise ValueError("--effect is needed: the difference between the two systems worth detecting, "
                                     "on the dimension's scale")
                a, b = list(spreads.values())[:2]
                got = planning.plan_difference(a, b, effect, raters=raters, budget=budget, rho=rho)
            else:
                got = planning.plan_ranking(spreads, means, gap=effect, raters=raters, budget=budget, rho=rho)
            rows.append(_row(got, f"{predictor} calibrated by people" if rho else "people only", rho))
        out["source"] = rows[0]["source"]
        out["raters"] = _by_raters(question, spreads, means, effect, budget)
        if question == "difference" and len(ratings):   # how much the pilot's own sampling moves the answer
            a, b = sorted(ratings["model"].unique())[:2]
            out["resampled"] = planning.resampled_needs(ratings[ratings["model"] == a], ratings[ratings["model"] == b],
                                                        effect, raters=raters)
    elif question == "correlation":
        if r is None:
            if not (predictor and len(ratings)):
                raise ValueError("--r is needed (the correlation expected), or --dataset, --dimension and --predictor "
                                 "to take it from the store's ratings")
            r = _rho(con, dataset, dimension, track, predictor, ratings)
            source = f"pilot: {predictor}'s Pearson r with people's means on {dimension}, {r:.2f}"
        else:
            source = f"assumed: r = {r:g}"
        rows = [_row(planning.plan_correlation(r, budget=budget, source=source), predictor or "stated", 0.0)]
        out["source"] = source
    else:
        if p is None or half_width is None:
            raise ValueError("--p (the agreement rate expected) and --half-width (how closely to know it) are needed")
        rows = [_row(planning.plan_agreement(p, half_width, budget=budget, source=f"assumed: agreement {p:g}"),
                     predictor or "stated", 0.0)]
        out["source"] = rows[0]["source"]
    out["rows"] = pd.DataFrame(rows)
    if task is not None and len(ratings):
        out["settles"] = settles(con, t, dimension, track)
    return out


def _spreads(ratings: pd.DataFrame, sd: float | None, rater_sd: float, models: list[str] | None,
             question: str) -> tuple[dict, dict | None]:
    if len(ratings):
        by = {m: g for m, g in ratings.groupby("model", sort=True)}
        if len(by) < 2:
            raise ValueError("the pilot holds ratings of one model only: a difference or a ranking needs two")
        spreads = {m: planning.spread_of(g, source="pilot") for m, g in by.items()}
        means = {m: float(g.groupby("unit")["score"].mean().mean()) for m, g in by.items()}
        return spreads, means
    if sd is None:
        raise ValueError("no ratings of this dimension to plan from: state --sd (a response's rating standard "
                         "deviation, e.g. from a published study) and --effect")
    wanted = models or ["system A", "system B"]
    return {m: planning.assumed(sd, rater_sd=rater_sd) for m in wanted}, None


def _row(got: planning.Plan, with_: str, rho: float) -> dict:
    row = got.as_row()
    row["with"] = with_
    row["rho"] = rho if rho else math.nan
    return row


def settles(con, task: stored_tasks.Task, dimension: str | None = None, track: str | None = None) -> pd.DataFrame:
    """Each pair of models: the people's difference so far with its 95% interval, whether it is settled, and the
    smallest difference these ratings could detect with power 0.8 (empty before any rating; `dimension`: the task's
    first by default). Each model's mean is its task sample's, weighted
    by 1 / inclusion probability as `evalcore estimate` weighs it (an active task's plain mean would lean towards
    the responses it favoured), over the model's responses on each track (tracks combined by their sizes)."""
    tracks = estimating.tracks_of(con, task.dataset, track)
    rated = estimating.people(con, task.dataset, tracks, dimension or task.dimensions[0].dimension, task.origin)
    if rated.empty:
        return pd.DataFrame()
    population = con.execute("""
        SELECT i.track, r.item_id, r.model FROM responses r JOIN items i USING (dataset, item_id)
        WHERE r.dataset = ? AND list_contains(?, i.track)""", [task.dataset, tracks]).df()
    pi, _ = estimating.probabilities(con, task.dataset, rated, population, assume_random=False)
    rated = rated.assign(pi=pi)
    sizes = population.groupby(["track", "model"]).size()
    est = {}
    for model, mine in rated.groupby("model", sort=True):
        parts = [(int(sizes[(t, model)]), ppi.finite_mean(g["y"], g["y"], np.zeros(int(sizes[(t, model)])),
                                                          pi=g["pi"], lam=0))
                 for t, g in mine.groupby("track", sort=True)]
        est[model] = parts[0][1] if len(parts) == 1 else ppi.combine(parts)
    rows = []
    models = sorted(est)
    for i, a in enumerate(models):
        for b in models[i + 1:]:
            d = ppi.difference(est[a], est[b])
            rows.append({"model_a": a, "model_b": b, "difference": d.estimate, "lower": d.lower, "upper": d.upper,
                         # unknown, not "no", where either side has no interval (the note says why)
                         "settled": None if d.reason else bool(d.lower > 0 or d.upper < 0),
                         "detectable": planning.mde(d.se, df=min(est[a].n, est[b].n) - 1) if not d.reason else math.nan,
                         "note": d.reason})
    return pd.DataFrame(rows)

RATERS = (1, 2, 3, 5)


def _by_raters(question: str, spreads: dict, means: dict | None, effect: float | None,
               budget: int | None) -> pd.DataFrame:
    """Units and ratings needed with K = 1, 2, 3, 5 people per unit: more raters only help as far as raters
    disagree about one unit (the pilot's within variance); past that, more units are the cheaper way."""
    rows = []
    for k in RATERS:
        if question == "difference":
            a, b = list(spreads.values())[:2]
            need = planning.plan_difference(a, b, effect, raters=k).units_needed
        else:
            need = planning.plan_ranking(spreads, means, gap=effect, raters=k).units_needed
        rows.append({"raters": k, "units_needed": need, "ratings_needed": None if need is None else need * k})
    return pd.DataFrame(rows)
