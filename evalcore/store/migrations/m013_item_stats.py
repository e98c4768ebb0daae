"""Per-item statistics per track, stored at scoring time beside each system score, so a rank's
bootstrap reads one row per model instead of joining every response of the track to the value cache
(at ten million responses the leaderboard's first view took minutes).

item_stats: one row per computed system score that can be resampled: the model's responses'
statistics in the order of an item list (item_orders, shared by the rows of a track: a list per row
would repeat every item id per model and metric), flattened (n rows of `width`). Derived data: a row
stands only while the system score it was formed with (same signature and n) does; readers check that,
and fall back to the value cache otherwise. (No primary key: a row is deleted and written again in one
transaction when its system score is, which an index would refuse.)"""

VERSION = 13

SQL = """
CREATE TABLE item_orders (
    order_key   VARCHAR PRIMARY KEY,
    item_ids    VARCHAR[] NOT NULL
);
CREATE TABLE item_stats (
    dataset     VARCHAR NOT NULL,
    track       VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    signature   VARCHAR NOT NULL,
    n           INTEGER NOT NULL,
    order_key   VARCHAR NOT NULL,
    width       INTEGER NOT NULL,
    stats       DOUBLE[] NOT NULL
);
"""
