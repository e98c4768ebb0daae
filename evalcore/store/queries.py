"""Read-side queries shared by the CLI and the dashboard (what the store holds: datasets, tracks, models,
answerable items). They return DataFrames and write nothing; deleting a model is history.delete_model."""
from __future__ import annotations

import duckdb
import pandas as pd

from evalcore.core.names import MODEL_TABLES

SUMMARY_SQL = """
WITH t AS (SELECT dataset, track FROM tracks WHERE $dataset IS NULL OR dataset = $dataset),
i AS (SELECT dataset, track, item_id FROM items WHERE $dataset IS NULL OR dataset = $dataset),
it AS (SELECT dataset, track, count(*) AS n FROM i GROUP BY ALL),
rf AS (SELECT i.dataset, i.track, count(*) AS n FROM item_references r JOIN i USING (dataset, item_id) GROUP BY ALL),
rs AS (SELECT i.dataset, i.track, count(*) AS n FROM responses r JOIN i USING (dataset, item_id) GROUP BY ALL),
hr AS (SELECT dataset, track, count(*) AS n FROM human_ratings WHERE $dataset IS NULL OR dataset = $dataset GROUP BY ALL),
ss AS (SELECT dataset, track, count(*) AS n FROM system_scores WHERE $dataset IS NULL OR dataset = $dataset GROUP BY ALL),
md AS (
    SELECT dataset, track, count(DISTINCT model) AS n FROM (
        SELECT i.dataset, i.track, r.model FROM responses r JOIN i USING (dataset, item_id)
        UNION ALL SELECT dataset, track, model FROM system_scores WHERE $dataset IS NULL OR dataset = $dataset
        UNION ALL SELECT dataset, track, model FROM human_ratings WHERE $dataset IS NULL OR dataset = $dataset
    ) GROUP BY ALL
)
SELECT t.dataset, t.track,
       coalesce(it.n, 0) AS items, coalesce(rf.n, 0) AS "references", coalesce(md.n, 0) AS models,
       coalesce(rs.n, 0) AS responses, coalesce(hr.n, 0) AS human_ratings, coalesce(ss.n, 0) AS system_scores
FROM t
LEFT JOIN it USING (dataset, track) LEFT JOIN rf USING (dataset, track) LEFT JOIN rs USING (dataset, track)
LEFT JOIN hr USING (dataset, track) LEFT JOIN ss USING (dataset, track) LEFT JOIN md USING (dataset, track)
ORDER BY t.dataset, t.track
"""


def require_dataset(con: duckdb.DuckDBPyConnection, dataset: str) -> None:
    """Refuse an unknown dataset, naming the ones the store has."""
    known = [d for (d,) in con.execute("SELECT dataset FROM datasets ORDER BY 1").fetchall()]
    if dataset not in known:
        raise ValueError(f"no dataset {dataset!r}; known: {', '.join(known) or '(none: the store is empty)'}")


def summary(con: duckdb.DuckDBPyConnection, dataset: str | None = None) -> pd.DataFrame:
    """One row per track: items, references, models, responses, human ratings, system scores."""
    frame = con.execute(SUMMARY_SQL, {"dataset": dataset}).df()   # every count read for that dataset only
    counts = ["items", "references", "models", "responses", "human_ratings", "system_scores"]
    return frame.astype({c: "int64" for c in counts})


