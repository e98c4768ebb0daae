"""Annotators as people, not typed names: one person's ratings stay one person's however the name is typed.

`annotators`: one row per person who rates in the store's tasks, across all its tasks. Two names are one
person when their keys are equal (evalcore.core.text.identity_key: NFKC, casefolded, whitespace made one
space), so 'Carol' and 'ＣＡＲＯＬ' are carol. Without a sign-in, a person proves who they are with a personal
key issued at their first entry; only its sha256 is stored (a 128-bit random key needs no slow hash).

A person rates a response on a dimension once (a ratings file cannot do otherwise, and a task now refuses
it). Ratings and votes that tasks wrote before this rule, where the same person (by key) had already rated
that response or voted on that pair on that dimension elsewhere, are set aside here, restorable like any
other set-aside rows (`evalcore restore <submission>`): the rating that was there first stays (an imported
one before a task's; between tasks, the one first given).

A skip now gives the unit up, and the answers given on it before stop counting (before, a skip let another
take the place while those answers still counted: K was exceeded that way). The ratings and votes such an
earlier skip withdraws are set aside under the same submission, so the store says what the tasks say."""
from __future__ import annotations

import json
from datetime import datetime

import pandas as pd

from evalcore.core.text import identity_key
from evalcore.store.transactions import next_id

VERSION = 16

SQL = """
CREATE TABLE annotators (
    key         VARCHAR PRIMARY KEY,   -- identity_key of the name: what two names are compared by
    name        VARCHAR NOT NULL,      -- the name as first given (normal form): what their answers carry
    secret      VARCHAR,               -- sha256 (hex) of their personal key; NULL for a signed-in person
    signed_in   BOOLEAN NOT NULL,      -- who they are comes from the deployment's sign-in, not from a key
    created_at  TIMESTAMP NOT NULL,
    secret_at   TIMESTAMP              -- when their current personal key was issued (first entry or a reset)
);
"""

# Per table: the rows of task origin that may repeat another row of the same person, how a repeat is
# recognised (besides the person), and the archive it goes to.
RATINGS = """
    WITH t AS (SELECT DISTINCT dataset, item_id, model, dimension FROM human_ratings
               WHERE target = 'response' AND origin LIKE 'task:%')
    SELECT h.rowid AS rid, h.dataset, h.item_id, h.model AS pair, h.dimension, h.annotator AS person, h.origin,
           (SELECT min(a.given_at) FROM task_answers a JOIN task_units u USING (task_id, unit)
            WHERE h.origin = 'task:' || a.task_id AND u.item_id = h.item_id AND u.model_a = h.model
              AND a.annotator = h.annotator AND a.dimension = h.dimension AND a.kind = 'rating') AS first_at
    FROM human_ratings h JOIN t USING (dataset, item_id, model, dimension) WHERE h.target = 'response'"""
VOTES = """
    WITH t AS (SELECT DISTINCT dataset, item_id, least(model_1, model_2) AS lo, greatest(model_1, model_2) AS hi,
                      dimension FROM pairwise_judgments WHERE source = 'human' AND prompt LIKE 'task:%')
    SELECT j.rowid AS rid, j.dataset, j.item_id, t.lo || chr(31) || t.hi AS pair, j.dimension, j.judge AS person,
           j.prompt AS origin,
           (SELECT min(a.given_at) FROM task_answers a JOIN task_units u USING (task_id, unit)
            WHERE j.prompt = 'task:' || a.task_id AND u.item_id = j.item_id AND u.model_a = j.model_1
              AND u.model_b = j.model_2 AND a.annotator = j.judge AND a.dimension = j.dimension
              AND a.kind = 'vote') AS first_at
    FROM pairwise_judgments j JOIN t ON t.dataset = j.dataset AND t.item_id = j.item_id
         AND t.lo = least(j.model_1, j.model_2) AND t.hi = greatest(j.model_1, j.model_2) AND t.dimension = j.dimension
    WHERE j.source = 'human'"""


