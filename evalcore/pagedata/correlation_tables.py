"""The Correlations page's tables: metric-human correlations of a track or skill (with the published ones
beside them), and one metric's correlations across every track (evalcore.analysis.correlate)."""
from __future__ import annotations

import duckdb
import pandas as pd

from evalcore.analysis.correlate import correlations
from evalcore.pagedata import catalog
from evalcore.pagedata.scope import dataset_scoped


@dataset_scoped
def correlation_view(con: duckdb.DuckDBPyConnection, dataset: str, choice: str, *, level: str, method: str,
                     origin: str, flavor: str = "default", bootstrap: int = 0, seed: int | None = None) -> pd.DataFrame:
    frames = [correlations(con, dataset, t, level=level, origin=origin, methods=[method], flavor=flavor,
                           bootstrap=bootstrap, seed=seed, compare_published=True)
              for t in catalog.tracks_of(con, dataset, choice)]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@dataset_scoped
def across_correlations(con: duckdb.DuckDBPyConnection, dataset: str, metric: str, *, level: str, method: str,
                        origin: str, flavor: str = "default") -> pd.DataFrame:
    """One metric's correlation with every dimension in every track of the dataset."""
    frame = correlations(con, dataset, None, level=level, origin=origin, methods=[method], flavor=flavor)
    return frame[frame["metric"] == metric].reset_index(drop=True) if not frame.empty else frame
