"""Jobs: work the dashboard starts and finishes without the user waiting on the page (scoring an
upload). The store records each job's plan, state and progress, so any page or `evalcore jobs`
can show it, and a job cut short by a server restart shows up as interrupted."""

VERSION = 5

SQL = """
CREATE TABLE jobs (
    job_id      INTEGER PRIMARY KEY,
    kind        VARCHAR NOT NULL,     -- 'score'
    dataset     VARCHAR NOT NULL,
    model       VARCHAR,              -- the model the job is for, when one
    steps       VARCHAR NOT NULL,     -- JSON list: {track, flavor, tokenizer, metrics}
    state       VARCHAR NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
    progress    DOUBLE NOT NULL DEFAULT 0,   -- 0..1
    detail      VARCHAR,              -- the step under way, or the outcome
    created_at  TIMESTAMP NOT NULL,
    finished_at TIMESTAMP,
    pid         INTEGER,              -- the process running it (a dead pid: interrupted)
    host        VARCHAR
);
"""
