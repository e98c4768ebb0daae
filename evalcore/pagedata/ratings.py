"""The Human evaluation and Ensembles pages' data: agreement between annotators, their biases, the
distribution of their scores, the tracks rated by several of them, and metric ensembles fitted to ratings."""
from __future__ import annotations

import duckdb
import pandas as pd

from evalcore.analysis import agreement_corr
from evalcore.analysis.agreement import agreement
from evalcore.analysis.agreement import annotator_bias as annotator_bias_of
from evalcore.analysis.ensemble import ensemble
from evalcore.pagedata import catalog
from evalcore.pagedata.scope import dataset_scoped, per_dataset


@dataset_scoped
def agreement_table(con: duckdb.DuckDBPyConnection, dataset: str, track: str, bootstrap: int = 1000) -> pd.DataFrame:
    return agreement(con, dataset, track, bootstrap=bootstrap, seed=0)


@dataset_scoped
def correlation_agreement(con: duckdb.DuckDBPyConnection, dataset: str, track: str, dimension: str, statistic: str,
                          raters: str, outliers: str, bootstrap: int = 1000) -> pd.DataFrame:
    """One definition of correlation agreement on one dimension, with Spearman, Pearson and Kendall, per level."""
    table, _ = agreement_corr.agreement_table(con, dataset, track, statistics=(statistic,), raters=raters, outliers=outliers,
                               bootstrap=bootstrap, seed=0, dimension=dimension)
    return table


@dataset_scoped
def multi_rated_part(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """The dataset's tracks with a response or dialogue rated by two or more annotators, in name order."""
    return [t for (t,) in con.execute("""
        SELECT DISTINCT track FROM (
            SELECT track FROM human_ratings WHERE dataset = ? AND target <> 'system'
            GROUP BY track, target, item_id, dialogue_id, model, dimension
            HAVING count(DISTINCT annotator) >= 2)
        ORDER BY track
    """, [dataset]).fetchall()]


def merge_multi_rated(parts: dict[str, list[str]]) -> list[tuple[str, str]]:
    return [(d, t) for d in sorted(parts) for t in parts[d]]


@per_dataset(multi_rated_part, merge_multi_rated)
def multi_rated_tracks(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(dataset, track) pairs with a response or dialogue rated by two or more annotators."""
    return merge_multi_rated({d: multi_rated_part(con, d) for d in catalog.datasets(con)})


@dataset_scoped
def annotator_bias(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> pd.DataFrame:
    return annotator_bias_of(con, dataset, track)


@dataset_scoped
def score_distribution(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> pd.DataFrame:
    """Share of each score per dimension and model (the seed's Fig. 2), response/dialogue ratings."""
    frame = con.execute("""
        SELECT dimension, model, score, count(*) AS n FROM human_ratings
        WHERE dataset = ? AND track = ? AND target <> 'system' GROUP BY ALL ORDER BY ALL
    """, [dataset, track]).df()
    frame["share"] = frame["n"] / frame.groupby(["dimension", "model"])["n"].transform("sum")
    return frame


@dataset_scoped
def ensemble_view(con: duckdb.DuckDBPyConnection, dataset: str, level: str, holdout: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    return ensemble(con, dataset, level=level, holdout=holdout)
