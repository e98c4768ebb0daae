"""The value cache (metric_scores) without its primary key index, its rows grouped by signature.

DuckDB holds a table's whole index (an ART) in memory once a write touches the table. At ten million
responses the value cache has 88.7 million (signature, text_key) keys: `score --metrics lexical` peaked at
8.9 GB there against 2.7 GB for the same 500,000-response tracks in a store a tenth the size, and the
store's indexes took 6.7 GB on disk. The key stays unique because its one writer keeps it so
(store.insert_frame inserts only keys not stored yet, store.WRITER_KEYS); reads never used the index
(they join, which DuckDB does by hashing). Rows are copied one signature at a time, so a read of one
metric's values skips the row groups of the others."""

VERSION = 15

SQL = """
CREATE TABLE metric_scores_unindexed (
    signature   VARCHAR NOT NULL,
    text_key    VARCHAR NOT NULL,
    value       DOUBLE,
    stats       DOUBLE[],
    reason      VARCHAR
);
"""


def run(con) -> None:
    for (signature,) in con.execute("SELECT DISTINCT signature FROM metric_scores ORDER BY 1").fetchall():
        con.execute("INSERT INTO metric_scores_unindexed SELECT signature, text_key, value, stats, reason "
                    "FROM metric_scores WHERE signature = ?", [signature])
    con.execute("DROP TABLE metric_scores")
    con.execute("ALTER TABLE metric_scores_unindexed RENAME TO metric_scores")
