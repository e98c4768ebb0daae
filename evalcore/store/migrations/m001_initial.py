"""The first schema: the entities of docs/development/design.md ("Data model").

Natural string keys (dataset, track, item_id, model) keep imports and queries
readable; item ids are unique within a dataset.
"""

VERSION = 1

SQL = """
CREATE TABLE datasets (
    dataset     VARCHAR PRIMARY KEY,
    language    VARCHAR,
    licence     VARCHAR,
    source      VARCHAR,
    description VARCHAR
);

CREATE TABLE tracks (
    dataset     VARCHAR NOT NULL,
    track       VARCHAR NOT NULL,
    competition VARCHAR,
    skill       VARCHAR,
    corpus      VARCHAR,
    PRIMARY KEY (dataset, track)
);

CREATE TABLE dialogues (
    dataset     VARCHAR NOT NULL,
    dialogue_id VARCHAR NOT NULL,
    track       VARCHAR NOT NULL,
    split       VARCHAR,
    grounding   VARCHAR,          -- JSON object: knowledge / persona / goal
    PRIMARY KEY (dataset, dialogue_id)
);

CREATE TABLE turns (
    dataset     VARCHAR NOT NULL,
    dialogue_id VARCHAR NOT NULL,
    turn_index  INTEGER NOT NULL,
    speaker     VARCHAR,
    text        VARCHAR NOT NULL,
    grounding   VARCHAR,          -- JSON: knowledge used by this turn, when known
    PRIMARY KEY (dataset, dialogue_id, turn_index)
);

CREATE TABLE items (
    dataset     VARCHAR NOT NULL,
    item_id     VARCHAR NOT NULL,
    track       VARCHAR NOT NULL,
    dialogue_id VARCHAR,
    turn_index  INTEGER,          -- index of the turn being answered, when from a stored dialogue
    context     VARCHAR NOT NULL, -- JSON list of turn strings, oldest first
    grounding   VARCHAR,          -- JSON object: knowledge / persona / goal
    skill       VARCHAR,
    origin      VARCHAR,          -- where the item came from (file and row)
    PRIMARY KEY (dataset, item_id)
);

CREATE TABLE item_references (
    dataset     VARCHAR NOT NULL,
    item_id     VARCHAR NOT NULL,
    ref_index   INTEGER NOT NULL,
    text        VARCHAR NOT NULL,
    PRIMARY KEY (dataset, item_id, ref_index)
);

CREATE TABLE models (
    model       VARCHAR PRIMARY KEY,
    description VARCHAR,
    added_at    TIMESTAMP,
    added_by    VARCHAR
);

CREATE TABLE responses (
    dataset     VARCHAR NOT NULL,
    item_id     VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    text        VARCHAR NOT NULL,
    origin      VARCHAR,
    PRIMARY KEY (dataset, item_id, model)
);

CREATE TABLE dimensions (
    dataset     VARCHAR NOT NULL,
    dimension   VARCHAR NOT NULL,
    scale_min   DOUBLE,
    scale_max   DOUBLE,
    description VARCHAR,
    PRIMARY KEY (dataset, dimension)
);

-- target: 'response' (item_id + model), 'dialogue' (dialogue_id + model) or 'system' (model).
-- rated_response keeps the text a rater saw when it is not a stored response.
CREATE TABLE human_ratings (
    dataset        VARCHAR NOT NULL,
    track          VARCHAR NOT NULL,
    target         VARCHAR NOT NULL CHECK (target IN ('response', 'dialogue', 'system')),
    item_id        VARCHAR,
    dialogue_id    VARCHAR,
    model          VARCHAR NOT NULL,
    annotator      VARCHAR NOT NULL,
    dimension      VARCHAR NOT NULL,
    score          DOUBLE NOT NULL,
    rated_response VARCHAR,
    origin         VARCHAR
);

CREATE TABLE metric_signatures (
    signature   VARCHAR PRIMARY KEY,
    metric      VARCHAR NOT NULL,
    details     VARCHAR           -- JSON: tokenizer, aggregation, smoothing, model, layer, version
);

-- Cached per-response values, keyed by what they depend on (text + references + signature).
CREATE TABLE metric_scores (
    signature   VARCHAR NOT NULL,
    text_key    VARCHAR NOT NULL,
    value       DOUBLE,
    PRIMARY KEY (signature, text_key)
);

CREATE TABLE system_scores (
    dataset     VARCHAR NOT NULL,
    track       VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    name        VARCHAR NOT NULL,
    value       DOUBLE NOT NULL,
    origin      VARCHAR NOT NULL CHECK (origin IN ('computed', 'published')),
    signature   VARCHAR,
    source      VARCHAR,
    PRIMARY KEY (dataset, track, model, name, origin)
);

CREATE TABLE published_correlations (
    dataset     VARCHAR NOT NULL,
    track       VARCHAR NOT NULL,
    dimension   VARCHAR NOT NULL,
    metric      VARCHAR NOT NULL,
    method      VARCHAR NOT NULL,
    level       VARCHAR NOT NULL,
    value       DOUBLE NOT NULL,
    source      VARCHAR,
    PRIMARY KEY (dataset, track, dimension, metric, method, level)
);
"""
