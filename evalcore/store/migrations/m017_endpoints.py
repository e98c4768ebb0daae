"""Models evaluated by their URL: registered chat endpoints, generation runs, and how each generated reply ended.

`endpoints`: where a model answers and how it is asked; the key is never stored, only the name of the variable it
is read from at call time. `generations`: one per (dataset, model name) whose responses an endpoint generated,
with its signature (served model, host, template hashes, sampling, seed, version) and its progress; a re-run with
the same signature resumes it. `generated`: per reply, why it is not a plain one (empty, cut by the length limit,
refused by the server, cut by the client's limits), so a count stands beside the model instead of silent blanks."""

VERSION = 17

SQL = """
CREATE TABLE endpoints (
    name        VARCHAR PRIMARY KEY,
    base_url    VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,      -- the name the server serves
    api_key_env VARCHAR,               -- the variable the key is read from at call time (never the key)
    temperature DOUBLE,
    top_p       DOUBLE,
    max_tokens  INTEGER NOT NULL,
    seed        INTEGER,
    timeout     DOUBLE NOT NULL,
    concurrency INTEGER NOT NULL,
    template    VARCHAR,               -- a template name or file for this endpoint (NULL: the skill's own)
    added_by    VARCHAR,
    added_at    TIMESTAMP NOT NULL
);

CREATE TABLE generations (
    generation_id INTEGER PRIMARY KEY,
    dataset       VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,    -- the name the replies are stored under
    endpoint      VARCHAR NOT NULL,    -- the registered endpoint's name when it ran
    tracks        VARCHAR NOT NULL,    -- JSON list
    signature     VARCHAR NOT NULL,
    details       VARCHAR NOT NULL,    -- JSON: the signature's parts as fields, the templates' full hashes
    submission_id INTEGER NOT NULL,
    state         VARCHAR NOT NULL CHECK (state IN ('running', 'stopped', 'done')),
    total         INTEGER NOT NULL,    -- items to answer
    stored        INTEGER NOT NULL DEFAULT 0,
    failed        INTEGER NOT NULL DEFAULT 0,   -- items the last run could not get a reply for (resumable)
    detail        VARCHAR,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP,
    pid           INTEGER,
    host          VARCHAR,
    UNIQUE (dataset, model)
);

CREATE TABLE generated (
    dataset       VARCHAR NOT NULL,
    item_id       VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,
    generation_id INTEGER NOT NULL,
    flag          VARCHAR,             -- NULL, 'empty', 'length', 'refused', 'cut'
    finish        VARCHAR,             -- the server's finish_reason ('cut': the client stopped reading)
    attempts      INTEGER,
    seconds       DOUBLE,
    PRIMARY KEY (dataset, item_id, model)
);
"""
