"""Score caching: sufficient statistics per cached response score; several signatures per system score.

system_scores gains `signature` in its key (published rows use ''), the flavor and tokenizer that
produced a computed value, and `n`, the number of responses behind it.
"""

VERSION = 2

SQL = """
ALTER TABLE metric_scores ADD COLUMN stats DOUBLE[];

CREATE TABLE system_scores_v2 (
    dataset     VARCHAR NOT NULL,
    track       VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    name        VARCHAR NOT NULL,
    value       DOUBLE NOT NULL,
    origin      VARCHAR NOT NULL CHECK (origin IN ('computed', 'published')),
    signature   VARCHAR NOT NULL DEFAULT '',
    source      VARCHAR,
    flavor      VARCHAR,
    tokenizer   VARCHAR,
    n           INTEGER,
    PRIMARY KEY (dataset, track, model, name, origin, signature)
);
INSERT INTO system_scores_v2 (dataset, track, model, name, value, origin, signature, source)
    SELECT dataset, track, model, name, value, origin, coalesce(signature, ''), source FROM system_scores;
DROP TABLE system_scores;
ALTER TABLE system_scores_v2 RENAME TO system_scores;
"""
