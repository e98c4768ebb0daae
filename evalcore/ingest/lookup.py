"""What an importer needs to know about the store before it writes (parameterised reads)."""
from __future__ import annotations

import duckdb

from evalcore.core.text import identity_key


def tracks_of(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    rows = con.execute("SELECT track FROM tracks WHERE dataset = ? ORDER BY track", [dataset]).fetchall()
    return [r[0] for r in rows]


def item_tracks(con: duckdb.DuckDBPyConnection, dataset: str) -> dict[str, str]:
    """item_id -> track for every item of a dataset."""
    rows = con.execute("SELECT item_id, track FROM items WHERE dataset = ?", [dataset]).fetchall()
    return dict(rows)


def dataset_language(con: duckdb.DuckDBPyConnection, dataset: str) -> tuple[str | None, str]:
    """(language, 'the store') for a stored dataset; (None, 'new') for one not yet stored."""
    rows = con.execute("SELECT language FROM datasets WHERE dataset = ?", [dataset]).fetchall()
    return (rows[0][0], "the store") if rows else (None, "new")


def dialogue_ids(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> set[str]:
    rows = con.execute(
        "SELECT dialogue_id FROM dialogues WHERE dataset = ? AND track = ? "
        "UNION SELECT dialogue_id FROM items WHERE dataset = ? AND track = ? AND dialogue_id IS NOT NULL",
        [dataset, track, dataset, track],
    ).fetchall()
    return {r[0] for r in rows}


def response_keys(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None) -> set[tuple[str, str]]:
    """(item_id, model) of the stored responses of a track, or of every track (track None)."""
    rows = con.execute(
        "SELECT r.item_id, r.model FROM responses r JOIN items i USING (dataset, item_id) "
        "WHERE r.dataset = ? AND (? IS NULL OR i.track = ?)",
        [dataset, track, track],
    ).fetchall()
    return set(rows)


def rating_keys(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> dict[tuple, str]:
    """(target, item or dialogue, model, annotator's identity key, dimension) -> where the stored rating came
    from (a file and row, or a rating task), for every rating of a track."""
    rows = con.execute(
        "SELECT target, coalesce(item_id, dialogue_id, ''), model, annotator, dimension, origin "
        "FROM human_ratings WHERE dataset = ? AND track = ?",
        [dataset, track],
    ).fetchall()
    return {(t, i, m, identity_key(a), d): origin or "an earlier import" for t, i, m, a, d, origin in rows}


def scales(con: duckdb.DuckDBPyConnection, dataset: str) -> dict[str, tuple[float | None, float | None]]:
    rows = con.execute(
        "SELECT dimension, scale_min, scale_max FROM dimensions WHERE dataset = ?", [dataset]
    ).fetchall()
    return {d: (lo, hi) for d, lo, hi in rows}


def system_score_keys(con: duckdb.DuckDBPyConnection, dataset: str) -> set[tuple[str, str, str, str]]:
    rows = con.execute(
        "SELECT track, model, name, origin FROM system_scores WHERE dataset = ?", [dataset]
    ).fetchall()
    return set(rows)
