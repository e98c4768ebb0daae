"""Crowd studies as stored (migration 23): a rating or chat task opened for a crowd platform, its workers, comprehension
questions and attempts, gold units, and the decisions that exclude a worker or put them back.

A worker is one annotator by their platform identifier. The identifier is personal data: it is stored once
(`crowd_workers.platform_id`, for whoever runs the study: approving and paying on the platform needs it), and
everything else carries a pseudonym made from its salted hash (HMAC-SHA256 keyed by the task's own salt, so the same
worker in two tasks has two unrelated pseudonyms, and a pseudonym cannot be turned back into the identifier without
the store). The session's and the browser's hashes let a second identity from one browser be refused.

Every write here is one transaction, written when given."""
from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime

import duckdb
import pandas as pd

from evalcore.core.i18n import _
from evalcore.core.options import CROWD_GOLD_KINDS, CROWD_PLATFORMS, CROWD_RULE
from evalcore.core.text import bad_character, identity_key
from evalcore.store.tasks import GOLD_MODEL
from evalcore.store.transactions import bump_revision, next_id, transaction

PLATFORMS = CROWD_PLATFORMS
GOLD_KINDS = CROWD_GOLD_KINDS
ATTEMPTS = 2                 # tries a worker has at the comprehension questions
MAX_CODE = 64                # characters of a completion code
CODE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# The pass rule a study starts with: gold answers within their range on at least gold_min of the worker's gold
# units, the comprehension questions passed, at most too_fast_max of answers faster than reading allows, no
# straight-lining, no second identity tried from their browser.
RULE = CROWD_RULE


class Refused(ValueError):
    """An entry, an answer or a setting refused, with the sentence that says why."""


@dataclass(frozen=True)
class Study:
    task_id: int
    platform: str
    completion_code: str
    failed_code: str | None
    redirect: str | None
    units: int
    gold: int
    pay: float | None
    currency: str | None
    pass_rule: dict = field(default_factory=dict)
    kind: str = "rating"


def _salt(con, kind: str, task_id: int) -> str:
    row = con.execute("SELECT salt FROM crowd_studies WHERE kind = ? AND task_id = ?", [kind, task_id]).fetchall()
    if not row:
        raise Refused(_("Task {task} is not open to a crowd platform.").format(task=task_id))
    return row[0][0]


def hashed(salt: str, value: str) -> str:
    """The keyed hash (hex) an identifier is known by in this task."""
    return hmac.new(bytes.fromhex(salt), value.encode("utf-8"), hashlib.sha256).hexdigest()


def check_code(code: str | None, what: str) -> str | None:
    if code is None:
        return None
    code = code.strip()
    if not CODE.match(code):
        raise Refused(_("The {what} is 1 to {most} letters, digits, '-' or '_', got {got}.").format(
            what=what, most=MAX_CODE, got=repr(code)))
    return code


def open_study(con: duckdb.DuckDBPyConnection, task_id: int, *, platform: str, completion_code: str,
               failed_code: str | None = None, redirect: str | None = None, units: int, gold: int = 0,
               pay: float | None = None, currency: str | None = None, pass_rule: dict | None = None,
               kind: str = "rating", now: datetime | None = None) -> Study:
    """Open a task to a crowd platform (once; its settings are fixed once workers may have seen them)."""
    if platform not in PLATFORMS:
        raise Refused(_("The platform is one of {known}, got {got}.").format(known=", ".join(PLATFORMS),
                                                                              got=repr(platform)))
    completion_code = check_code(completion_code, _("completion code"))
    failed_code = check_code(failed_code, _("code for a failed check"))
    if failed_code is not None and failed_code == completion_code:
        raise Refused(_("The code for a failed check must differ from the completion code."))
    if redirect is not None and not re.match(r"^https://[^\s<>\"']+$", redirect.strip()):
        raise Refused(_("The redirect is an https:// address, got {got}.").format(got=repr(redirect)))
    if units < 1:
        raise Refused(_("A worker rates at least one unit, got {n}.").format(n=units))
    if kind == "chat" and not 0 <= gold <= units:   # a chat's check rides on a real conversation: any of theirs
        raise Refused(_("Conversations with an instruction check per worker are from 0 to the conversations per "
                        "worker ({units}), got {n}.").format(units=units, n=gold))
    if kind != "chat" and not 0 <= gold < units:
        raise Refused(_("Gold units per worker are from 0 to one less than the units per worker ({units}), got "
                        "{n}.").format(units=units, n=gold))
    if pay is not None and pay < 0:
        raise Refused(_("The pay is a positive amount, got {pay}.").format(pay=pay))
    rule = {**RULE, **(pass_rule or {})}
    unknown = set(rule) - set(RULE)
    if unknown:
        raise Refused(_("The pass rule knows {known}; unknown: {unknown}.").format(
            known=", ".join(RULE), unknown=", ".join(sorted(unknown))))
    with transaction(con):
        if con.execute("SELECT count(*) FROM crowd_studies WHERE kind = ? AND task_id = ?",
                       [kind, task_id]).fetchall()[0][0]:
            raise Refused(_("Task {task} is open to a crowd platform already.").format(task=task_id))
        bump_revision(con)
        con.execute("INSERT INTO crowd_studies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [kind, task_id, platform, completion_code, failed_code, redirect and redirect.strip(),
                     secrets.token_hex(16), units, gold, pay, currency, json.dumps(rule),
                     (now or datetime.now()).replace(microsecond=0)])
    return study(con, task_id, kind)


