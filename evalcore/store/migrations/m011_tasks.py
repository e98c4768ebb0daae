"""Human evaluation inside the tool: rating tasks, what each one asks people to rate (its units), and every
answer an annotator gave, append-only (a change is a new row; the latest per unit, annotator and dimension
counts). An absolute task's latest answers are also human ratings (origin 'task:<id>'), so leaderboards,
correlations and trust use them at once; a pairwise task's latest votes are pairwise judgments.

pairwise_judgments gets a `dimension` (the question asked: 'overall' for MT-Bench's judges) and a `source`
('judge', or 'human' for people's votes), in its key, so one annotator's votes on several questions about
the same pair are kept apart. The table is rebuilt to change its key; every row is kept as it was. Votes set
aside (a deleted task's) wait in archived_judgments, as ratings do in archived_ratings, for `restore`."""

VERSION = 11

SQL = """
CREATE TABLE tasks (
    task_id      INTEGER PRIMARY KEY,
    name         VARCHAR NOT NULL,
    dataset      VARCHAR NOT NULL,
    mode         VARCHAR NOT NULL CHECK (mode IN ('absolute', 'pairwise')),
    dimensions   VARCHAR NOT NULL,   -- JSON list: {dimension, min, max, description, question}
    per_item     INTEGER NOT NULL,   -- K: different annotators per unit
    ties         BOOLEAN NOT NULL,   -- pairwise: whether "tie" is an answer
    guidelines   VARCHAR,
    seed         INTEGER NOT NULL,
    sampling     VARCHAR NOT NULL,   -- stratified | disagreement
    access_code  VARCHAR NOT NULL,   -- what an annotator gives with their name where no sign-in is configured
    state        VARCHAR NOT NULL CHECK (state IN ('open', 'closed', 'deleted')),
    created_by   VARCHAR,
    created_at   TIMESTAMP NOT NULL,
    deleted_by   INTEGER             -- the submission that set its ratings aside (restore brings them back)
);

CREATE TABLE task_units (
    task_id  INTEGER NOT NULL,
    unit     INTEGER NOT NULL,        -- 1..n in the task's sampled order
    item_id  VARCHAR NOT NULL,
    track    VARCHAR NOT NULL,
    model_a  VARCHAR NOT NULL,        -- absolute: the rated model
    model_b  VARCHAR,                 -- pairwise: the other model
    PRIMARY KEY (task_id, unit)
);

CREATE TABLE task_answers (
    answer_id  INTEGER PRIMARY KEY,
    task_id    INTEGER NOT NULL,
    unit       INTEGER NOT NULL,
    annotator  VARCHAR NOT NULL,
    dimension  VARCHAR,               -- NULL for a skip or a flag of the whole unit
    value      DOUBLE,                -- absolute: the score; pairwise: 1 model_a, 0 model_b, 0.5 tie
    kind       VARCHAR NOT NULL CHECK (kind IN ('claim', 'rating', 'vote', 'skip', 'flag')),  -- claim: the unit shown
    comment    VARCHAR,
    seconds    DOUBLE,                -- from the unit being shown to this answer
    given_at   TIMESTAMP NOT NULL
);

CREATE TABLE pairwise_judgments_v11 (
    dataset     VARCHAR NOT NULL,
    track       VARCHAR NOT NULL,
    item_id     VARCHAR NOT NULL,
    model_1     VARCHAR NOT NULL,
    model_2     VARCHAR NOT NULL,
    judge       VARCHAR NOT NULL,     -- the judge model, e.g. gpt-4; for people: the annotator
    prompt      VARCHAR NOT NULL,     -- the judge prompt's name, e.g. pair-v2; for people: task:<id> or the votes file
    g1_winner   VARCHAR NOT NULL CHECK (g1_winner IN ('model_1', 'model_2', 'tie', 'error')),
    g2_winner   VARCHAR NOT NULL CHECK (g2_winner IN ('model_1', 'model_2', 'tie', 'error')),
    origin      VARCHAR,              -- file and line
    dimension   VARCHAR NOT NULL DEFAULT 'overall',
    source      VARCHAR NOT NULL DEFAULT 'judge' CHECK (source IN ('judge', 'human')),
    PRIMARY KEY (dataset, item_id, model_1, model_2, judge, prompt, dimension)
);
INSERT INTO pairwise_judgments_v11 BY NAME SELECT * FROM pairwise_judgments;
DROP TABLE pairwise_judgments;
ALTER TABLE pairwise_judgments_v11 RENAME TO pairwise_judgments;
CREATE TABLE archived_judgments AS SELECT *, NULL::INTEGER AS archived_by FROM pairwise_judgments LIMIT 0;
"""
