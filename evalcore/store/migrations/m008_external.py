"""External and judge metrics: metrics whose values are imported (`import scores`) are registered per
store (name, direction, description), and a per-response value that could not be had (a judge's
unparseable or failed answer) keeps its reason instead of a number."""

VERSION = 8

SQL = """
CREATE TABLE external_metrics (
    metric           VARCHAR PRIMARY KEY,
    higher_is_better BOOLEAN NOT NULL,
    description      VARCHAR,
    added_at         TIMESTAMP
);
ALTER TABLE metric_scores ADD COLUMN reason VARCHAR;
"""