def study(con: duckdb.DuckDBPyConnection, task_id: int, kind: str = "rating") -> Study | None:
    row = con.execute("SELECT task_id, platform, completion_code, failed_code, redirect, units, gold, pay, currency, "
                      "pass_rule FROM crowd_studies WHERE kind = ? AND task_id = ?", [kind, task_id]).fetchall()
    if not row:
        return None
    *head, rule = row[0]
    return Study(*head, pass_rule=json.loads(rule), kind=kind)


# ---------------------------------------------------------------- workers
@dataclass(frozen=True)
class Worker:
    worker: str        # the keyed hash of their identifier
    annotator: str     # the pseudonym their answers carry
    outcome: str       # working | passed | failed
    new: bool          # entered now for the first time


def pseudonym(platform: str, worker: str) -> str:
    return f"{platform}-{worker[:12]}"


def enter(con: duckdb.DuckDBPyConnection, study: Study, *, worker_id: str, study_id: str | None,
          session_id: str | None, client: str | None, now: datetime | None = None) -> Worker:
    """The worker by their identifier: the one who entered before (resumed), or a new one. A new identifier from a
    browser (client) or a platform session that already entered as another worker is refused, and counted on that
    worker (the pass rule's `identity`): editing the link does not make a second person."""
    now = (now or datetime.now()).replace(microsecond=0)
    salt = _salt(con, study.kind, study.task_id)
    worker = hashed(salt, worker_id)
    session = hashed(salt, session_id) if session_id else None
    browser = hashed(salt, client) if client else None
    with transaction(con):
        row = con.execute("SELECT annotator, outcome FROM crowd_workers WHERE kind = ? AND task_id = ? AND worker = ?",
                          [study.kind, study.task_id, worker]).fetchall()
        if row:
            return Worker(worker, row[0][0], row[0][1], False)
        other = con.execute("""
            SELECT worker FROM crowd_workers WHERE kind = ? AND task_id = ?
              AND ((? IS NOT NULL AND client = ?) OR (? IS NOT NULL AND session = ?))
            ORDER BY entered_at LIMIT 1""", [study.kind, study.task_id, browser, browser, session, session]).fetchall()
        if not other:
            annotator = pseudonym(study.platform, worker)
            con.execute("INSERT INTO crowd_workers (kind, task_id, worker, annotator, platform_id, study, session, "
                        "client, entered_at, finished_at, outcome, other_identity) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
                        "NULL, 'working', 0)", [study.kind, study.task_id, worker, annotator, worker_id, study_id,
                                                session, browser, now])
            # the pseudonym is a person of the store: a typed entry of that name is refused (annotators.enter)
            con.execute("INSERT OR IGNORE INTO annotators VALUES (?, ?, NULL, false, ?, NULL)",
                        [identity_key(annotator), annotator, now])
            return Worker(worker, annotator, "working", True)
    with transaction(con):   # the refusal is counted on the worker they are (its own write: the refusal stands)
        con.execute("UPDATE crowd_workers SET other_identity = other_identity + 1 WHERE kind = ? AND task_id = ? "
                    "AND worker = ?", [study.kind, study.task_id, other[0][0]])
    raise Refused(_("This browser has taken part in this study as another worker already: one person takes part "
                    "once. If this is a mistake, write to the researchers through the platform."))


def worker(con: duckdb.DuckDBPyConnection, kind: str, task_id: int, worker: str) -> Worker | None:
    row = con.execute("SELECT annotator, outcome FROM crowd_workers WHERE kind = ? AND task_id = ? AND worker = ?",
                      [kind, task_id, worker]).fetchall()
    return Worker(worker, row[0][0], row[0][1], False) if row else None


