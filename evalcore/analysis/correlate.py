"""Metric-human correlations per track at system, dialogue or turn level.

system:   one point per model. Metric: its system score (the corpus value of a computed metric, or a
          published table's value). Human: the model's mean over its rated responses (each response
          first aggregated across annotators), or a published whole-system score.
dialogue: one point per (dialogue, model); an item without a dialogue is its own dialogue.
          Metric: mean of the per-response values. Human: dialogue ratings, else the mean of the
          dialogue's rated responses.
turn:     one point per rated response. Metric: its per-response value.
"""
from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis.humans import AGGREGATES, per_target_cte
from evalcore.analysis.options import LEVELS, ORIGINS
from evalcore.analysis.stats import METHODS, Correlation, Pair, Prepared, correlate_prepared
from evalcore.metrics.registry import HUMAN_ORDER, PAPER_ORDER, ordered
from evalcore.scoring import computed_filter, response_scores

COLUMNS = ["dataset", "track", "dimension", "metric", "method", "level", "n", "r", "p", "ci_low", "ci_high",
           "ci_method", "note"]


@dataclass(frozen=True)
class Models:
    """Which models' units count: only `keep` (when given), never `drop` (--models, --exclude-models)."""

    keep: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.keep or self.drop)

    def mask(self, models: pd.Series) -> pd.Series:
        """True where a model (of a column of model names) counts."""
        ok = models.isin(self.keep) if self.keep else pd.Series(True, index=models.index)
        return ok & ~models.isin(self.drop)

    def apply(self, frame: pd.DataFrame, level: str) -> pd.DataFrame:
        """Rows of a long frame of units (a model at system level, else '<item or dialogue>\\x1f<model>')."""
        if not self or frame.empty:
            return frame
        return frame[self.mask(frame["unit"] if level == "system" else frame["unit"].str.rsplit("\x1f", n=1).str[-1])]


def check_options(level: str, origin: str, methods: list[str], aggregate: str) -> None:
    for value, allowed, what in ((level, LEVELS, "level"), (origin, ORIGINS, "origin"),
                                 (aggregate, AGGREGATES, "aggregation")):
        if value not in allowed:
            raise ValueError(f"unknown {what} {value!r}; known: {', '.join(allowed)}")
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"unknown method {m!r}; known: {', '.join(METHODS)}")
    if origin == "published" and level != "system":
        raise ValueError("published scores are system-level: use --level system with --origin published")


def _tracks(con, dataset: str, track: str | None) -> list[str]:
    rows = con.execute("SELECT track FROM tracks WHERE dataset = ? AND (? IS NULL OR track = ?) ORDER BY track",
                       [dataset, track, track]).fetchall()
    if not rows:
        raise ValueError(f"no track {track!r} in dataset {dataset!r}" if track else f"no dataset {dataset!r}")
    return [r[0] for r in rows]


def human_scores(con, dataset: str, track: str, level: str, aggregate: str = "mean") -> pd.DataFrame:
    """Columns unit, dimension, value: human scores aggregated across annotators by `aggregate`,
    computed in the store (millions of ratings stay there)."""
    per_target = f"""
        WITH base AS (
            SELECT h.target, h.item_id, coalesce(h.dialogue_id, i.dialogue_id, h.item_id) AS dialogue_id,
                   h.model, h.dimension, h.score
            FROM human_ratings h LEFT JOIN items i ON i.dataset = h.dataset AND i.item_id = h.item_id
            WHERE h.dataset = ? AND h.track = ?),
        {per_target_cte(aggregate, "base")}"""
    if level == "turn":
        sql = per_target + """
            SELECT item_id || chr(31) || model AS unit, dimension, score AS value
            FROM per_target WHERE target = 'response'"""
    elif level == "dialogue":
        sql = per_target + """
            SELECT dialogue_id || chr(31) || model AS unit, dimension, value FROM (
                SELECT dialogue_id, model, dimension, avg(score) AS value, 0 AS rank
                FROM per_target WHERE target = 'dialogue' GROUP BY ALL
                UNION ALL
                SELECT dialogue_id, model, dimension, avg(score), 1
                FROM per_target WHERE target = 'response' GROUP BY ALL)
            QUALIFY row_number() OVER (PARTITION BY dialogue_id, model, dimension ORDER BY rank) = 1"""
    else:
        sql = per_target + """
            SELECT model AS unit, dimension, value FROM (
                SELECT model, dimension, avg(score) AS value, 0 AS rank
                FROM per_target WHERE target = 'system' GROUP BY ALL
                UNION ALL
                SELECT model, dimension, avg(score), 1
                FROM per_target WHERE target <> 'system' GROUP BY ALL)
            QUALIFY row_number() OVER (PARTITION BY model, dimension ORDER BY rank) = 1"""
    return con.execute(sql, [dataset, track]).df()


