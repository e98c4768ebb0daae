"""Crowd studies (issue 65): a rating task (`kind` 'rating'; a chat task: 'chat') opened for a crowd platform (Prolific, MTurk or another), its workers,
their comprehension checks, the task's gold units, and the decisions that exclude a worker or put them back.

`crowd_studies`: one row per task opened for a platform: the codes a worker gets at the end, where they go back, the
units one worker rates (gold included), the gold units among them, the stated pay, the pass rule (JSON), and the
task's salt: a worker's platform identifier is stored once, in `crowd_workers.platform_id`, and every other place
(their answers, logs, pages for readers) carries only a pseudonym made from its salted hash.

`crowd_workers`: one row per worker who entered, keyed by that hash; the platform's study id as given (not personal);
the session's and the client's salted hashes (a second identity from one browser is refused); the outcome.

`crowd_questions` / `crowd_attempts`: the comprehension questions a worker answers before real work (two attempts).

`gold_units`: a task's units with a known answer (`expected`: {dimension: [low, high]}), shown like any other; their
`response` is the text shown in place of a model's (a nonsense reply, the knowledge copied), `why` says what it
checks. Their answers never become human ratings.

`crowd_instructions`: a chat study's instruction checks: a sentence shown inside the scenario of the conversations at
a worker's gold places (like any line of the scenario), and the word one of their messages there must contain.

`crowd_decisions`: every exclusion and putting back, with who decided and why; the latest per worker holds.
`excluded_ratings` / `excluded_judgments`: an excluded worker's ratings (votes) of the task, moved out of human_ratings (agreement, Metric trust
and results no longer read them) with the decision that moved them; putting the worker back moves them in again."""
VERSION = 23

SQL = """
CREATE TABLE IF NOT EXISTS crowd_studies (
    kind            VARCHAR NOT NULL DEFAULT 'rating' CHECK (kind IN ('rating', 'chat')),   -- which table task_id is of
    task_id         INTEGER NOT NULL,
    platform        VARCHAR NOT NULL CHECK (platform IN ('prolific', 'mturk', 'generic')),
    completion_code VARCHAR NOT NULL,
    failed_code     VARCHAR,
    redirect        VARCHAR,            -- where a worker goes back at the end ({code} stands for their code)
    salt            VARCHAR NOT NULL,   -- hex: the key of this task's identifier hashes
    units           INTEGER NOT NULL,   -- units one worker rates, gold ones included
    gold            INTEGER NOT NULL,   -- gold units among a worker's units
    pay             DOUBLE,             -- the task's stated payment per worker
    currency        VARCHAR,
    pass_rule       VARCHAR NOT NULL,   -- JSON: gold_min, comprehension, too_fast_max, straight_lining, identity
    created_at      TIMESTAMP NOT NULL,
    PRIMARY KEY (kind, task_id)
);
CREATE TABLE IF NOT EXISTS crowd_workers (
    kind         VARCHAR NOT NULL DEFAULT 'rating',
    task_id      INTEGER NOT NULL,
    worker       VARCHAR NOT NULL,      -- HMAC-SHA256 (hex) of the platform's worker identifier, keyed by the salt
    annotator    VARCHAR NOT NULL,      -- the pseudonym their answers carry: <platform>-<first hex digits of worker>
    platform_id  VARCHAR NOT NULL,      -- the identifier itself: shown to write access only, exported only on request
    study        VARCHAR,               -- the platform's study (HIT) id as the link gave it
    session      VARCHAR,               -- HMAC of the platform's session (assignment) id
    client       VARCHAR,               -- HMAC of the address and browser they entered from
    entered_at   TIMESTAMP NOT NULL,
    finished_at  TIMESTAMP,
    outcome      VARCHAR NOT NULL CHECK (outcome IN ('working', 'passed', 'failed')),
    other_identity INTEGER NOT NULL DEFAULT 0,   -- entries refused from their browser under another identifier
    PRIMARY KEY (kind, task_id, worker)
);
CREATE TABLE IF NOT EXISTS crowd_questions (
    kind         VARCHAR NOT NULL DEFAULT 'rating',
    task_id      INTEGER NOT NULL,
    question_no  INTEGER NOT NULL,
    question     VARCHAR NOT NULL,
    options      VARCHAR NOT NULL,      -- JSON list of the answers offered
    answer       INTEGER NOT NULL,      -- 0-based index of the right one
    PRIMARY KEY (kind, task_id, question_no)
);
CREATE TABLE IF NOT EXISTS crowd_attempts (
    kind         VARCHAR NOT NULL DEFAULT 'rating',
    task_id   INTEGER NOT NULL,
    worker    VARCHAR NOT NULL,
    attempt   INTEGER NOT NULL,
    passed    BOOLEAN NOT NULL,
    answers   VARCHAR NOT NULL,         -- JSON list of the chosen indexes
    given_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (kind, task_id, worker, attempt)
);
CREATE TABLE IF NOT EXISTS gold_units (
    task_id   INTEGER NOT NULL,
    unit      INTEGER NOT NULL,
    response  VARCHAR,
    expected  VARCHAR NOT NULL,         -- JSON {dimension: [low, high]}
    why       VARCHAR NOT NULL,         -- nonsense | copies-knowledge | custom
    PRIMARY KEY (task_id, unit)
);
CREATE TABLE IF NOT EXISTS crowd_instructions (
    kind           VARCHAR NOT NULL DEFAULT 'chat',
    task_id        INTEGER NOT NULL,
    instruction_no INTEGER NOT NULL,
    text           VARCHAR NOT NULL,    -- shown inside the scenario, as one of its lines
    expect         VARCHAR NOT NULL,    -- the word a message of theirs in that conversation contains (NFKC, case-folded)
    PRIMARY KEY (kind, task_id, instruction_no)
);
CREATE TABLE IF NOT EXISTS crowd_decisions (
    decision_id  INTEGER PRIMARY KEY,
    kind         VARCHAR NOT NULL DEFAULT 'rating',
    task_id      INTEGER NOT NULL,
    annotator    VARCHAR NOT NULL,
    excluded     BOOLEAN NOT NULL,
    reason       VARCHAR NOT NULL,
    decided_by   VARCHAR NOT NULL,      -- 'pass rule' or a person
    decided_at   TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS excluded_ratings AS SELECT *, NULL::INTEGER AS decision_id FROM human_ratings LIMIT 0;
CREATE TABLE IF NOT EXISTS excluded_judgments AS SELECT *, NULL::INTEGER AS decision_id FROM pairwise_judgments LIMIT 0;
"""