def workers(con: duckdb.DuckDBPyConnection, kind: str, task_id: int, *, identifiers: bool = False) -> pd.DataFrame:
    """Every worker who entered: pseudonym, outcome, times, refused second identities, excluded or not (and the
    platform identifier only when asked: whoever runs the study, to approve and pay on the platform)."""
    frame = con.execute("""
        SELECT w.annotator, w.outcome, w.entered_at, w.finished_at, w.other_identity, w.study,
               coalesce(d.excluded, false) AS excluded, d.reason, d.decided_by, w.platform_id
        FROM crowd_workers w
        LEFT JOIN (SELECT annotator, arg_max(excluded, decision_id) AS excluded, arg_max(reason, decision_id) AS reason,
                          arg_max(decided_by, decision_id) AS decided_by
                   FROM crowd_decisions WHERE kind = ? AND task_id = ? GROUP BY annotator) d USING (annotator)
        WHERE w.kind = ? AND w.task_id = ? ORDER BY w.entered_at, w.annotator""",
                        [kind, task_id, kind, task_id]).df()
    return frame if identifiers else frame.drop(columns=["platform_id"])


def set_outcome(con: duckdb.DuckDBPyConnection, kind: str, task_id: int, worker: str, outcome: str,
                now: datetime | None = None) -> None:
    with transaction(con):
        con.execute("UPDATE crowd_workers SET outcome = ?, finished_at = coalesce(finished_at, ?) WHERE kind = ? AND "
                    "task_id = ? AND worker = ?", [outcome, (now or datetime.now()).replace(microsecond=0), kind,
                                                   task_id, worker])


# ---------------------------------------------------------------- comprehension questions
def add_question(con: duckdb.DuckDBPyConnection, task_id: int, question: str, options: list[str], answer: int,
                 kind: str = "rating") -> int:
    question = (question or "").strip()
    options = [o.strip() for o in options if o and o.strip()]
    if not question:
        raise Refused(_("A comprehension question needs its text."))
    if len(options) < 2 or len(set(options)) < len(options):
        raise Refused(_("A comprehension question offers at least two different answers."))
    if not 0 <= answer < len(options):
        raise Refused(_("The right answer is one of the options, 1 to {n}.").format(n=len(options)))
    _salt(con, kind, task_id)
    with transaction(con):
        no = con.execute("SELECT coalesce(max(question_no), 0) + 1 FROM crowd_questions WHERE kind = ? AND task_id = ?",
                         [kind, task_id]).fetchall()[0][0]
        con.execute("INSERT INTO crowd_questions VALUES (?, ?, ?, ?, ?, ?)",
                    [kind, task_id, no, question, json.dumps(options, ensure_ascii=False), answer])
    return int(no)


def questions(con: duckdb.DuckDBPyConnection, task_id: int, kind: str = "rating") -> list[tuple[int, str, list[str]]]:
    """(number, question, options) in order; never the right answers (a page shows these)."""
    return [(int(n), q, json.loads(o)) for n, q, o in con.execute(
        "SELECT question_no, question, options FROM crowd_questions WHERE kind = ? AND task_id = ? ORDER BY 1",
        [kind, task_id]).fetchall()]


def right_answers(con: duckdb.DuckDBPyConnection, task_id: int, kind: str = "rating") -> dict[int, int]:
    """{question number: the right option's index from 0}: for those who run the study, never a worker's page."""
    return {int(n): int(a) for n, a in con.execute(
        "SELECT question_no, answer FROM crowd_questions WHERE kind = ? AND task_id = ?", [kind, task_id]).fetchall()}


