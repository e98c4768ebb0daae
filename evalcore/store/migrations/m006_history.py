"""History instead of overwrite: every import is a submission (when, which file and its sha256, what
it wrote, who); rows a later import replaces, or `delete-model` removes, are set aside in archive
tables under the submission that set them aside, and come back with `restore` until `purge`."""

VERSION = 6

SQL = """
CREATE TABLE submissions (
    submission_id INTEGER PRIMARY KEY,
    kind          VARCHAR NOT NULL,     -- import, replace, delete, restore
    dataset       VARCHAR,
    models        VARCHAR,              -- JSON list
    tracks        VARCHAR,              -- JSON list
    file          VARCHAR,
    sha256        VARCHAR,
    rows_written  VARCHAR,              -- JSON: table -> rows
    scope         VARCHAR,              -- JSON: which rows a replace/delete set aside (for restore)
    uploader      VARCHAR,
    created_at    TIMESTAMP NOT NULL,
    restores      INTEGER,              -- restore: the submission whose set-aside rows came back
    restored_by   INTEGER,              -- replace/delete: the restore that undid it
    purged_at     TIMESTAMP
);
ALTER TABLE responses ADD COLUMN submission_id INTEGER;
CREATE TABLE archived_responses AS SELECT *, NULL::INTEGER AS archived_by FROM responses LIMIT 0;
CREATE TABLE archived_ratings AS SELECT *, NULL::INTEGER AS archived_by FROM human_ratings LIMIT 0;
CREATE TABLE archived_scores AS SELECT *, NULL::INTEGER AS archived_by FROM system_scores LIMIT 0;
"""