# Rows a later skip of the same person on the same unit withdraws (their last answer on that dimension came
# before the skip).
SKIPPED = """
    WITH s AS (SELECT task_id, unit, annotator, max(answer_id) AS skip_id FROM task_answers WHERE kind = 'skip'
               GROUP BY ALL),
         l AS (SELECT task_id, unit, annotator, dimension, max(answer_id) AS last_id FROM task_answers
               WHERE kind = '{kind}' GROUP BY ALL)
    SELECT t.rowid FROM {table} t
    JOIN task_units u ON t.{origin} = 'task:' || u.task_id AND u.item_id = t.item_id AND {models}
    JOIN l ON l.task_id = u.task_id AND l.unit = u.unit AND l.annotator = t.{person} AND l.dimension = t.dimension
    JOIN s ON s.task_id = u.task_id AND s.unit = u.unit AND s.annotator = t.{person}
    WHERE s.skip_id > l.last_id"""


def withdrawn(con) -> dict[str, list[int]]:
    """The rowids of ratings and votes an earlier skip withdraws, per table."""
    return {
        "human_ratings": [r for (r,) in con.execute(SKIPPED.format(
            kind="rating", table="human_ratings", origin="origin", person="annotator",
            models="u.model_a = t.model AND t.target = 'response'")).fetchall()],
        "pairwise_judgments": [r for (r,) in con.execute(SKIPPED.format(
            kind="vote", table="pairwise_judgments", origin="prompt", person="judge",
            models="u.model_a = t.model_1 AND u.model_b = t.model_2 AND t.source = 'human'")).fetchall()]}


def repeats(frame: pd.DataFrame) -> list[int]:
    """The rowids of task rows that repeat an earlier row of the same person: per (dataset, item, model or
    pair, dimension, person key), every task row but the first (a row of another origin first, then the
    earliest given)."""
    if frame.empty:
        return []
    frame = frame.assign(who=frame["person"].map(identity_key), task=frame["origin"].str.startswith("task:"),
                         first_at=pd.to_datetime(frame["first_at"]).fillna(pd.Timestamp.max))
    frame = frame.sort_values(["task", "first_at", "origin", "rid"], kind="stable")
    later = frame.duplicated(["dataset", "item_id", "pair", "dimension", "who"], keep="first") & frame["task"]
    return [int(r) for r in frame.loc[later, "rid"]]


def run(con) -> None:
    skipped = withdrawn(con)
    found = {table: sorted(set(repeats(con.execute(sql).df())) | set(skipped[table]))
             for table, sql in (("human_ratings", RATINGS), ("pairwise_judgments", VOTES))}
    if not any(found.values()):
        return
    sid = next_id(con, "submissions", "submission_id")
    # a 'delete' whose scope sets nothing else aside when restored: `restore` brings these rows back as they were
    scope = {"responses": False, "ratings": "none", "scores": "none"}
    datasets = sorted({d for (d,) in con.execute(
        "SELECT DISTINCT dataset FROM human_ratings WHERE list_contains(?, rowid) UNION "
        "SELECT DISTINCT dataset FROM pairwise_judgments WHERE list_contains(?, rowid)",
        [found["human_ratings"], found["pairwise_judgments"]]).fetchall()})
    con.execute("INSERT INTO submissions (submission_id, kind, dataset, models, tracks, file, rows_written, scope, "
                "uploader, created_at) VALUES (?, 'delete', ?, '[]', '[]', ?, ?, ?, 'evalcore', ?)",
                [sid, datasets[0] if len(datasets) == 1 else None,
                 "migration 16: a person's second rating of a response (or vote on a pair) through another task, and "
                 "answers an earlier skip withdraws",
                 json.dumps({t: len(r) for t, r in found.items()}), json.dumps(scope),
                 datetime.now().replace(microsecond=0)])
    for table, archive in (("human_ratings", "archived_ratings"), ("pairwise_judgments", "archived_judgments")):
        if found[table]:
            con.execute(f"INSERT INTO {archive} BY NAME SELECT * EXCLUDE (rowid), ? AS archived_by FROM "
                        f"(SELECT rowid, * FROM {table}) WHERE list_contains(?, rowid)", [sid, found[table]])
            con.execute(f"DELETE FROM {table} WHERE list_contains(?, rowid)", [found[table]])