def attempt(con: duckdb.DuckDBPyConnection, task_id: int, worker: str, answers: list[int | None],
            kind: str = "rating", now: datetime | None = None) -> tuple[bool, int]:
    """One attempt at the comprehension questions, stored: (passed, attempts left). Refused after the last one."""
    now = (now or datetime.now()).replace(microsecond=0)
    with transaction(con):
        right = [a for (a,) in con.execute("SELECT answer FROM crowd_questions WHERE kind = ? AND task_id = ? "
                                           "ORDER BY question_no", [kind, task_id]).fetchall()]
        done = con.execute("SELECT count(*), bool_or(passed) FROM crowd_attempts WHERE kind = ? AND task_id = ? AND "
                           "worker = ?", [kind, task_id, worker]).fetchall()[0]
        if done[1]:
            return True, ATTEMPTS - int(done[0])
        if done[0] >= ATTEMPTS:
            raise Refused(_("The comprehension questions take {n} attempts at most.").format(n=ATTEMPTS))
        answers = list(answers) + [None] * (len(right) - len(answers))
        passed = answers[:len(right)] == right
        con.execute("INSERT INTO crowd_attempts VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [kind, task_id, worker, int(done[0]) + 1, passed, json.dumps(answers), now])
    return passed, ATTEMPTS - int(done[0]) - 1


def checked(con: duckdb.DuckDBPyConnection, task_id: int, worker: str, kind: str = "rating") -> str:
    """Where a worker stands at the comprehension questions: 'none' (the task has none), 'passed', 'failed'
    (every attempt used) or 'open'."""
    n = con.execute("SELECT count(*) FROM crowd_questions WHERE kind = ? AND task_id = ?", [kind, task_id]).fetchall()
    if not n[0][0]:
        return "none"
    tried, passed = con.execute("SELECT count(*), coalesce(bool_or(passed), false) FROM crowd_attempts WHERE kind = ? "
                                "AND task_id = ? AND worker = ?", [kind, task_id, worker]).fetchall()[0]
    return "passed" if passed else "failed" if tried >= ATTEMPTS else "open"


# ---------------------------------------------------------------- gold units
def add_gold(con: duckdb.DuckDBPyConnection, task_id: int, rows: list[dict]) -> list[int]:
    """Gold units (dicts of item_id, track, response, expected {dimension: [low, high]}, why) appended to the
    task's units, in one transaction; their unit numbers."""
    with transaction(con):
        bump_revision(con)
        first = con.execute("SELECT coalesce(max(unit), 0) + 1 FROM task_units WHERE task_id = ?",
                            [task_id]).fetchall()[0][0]
        made = []
        for k, row in enumerate(rows):
            unit = int(first) + k
            con.execute("INSERT INTO task_units (task_id, unit, item_id, track, model_a) VALUES (?, ?, ?, ?, ?)",
                        [task_id, unit, row["item_id"], row["track"], GOLD_MODEL])
            con.execute("INSERT INTO gold_units VALUES (?, ?, ?, ?, ?)",
                        [task_id, unit, row.get("response"), json.dumps(row["expected"], ensure_ascii=False),
                         row["why"]])
            made.append(unit)
    return made


def gold(con: duckdb.DuckDBPyConnection, task_id: int) -> pd.DataFrame:
    """The task's gold units, one row per unit and dimension: unit, dimension, low, high, why."""
    rows = []
    for unit, expected, why in con.execute("SELECT unit, expected, why FROM gold_units WHERE task_id = ? ORDER BY unit",
                                           [task_id]).fetchall():
        for dimension, (low, high) in json.loads(expected).items():
            rows.append({"unit": int(unit), "dimension": dimension, "low": float(low), "high": float(high), "why": why})
    return pd.DataFrame(rows, columns=["unit", "dimension", "low", "high", "why"])


def gold_units(con: duckdb.DuckDBPyConnection, task_id: int) -> set[int]:
    return {int(u) for (u,) in con.execute("SELECT unit FROM gold_units WHERE task_id = ?", [task_id]).fetchall()}


def gold_response(con: duckdb.DuckDBPyConnection, task_id: int, unit: int) -> str | None:
    row = con.execute("SELECT response FROM gold_units WHERE task_id = ? AND unit = ?", [task_id, unit]).fetchall()
    return row[0][0] if row else None


# ---------------------------------------------------------------- a chat study's instruction checks
MAX_INSTRUCTION = 500        # characters of an instruction shown inside a scenario


def add_instruction(con: duckdb.DuckDBPyConnection, task_id: int, text: str, expect: str, kind: str = "chat") -> int:
    """An instruction check of a chat study: `text` is shown inside the scenario of the conversations at a worker's
    gold places, and one of their messages there must contain `expect`; its number."""
    text, expect = (text or "").strip(), (expect or "").strip()
    if not text or not expect:
        raise Refused(_("An instruction check needs its text and the word a message must contain."))
    if len(text) > MAX_INSTRUCTION:
        raise Refused(_("An instruction holds at most {most} characters, this one {n}.").format(
            most=MAX_INSTRUCTION, n=len(text)))
    if bad_character(text) or bad_character(expect):
        raise Refused(_("An instruction check may not hold a {bad}.").format(
            bad=bad_character(text) or bad_character(expect)))
    _salt(con, kind, task_id)
    with transaction(con):
        no = con.execute("SELECT coalesce(max(instruction_no), 0) + 1 FROM crowd_instructions WHERE kind = ? AND "
                         "task_id = ?", [kind, task_id]).fetchall()[0][0]
        con.execute("INSERT INTO crowd_instructions VALUES (?, ?, ?, ?, ?)", [kind, task_id, no, text, expect])
    return int(no)


def instructions(con: duckdb.DuckDBPyConnection, task_id: int, kind: str = "chat") -> list[tuple[int, str, str]]:
    """(number, text, expected word) in order."""
    return [(int(n), t, e) for n, t, e in con.execute(
        "SELECT instruction_no, text, expect FROM crowd_instructions WHERE kind = ? AND task_id = ? ORDER BY 1",
        [kind, task_id]).fetchall()]


# ---------------------------------------------------------------- exclusions
def excluded(con: duckdb.DuckDBPyConnection, task_id: int, kind: str = "rating") -> set[str]:
    """The annotators of the task excluded now (their latest decision)."""
    return {a for (a,) in con.execute("""
        SELECT annotator FROM crowd_decisions WHERE kind = ? AND task_id = ?
        GROUP BY annotator HAVING arg_max(excluded, decision_id)""", [kind, task_id]).fetchall()}


# What an exclusion moves out of the tables every analysis reads: (table, where it is kept, its person column, its
# task column): an absolute task's ratings, a pairwise task's votes.
MOVED = (("human_ratings", "excluded_ratings", "annotator", "origin"),
         ("pairwise_judgments", "excluded_judgments", "judge", "prompt"))


def decide(con: duckdb.DuckDBPyConnection, task_id: int, annotator: str, *, excluded_now: bool, reason: str,
           by: str, origin: str, kind: str = "rating", now: datetime | None = None) -> int:
    """Exclude a worker or put them back, logged: an exclusion moves their ratings (votes) of the task (`origin`) out of
    human_ratings (pairwise_judgments) into excluded_ratings (excluded_judgments) under this decision; putting back moves them in again. One transaction;
    the decision's id."""
    now = (now or datetime.now()).replace(microsecond=0)
    with transaction(con):
        bump_revision(con)
        decision = next_id(con, "crowd_decisions", "decision_id")
        con.execute("INSERT INTO crowd_decisions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [decision, kind, task_id, annotator, excluded_now, reason, by, now])
        if excluded_now:
            for table, kept, who, where in MOVED:
                con.execute(f"INSERT INTO {kept} BY NAME SELECT *, ? AS decision_id FROM {table} WHERE {where} = ? "
                            f"AND {who} = ?", [decision, origin, annotator])
                con.execute(f"DELETE FROM {table} WHERE {where} = ? AND {who} = ?", [origin, annotator])
        else:
            for table, kept, who, where in MOVED:
                con.execute(f"INSERT INTO {table} BY NAME SELECT * EXCLUDE (decision_id) FROM {kept} WHERE {where} = ? "
                            f"AND {who} = ?", [origin, annotator])
                con.execute(f"DELETE FROM {kept} WHERE {where} = ? AND {who} = ?", [origin, annotator])
    return int(decision)


def kept_out(con: duckdb.DuckDBPyConnection, kind: str, task_id: int, annotator: str, origin: str) -> None:
    """Inside the caller's transaction: if the worker is excluded now, their ratings of `origin` just written (a chat
    conversation of theirs accepted after the exclusion) go where the exclusion put the others, under its decision."""
    latest = con.execute("SELECT arg_max(excluded, decision_id), max(decision_id) FROM crowd_decisions WHERE kind = ? "
                         "AND task_id = ? AND annotator = ?", [kind, task_id, annotator]).fetchall()
    if not latest or not latest[0][0]:
        return
    con.execute("INSERT INTO excluded_ratings BY NAME SELECT *, ? AS decision_id FROM human_ratings WHERE origin = ? "
                "AND annotator = ?", [latest[0][1], origin, annotator])
    con.execute("DELETE FROM human_ratings WHERE origin = ? AND annotator = ?", [origin, annotator])


def decisions(con: duckdb.DuckDBPyConnection, task_id: int, kind: str = "rating") -> pd.DataFrame:
    return con.execute("SELECT decision_id, annotator, excluded, reason, decided_by, decided_at FROM crowd_decisions "
                       "WHERE kind = ? AND task_id = ? ORDER BY decision_id", [kind, task_id]).df()
