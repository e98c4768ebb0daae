"""Which tracks of a dataset a command covers: the ones asked for, each checked to be the dataset's, else all."""
from __future__ import annotations

import duckdb

from evalcore.core import names


def chosen_tracks(con: duckdb.DuckDBPyConnection, dataset: str, tracks: list[str] | None) -> list[str]:
    """`tracks` in the order given (each must be a track of `dataset`: an unknown one is an error naming the closest),
    else every track of the dataset in name order."""
    known = [t for (t,) in con.execute("SELECT track FROM tracks WHERE dataset = ? ORDER BY track", [dataset]).fetchall()]
    if not known:
        raise names.UnknownName(f"no track of a dataset {dataset!r} in the store")
    for track in tracks or []:
        names.require("track", track, known, f"in dataset {dataset!r}")
    return list(dict.fromkeys(tracks)) if tracks else known
