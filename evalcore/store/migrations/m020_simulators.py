"""Simulated users (evalcore.simulation): a simulator is a registered endpoint that plays the user, with a user-role
template (per skill and language, shipped or a file), a persona style, sampling and a seed. A chat task may hold
conversations by people, by simulators, or by both on the same scenarios with the same systems: a conversation
held by a simulator names it (`simulator`; NULL: a person's), and the task keeps each simulator's settings and
signature as it was when the task was made (`simulators`, JSON like `settings`), so every simulated conversation
carries how its user was played. `chat_judgments`: a judge's rating of a whole conversation on one dimension (not the
mean of its turns), kept apart from the ratings of whoever held it. The statements are idempotent: a store migrated again from an older version
(a test that rewinds schema_version) meets them a second time."""
VERSION = 20

SQL = """
CREATE TABLE IF NOT EXISTS simulators (
    name        VARCHAR PRIMARY KEY,
    key         VARCHAR NOT NULL,     -- the name's identity key: look-alike names are refused as taken
    endpoint    VARCHAR NOT NULL,     -- the registered endpoint that plays the user
    style       VARCHAR NOT NULL,     -- cooperative, terse, impatient, withholding, off-topic
    template    VARCHAR,              -- a shipped user template's name or a file's path; NULL: the skill's own
    seed        INTEGER NOT NULL,
    created_by  VARCHAR,
    created_at  TIMESTAMP NOT NULL
);
ALTER TABLE chat_tasks ADD COLUMN IF NOT EXISTS simulators VARCHAR DEFAULT '{}';
ALTER TABLE chat_tasks ADD COLUMN IF NOT EXISTS people BOOLEAN DEFAULT true;
ALTER TABLE chat_conversations ADD COLUMN IF NOT EXISTS simulator VARCHAR;
CREATE TABLE IF NOT EXISTS chat_judgments (
    conversation_id INTEGER NOT NULL,
    judge       VARCHAR NOT NULL,     -- the registered endpoint that judged
    signature   VARCHAR NOT NULL,     -- served model, host, sampling, prompt kind and template hash, language
    dimension   VARCHAR NOT NULL,
    value       DOUBLE,               -- NULL: the judge gave no usable rating (reason says why)
    reason      VARCHAR,
    given_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (conversation_id, signature, dimension)
);
"""
