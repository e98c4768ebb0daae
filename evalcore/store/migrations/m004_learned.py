"""Trained learned metrics (ABLSTM): where the model lives, what it was trained on, how it did."""

VERSION = 4

SQL = """
CREATE TABLE learned_models (
    name        VARCHAR NOT NULL,     -- the metric column, e.g. ABLSTM
    path        VARCHAR NOT NULL,     -- the directory `learned train --out` wrote
    signature   VARCHAR NOT NULL,
    trained_at  TIMESTAMP NOT NULL,
    info        VARCHAR NOT NULL,     -- JSON: training data, split, held-out figures
    PRIMARY KEY (name, path)
);
"""
