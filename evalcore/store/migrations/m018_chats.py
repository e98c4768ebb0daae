"""Live conversations between people and blind models (MSDE §3.1), and whole dialogues as rating units.

`chat_tasks`: a task's scenarios come from one track's stored dialogues (their grounding, the user's side of it
shown to the person); each (scenario, endpoint) is talked through `per_scenario` times, each time by a different
person. `chat_conversations`: one row per such conversation, unassigned until someone is given it; a conversation
sent back by a reviewer stays as it was and a fresh one takes its place. `chat_messages`: every message as it was
sent or received, each written in its own short transaction, so nothing said is lost to a closed tab or a crash.
`chat_ratings` and `chat_flags`: a person's ratings of the whole dialogue and flags on single turns, append-only
(the latest counts). A conversation becomes a dialogue of the task's own dataset (turns, one item per model turn,
the endpoint's replies as responses, the ratings as dialogue-level human ratings) when it is accepted.

Rating tasks gain a level: 'dialogue' units are whole conversations (item_id holds the dialogue id; a pairwise
unit, ACUTE-Eval's, holds two dialogues on the same scenario in dialogue_a and dialogue_b)."""

VERSION = 18

SQL = """
CREATE TABLE chat_tasks (
    task_id      INTEGER PRIMARY KEY,
    name         VARCHAR NOT NULL,
    dataset      VARCHAR NOT NULL,    -- where the scenarios come from
    track        VARCHAR NOT NULL,
    target       VARCHAR NOT NULL,    -- the dataset accepted conversations become dialogues of
    endpoints    VARCHAR NOT NULL,    -- JSON list of registered endpoint names (the models' names in `target`)
    settings     VARCHAR NOT NULL,    -- JSON per endpoint: URL, served model, sampling, template and its sha256
    per_scenario INTEGER NOT NULL,    -- K: conversations per (scenario, endpoint), each by a different person
    max_rounds   INTEGER NOT NULL,    -- a round: the person's message and the model's reply
    dimensions   VARCHAR NOT NULL,    -- JSON list: {dimension, min, max, description, question}
    flags        VARCHAR NOT NULL,    -- JSON list of per-turn flags a person may set ("contradiction", ...)
    guidelines   VARCHAR,
    seed         INTEGER NOT NULL,
    review       BOOLEAN NOT NULL,    -- a reviewer accepts a conversation before it counts (else it counts once rated)
    access_code  VARCHAR NOT NULL,
    state        VARCHAR NOT NULL CHECK (state IN ('open', 'closed', 'deleted')),
    created_by   VARCHAR,
    created_at   TIMESTAMP NOT NULL
);

CREATE TABLE chat_scenarios (
    task_id     INTEGER NOT NULL,
    scenario    INTEGER NOT NULL,     -- 1..n in the task's sampled order
    dialogue_id VARCHAR NOT NULL,     -- the stored dialogue it was drawn from
    grounding   VARCHAR NOT NULL,     -- JSON object: what the model's template receives
    opening     VARCHAR,              -- chit-chat: the stored dialogue's first utterance, offered to start with
    PRIMARY KEY (task_id, scenario)
);

CREATE TABLE chat_conversations (
    conversation_id INTEGER PRIMARY KEY,
    task_id     INTEGER NOT NULL,
    scenario    INTEGER NOT NULL,
    endpoint    VARCHAR NOT NULL,
    slot        INTEGER NOT NULL,     -- 1..K
    annotator   VARCHAR,              -- the person's name (normal form) once assigned
    person      VARCHAR,              -- their identity key: what "a different person" is checked by
    state       VARCHAR NOT NULL CHECK (state IN ('open', 'talking', 'ended', 'rated', 'accepted', 'sent_back')),
    goal        BOOLEAN,              -- the person's answer: was the scenario's goal reached
    reason      VARCHAR,              -- a reviewer's reason for sending it back
    reviewer    VARCHAR,
    dialogue_id VARCHAR,              -- in the task's target dataset, once accepted
    assigned_at TIMESTAMP,
    ended_at    TIMESTAMP,
    reviewed_at TIMESTAMP
);

CREATE TABLE chat_messages (
    conversation_id INTEGER NOT NULL,
    idx         INTEGER NOT NULL,     -- 0.. in order; a user message and the reply to it are idx and idx + 1
    role        VARCHAR NOT NULL CHECK (role IN ('user', 'assistant')),
    text        VARCHAR NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    attempts    INTEGER,              -- assistant: requests it took
    finish      VARCHAR,              -- assistant: the server's finish_reason ('cut': the client stopped reading)
    seconds     DOUBLE,               -- assistant: from the request to the last piece
    PRIMARY KEY (conversation_id, idx)
);

CREATE TABLE chat_ratings (
    rating_id       INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL,
    annotator   VARCHAR NOT NULL,
    dimension   VARCHAR NOT NULL,
    value       DOUBLE NOT NULL,
    given_at    TIMESTAMP NOT NULL
);

CREATE TABLE chat_flags (
    flag_id         INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL,
    idx         INTEGER NOT NULL,     -- the flagged model message
    annotator   VARCHAR NOT NULL,
    flag        VARCHAR NOT NULL,
    value       BOOLEAN NOT NULL,     -- set or cleared (append-only: the latest counts)
    given_at    TIMESTAMP NOT NULL
);

ALTER TABLE tasks ADD COLUMN level VARCHAR DEFAULT 'response';
ALTER TABLE task_units ADD COLUMN dialogue_a VARCHAR;
ALTER TABLE task_units ADD COLUMN dialogue_b VARCHAR;
"""