def datasets(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return con.execute(
        "SELECT dataset, language, licence, source, description FROM datasets ORDER BY dataset").df()


def dataset_languages(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per dataset: its language as scoring uses it (it picks the default tokenizer and METEOR's
    mode) and where it came from: 'declared' (by the data or its importer), 'detected from the texts'
    (evalcore.core.language), or a blank language (not None) with 'none: scored as non-English (char tokens)'; then licence,
    source and description."""
    return con.execute("""
        SELECT dataset, coalesce(language, '') AS language,
               CASE WHEN language IS NULL THEN 'none: scored as non-English (char tokens)'
                    WHEN language_source = 'detected' THEN 'detected from the texts'
                    ELSE 'declared' END AS language_from,
               licence, source, description
        FROM datasets ORDER BY dataset""").df()


def models(con: duckdb.DuckDBPyConnection, dataset: str | None = None) -> pd.DataFrame:
    """Every model with where it has responses or scores."""
    return con.execute("""
        WITH uses AS (
            SELECT r.dataset, i.track, r.model, 1 AS responses FROM responses r JOIN items i USING (dataset, item_id)
            UNION ALL SELECT dataset, track, model, 0 FROM system_scores
            UNION ALL SELECT dataset, track, model, 0 FROM human_ratings
        )
        SELECT m.model, m.description, m.added_at, m.added_by,
               string_agg(DISTINCT u.dataset || ':' || u.track, ', ' ORDER BY u.dataset || ':' || u.track) AS tracks,
               coalesce(sum(u.responses), 0)::BIGINT AS responses
        FROM models m JOIN uses u USING (model)
        WHERE ? IS NULL OR u.dataset = ?
        GROUP BY ALL ORDER BY m.model
    """, [dataset, dataset]).df()


def model_footprint(con: duckdb.DuckDBPyConnection, model: str, dataset: str | None = None) -> dict[str, int]:
    return {t: con.execute(f"SELECT count(*) FROM {t} WHERE model = ? AND (? IS NULL OR dataset = ?)",
                           [model, dataset, dataset]).fetchall()[0][0] for t in MODEL_TABLES}


def answerable_items(con, dataset: str, track: str | None = None) -> pd.DataFrame:
    """The items a submission is expected to answer, per track: every item except those made only to
    hold a rating of a text that is not a stored response (MSDE's human-sheet rows matching no
    generated row), which no model can answer. Columns: track, item_id."""
    return con.execute(ANSWERABLE + " ORDER BY i.track, i.item_id", [dataset, track, track]).df()


# answerable_items' rows (track, item_id) as SQL, with its parameters [dataset, track, track]: an item is dropped
# when it holds a rating of a text and no response; asked that way round, the responses are searched for the
# few rated items only (every item's search for a response took 1.0 s at 10 million responses, this 0.07 s)
ANSWERABLE = """
        SELECT i.track, i.item_id FROM items i WHERE i.dataset = ? AND (? IS NULL OR i.track = ?)
        AND NOT EXISTS (SELECT 1 FROM human_ratings h WHERE h.dataset = i.dataset AND h.item_id = i.item_id
                        AND h.rated_response IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM responses r WHERE r.dataset = h.dataset AND r.item_id = h.item_id))"""


def answered_tracks(con, dataset: str, model: str) -> set[str]:
    """The tracks of a dataset where a model has at least one response."""
    return {t for (t,) in con.execute("""SELECT DISTINCT i.track FROM responses r JOIN items i USING (dataset, item_id)
                                         WHERE r.dataset = ? AND r.model = ?""", [dataset, model]).fetchall()}


def reference_copies(con: duckdb.DuckDBPyConnection, dataset: str, track: str | None = None) -> pd.DataFrame:
    """Per model with any: how many of its responses equal (whitespace aside) a reference of their item,
    of how many (model, identical, responses). A model made of copies is usually the reference itself
    imported as a model: scored against itself, it inflates every correlation."""
    return con.execute("""
        WITH mine AS (
            SELECT r.item_id, r.model, r.text FROM responses r JOIN items i USING (dataset, item_id)
            WHERE r.dataset = ? AND (? IS NULL OR i.track = ?)
        ), copies AS (
            SELECT m.model, count(DISTINCT m.item_id) AS identical FROM mine m
            JOIN item_references f ON f.dataset = ? AND f.item_id = m.item_id AND trim(f.text) = trim(m.text)
            GROUP BY m.model
        )
        SELECT c.model, c.identical, (SELECT count(*) FROM mine WHERE mine.model = c.model) AS responses
        FROM copies c ORDER BY c.model""", [dataset, track, track, dataset]).df()


def storage(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """What takes the space in the store's file: bytes per table and column (from DuckDB's storage_info:
    each segment's share of its block, up to the next segment's offset), then the rest of the used blocks
    (indexes: primary keys' ART, and catalog) and the free blocks. Columns: table, column, rows, bytes, MB,
    share."""
    size = con.execute("PRAGMA database_size").df().iloc[0]
    block = int(size["block_size"])
    tables = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
                                         "AND schema_name = 'main' ORDER BY 1").fetchall()]
    segments = []
    for t in tables:
        info = con.execute("SELECT column_name, column_path, count, block_id, block_offset, additional_block_ids, "
                           "persistent FROM pragma_storage_info(?)", [t]).df()
        info = info[info["persistent"] & (info["block_id"] >= 0)]
        info["table"] = t
        segments.append(info)
    seg = pd.concat(segments, ignore_index=True) if segments else pd.DataFrame()
    rows = []
    if not seg.empty:
        seg = seg.sort_values(["block_id", "block_offset"], ignore_index=True)
        nxt = seg.groupby("block_id")["block_offset"].shift(-1).fillna(block)
        seg["bytes"] = (nxt - seg["block_offset"]) + seg["additional_block_ids"].map(len) * block
        # validity masks and a list column's child (its values) count towards the column
        top = seg["column_path"].astype(str).str.count(",") == 0
        counts = seg[top].groupby(["table", "column_name"])["count"].sum()
        for (t, c), part in seg.groupby(["table", "column_name"]):
            rows.append({"table": t, "column": c, "rows": int(counts.get((t, c), 0)), "bytes": int(part["bytes"].sum())})
    used = int(size["used_blocks"]) * block - sum(r["bytes"] for r in rows)
    rows.append({"table": "(indexes, catalog)", "column": "", "rows": None, "bytes": max(used, 0)})
    rows.append({"table": "(free blocks)", "column": "", "rows": None, "bytes": int(size["free_blocks"]) * block})
    out = pd.DataFrame(rows)
    out["rows"] = out["rows"].astype("Int64")
    out["MB"] = (out["bytes"] / 1e6).round(1)
    out["share"] = (out["bytes"] / max(out["bytes"].sum(), 1)).round(4)
    return out.sort_values("bytes", ascending=False, ignore_index=True)
