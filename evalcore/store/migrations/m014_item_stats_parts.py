"""item_stats in parts of at most 4,096 values (whole items), instead of one list per system score.

DuckDB reads a list column's values for whole vectors of rows: with one list of a whole track per row,
any read of one track decompressed every track's statistics (3-8 s per read at ten million responses,
0.25-0.45 s at one million). Rows of at most 4,096 values let a read skip the other tracks' vectors:
measured on a copy of the 1M-response, 20-track bench store, a track's read took 0.025-0.036 s instead
of 0.25-0.45 s. `part` numbers a row's parts from 0; a reader joins them in order. The statistics
themselves are unchanged (the same doubles, split). Moved one track at a time: one statement over the
whole table held every track's lists at once (2.3 GB at one million responses against 1.3 GB)."""

VERSION = 14

SQL = """
CREATE TABLE item_stats_parts (
    dataset     VARCHAR NOT NULL,
    track       VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    signature   VARCHAR NOT NULL,
    n           INTEGER NOT NULL,
    order_key   VARCHAR NOT NULL,
    width       INTEGER NOT NULL,
    part        INTEGER NOT NULL,
    stats       DOUBLE[] NOT NULL
);
"""

SPLIT = """
INSERT INTO item_stats_parts
SELECT dataset, track, model, signature, n, order_key, width, p::INTEGER,
       list_slice(stats, p * greatest(1, 4096 // width) * width + 1, (p + 1) * greatest(1, 4096 // width) * width)
FROM item_stats, LATERAL range(0, greatest(1, ceil(len(stats) / (greatest(1, 4096 // width) * width)))::BIGINT) t(p)
WHERE dataset = ? AND track = ?
"""


def run(con) -> None:
    for dataset, track in con.execute("SELECT DISTINCT dataset, track FROM item_stats ORDER BY ALL").fetchall():
        con.execute(SPLIT, [dataset, track])
    con.execute("DROP TABLE item_stats")
    con.execute("ALTER TABLE item_stats_parts RENAME TO item_stats")