def metric_scores(con, dataset: str, track: str, level: str, origin: str, flavor: str,
                  tokenizer: str | None, system_aggregate: str = "corpus") -> pd.DataFrame:
    """Columns unit, metric, value for the level."""
    if level == "system":
        if origin == "published":
            return con.execute("""
                SELECT model AS unit, name AS metric, value FROM system_scores
                WHERE dataset = ? AND track = ? AND origin = 'published'
            """, [dataset, track]).df()
        cond, params = computed_filter(con, dataset, flavor, tokenizer, system_aggregate)
        return con.execute(f"""
            SELECT model AS unit, name AS metric, value FROM system_scores
            WHERE dataset = ? AND track = ? AND origin = 'computed' AND {cond}
        """, [dataset, track, *params]).df()
    values = response_scores(con, dataset, track, flavor=flavor, tokenizer=tokenizer)
    if level == "turn":
        return pd.DataFrame({"unit": values["item_id"] + "\x1f" + values["model"],
                             "metric": values["metric"], "value": values["value"]})
    dialogues = con.execute("SELECT item_id, coalesce(dialogue_id, item_id) AS dialogue_id FROM items "
                            "WHERE dataset = ? AND track = ?", [dataset, track]).df()
    merged = values.merge(dialogues, on="item_id")
    grouped = merged.groupby(["dialogue_id", "model", "metric"])["value"].mean().reset_index()
    return pd.DataFrame({"unit": grouped["dialogue_id"] + "\x1f" + grouped["model"],
                         "metric": grouped["metric"], "value": grouped["value"]})


def correlation_matrix(metrics: pd.DataFrame, humans: pd.DataFrame, methods: list[str], *,
                       bootstrap: int = 0, seed: int | None = None) -> list[tuple[str, str, Correlation]]:
    """Every (dimension, metric, method) over wide frames indexed by unit (NaN: no value).

    Vectors are prepared once per column and re-prepared only for pairs whose missing values differ.
    """
    metrics, humans = metrics.align(humans, join="inner", axis=0)
    prepared: dict[str, Prepared] = {}

    def full(frame: pd.DataFrame, col: str) -> Prepared:
        key = f"{id(frame)}:{col}"
        if key not in prepared:
            prepared[key] = Prepared(frame[col].to_numpy(dtype=float))
        return prepared[key]

    out = []
    for dim in humans.columns:
        h = humans[dim].to_numpy(dtype=float)
        h_ok = ~np.isnan(h)
        for metric in metrics.columns:
            m = metrics[metric].to_numpy(dtype=float)
            ok = h_ok & ~np.isnan(m)
            if ok.all():
                px, py = full(metrics, metric), full(humans, dim)
            else:
                px, py = Prepared(m[ok]), Prepared(h[ok])
            pair = Pair(px, py)  # one contingency table for all methods
            for method in methods:
                out.append((dim, metric, correlate_prepared(method, px, py, bootstrap=bootstrap, seed=seed, pair=pair)))
    return out


def correlations(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None, *,
                 level: str = "system", origin: str = "computed", methods: list[str] | None = None,
                 bootstrap: int = 0, seed: int | None = None, aggregate: str = "mean",
                 flavor: str = "default", tokenizer: str | None = None,
                 compare_published: bool = False, models: Models = Models(),
                 system_aggregate: str = "corpus") -> pd.DataFrame:
    """Long table: one row per track, dimension, metric and method (COLUMNS)."""
    methods = methods or ["pearson", "spearman", "kendall"]
    check_options(level, origin, methods, aggregate)
    if bootstrap and seed is None:
        raise ValueError("--bootstrap needs --seed: resampling is always seeded and the seed is recorded")
    rows = []
    for tr in _tracks(con, dataset, track):
        humans = models.apply(human_scores(con, dataset, tr, level, aggregate), level)
        metrics = models.apply(metric_scores(con, dataset, tr, level, origin, flavor, tokenizer, system_aggregate),
                               level)
        if humans.empty or metrics.empty:
            continue
        h = humans.pivot_table(index="unit", columns="dimension", values="value", aggfunc="first")
        m = metrics.pivot_table(index="unit", columns="metric", values="value", aggfunc="first")
        h = h[ordered(h.columns, HUMAN_ORDER)]
        m = m[ordered(m.columns, PAPER_ORDER)]
        for dim, metric, c in correlation_matrix(m, h, methods, bootstrap=bootstrap, seed=seed):
            rows.append([dataset, tr, dim, metric, c.method, level, c.n,
                         c.r if c.defined else np.nan, c.p if c.defined else np.nan,
                         c.ci_low, c.ci_high, c.ci_method, c.reason])
    frame = pd.DataFrame(rows, columns=COLUMNS)
    if compare_published:
        published = con.execute("""
            SELECT track, dimension, metric, method, level, value AS published FROM published_correlations
            WHERE dataset = ?""", [dataset]).df()
        frame = frame.merge(published, on=["track", "dimension", "metric", "method", "level"], how="left")
        frame["diff"] = frame["r"] - frame["published"]
    return frame
