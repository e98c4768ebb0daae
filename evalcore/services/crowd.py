"""Crowd studies (issue 65): a rating or chat task opened for a crowd platform. A worker arrives by the platform's link, is
one annotator by their platform identifier (no name to type), answers the comprehension questions (two attempts),
rates their share of units with the task's gold units mixed in at places of their own, and leaves with the task's
completion code (or, having failed the checks, its other code) and the way back to the platform. The pass rule is
applied when they finish: a worker who fails it is excluded (their ratings moved out of what every analysis reads,
a logged decision that `include` reverses).

The platforms' links: Prolific appends PROLIFIC_PID, STUDY_ID and SESSION_ID to the study URL; MTurk's external
question appends workerId, assignmentId and hitId (assignmentId ASSIGNMENT_ID_NOT_AVAILABLE while a worker only
previews the HIT); another platform: worker_id, study_id and session_id.

A chat task's study (kind 'chat') is the same door on the Chat page: the worker holds their share of conversations
one after another, and the gold units are instruction checks: at the worker's gold places a sentence of the study
(`crowd instruction`) is shown inside the scenario like any of its lines, and the check passes when one of their
messages in that conversation contains the expected word."""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote, urlencode

import duckdb
import numpy as np
import pandas as pd

from evalcore.analysis import crowd_quality
from evalcore.core import i18n
from evalcore.core.i18n import _, ngettext
from evalcore.core.seeds import seed
from evalcore.core.text import identity_key
from evalcore.store import chats as chat_store
from evalcore.store import crowd as stored
from evalcore.store import tasks as task_store
from evalcore.store.crowd import ATTEMPTS, PLATFORMS, RULE, Refused, Study
from evalcore.store.tasks import GOLD_MODEL, Task

__all__ = ["ATTEMPTS", "PLATFORMS", "RULE", "Refused", "Study"]


@dataclass(frozen=True)
class Params:
    worker: str
    study: str
    session: str
    placeholders: tuple[str, str, str]   # what the platform substitutes in the study URL


PARAMS = {
    "prolific": Params("PROLIFIC_PID", "STUDY_ID", "SESSION_ID",
                       ("{{%PROLIFIC_PID%}}", "{{%STUDY_ID%}}", "{{%SESSION_ID%}}")),
    "mturk": Params("workerId", "hitId", "assignmentId", ("", "", "")),   # MTurk appends them itself
    "generic": Params("worker_id", "study_id", "session_id", ("WORKER_ID", "STUDY_ID", "SESSION_ID")),
}
IDENTIFIER = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")   # a platform's identifier, as the link may carry it
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
PROLIFIC_DONE = "https://app.prolific.com/submissions/complete?cc={code}"
MTURK_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")


@dataclass(frozen=True)
class Ids:
    worker: str
    study: str | None
    session: str | None
    preview: bool = False   # MTurk: the worker previews the HIT and has not accepted it


KINDS = ("rating", "chat")
PAGES = {"rating": "annotate", "chat": "chat"}   # the page a study's link opens


def study_of(con: duckdb.DuckDBPyConnection, task_id: int, kind: str = "rating") -> Study | None:
    return stored.study(con, task_id, kind)


def task_of(con: duckdb.DuckDBPyConnection, kind: str, task_id: int):
    """The rating task (Task) or chat task (ChatTask) a study is of (ValueError: no such task)."""
    return chat_store.get(con, task_id) if kind == "chat" else task_store.get(con, task_id)


def open_study(con: duckdb.DuckDBPyConnection, task_id: int, kind: str = "rating", **settings) -> Study:
    """Open a rating task (kind 'chat': a chat task) to a crowd platform (evalcore.store.crowd.open_study's
    settings); a rating study's gold units per worker must exist (`add_gold`) before workers need them, which
    `next_unit` checks; a chat study's instruction checks are added with `add_instruction`."""
    task = task_of(con, kind, task_id)
    if task.state != "open":
        raise Refused(_("Task {task} is {state}: open it first.").format(task=task_id, state=task.state))
    if kind == "chat" and not task.people:
        raise Refused(_("Chat task {task} is held by simulators only: no worker has a conversation to hold.").format(
            task=task_id))
    return stored.open_study(con, task_id, kind=kind, **settings)


def link(study: Study, base: str) -> str:
    """The study URL to paste into the platform: the Annotate page of the task (a chat task's: the Chat page), with
    the platform's placeholders."""
    params = PARAMS[study.platform]
    query = {"task": str(study.task_id)}
    if study.platform != "mturk":
        query.update(dict(zip((params.worker, params.study, params.session), params.placeholders)))
    return f"{base.rstrip('/')}/{PAGES[study.kind]}?" + urlencode(query, safe="{}%")


def ids_from(study: Study, query: dict[str, str]) -> Ids | None:
    """The worker's identifiers from the page's URL (None: the link carries no worker identifier). Refused when
    one is not an identifier a platform gives (the URL was edited)."""
    params = PARAMS[study.platform]
    worker = (query.get(params.worker) or "").strip()
    if not worker:
        return None
    values = {"worker": worker, "study": (query.get(params.study) or "").strip() or None,
              "session": (query.get(params.session) or "").strip() or None}
    for value in values.values():
        if value is not None and not IDENTIFIER.match(value):
            raise Refused(_("The link's identifiers are not ones the platform gives: open the study from the "
                            "platform again."))
    preview = study.platform == "mturk" and values["session"] == MTURK_PREVIEW
    return Ids(values["worker"], values["study"], values["session"], preview)


def enter(con: duckdb.DuckDBPyConnection, study: Study, ids: Ids, *, client: str | None,
          now: datetime | None = None) -> stored.Worker:
    """The worker, entered or resumed (evalcore.store.crowd.enter: a second identity from a browser is refused)."""
    if ids.preview:
        raise Refused(_("Accept the HIT on MTurk to start: this is its preview."))
    task = task_of(con, study.kind, study.task_id)
    if task.state != "open":
        raise Refused(_("This study is closed: it takes no more answers. Return it on the platform."))
    return stored.enter(con, study, worker_id=ids.worker, study_id=ids.study, session_id=ids.session, client=client,
                        now=now)


def questions(con: duckdb.DuckDBPyConnection, task_id: int, kind: str = "rating") -> list[tuple[int, str, list[str]]]:
    return stored.questions(con, task_id, kind)


def check(con: duckdb.DuckDBPyConnection, study: Study, worker: str, answers: list[int | None]) -> tuple[bool, int]:
    """One attempt at the comprehension questions: (passed, attempts left). Failing the last one ends the worker's
    part: `checked` says 'failed', and `finish` applies the pass rule and gives them the task's other code."""
    return stored.attempt(con, study.task_id, worker, answers, kind=study.kind)


def checked(con: duckdb.DuckDBPyConnection, study: Study, worker: str) -> str:
    return stored.checked(con, study.task_id, worker, study.kind)


# ---------------------------------------------------------------- a worker's units
def gold_places(study: Study, task, annotator: str) -> set[int]:
    """Which of the worker's places (0-based, in the order they rate) hold a gold unit: seeded by the task and the
    worker, never the first place, so gold units sit among real ones where each worker meets them. A chat study's
    places are conversations, the first one included: its check rides on a real conversation."""
    if not study.gold:
        return set()
    rng = np.random.default_rng(seed(task.seed, "gold", annotator))
    first = 0 if study.kind == "chat" else 1
    return {int(p) for p in rng.choice(np.arange(first, study.units), size=study.gold, replace=False)}


def _done(con, task: Task, annotator: str, golds: set[int] | None = None) -> tuple[list[int], set[int]]:
    """(units this worker finished, in order; the gold ones among them). `golds`: the task's gold units, when the
    caller read them already."""
    done = task_store.finished_units(con, task, annotator)
    return done, set(done) & (stored.gold_units(con, task.task_id) if golds is None else golds)


def position(con: duckdb.DuckDBPyConnection, study: Study, task: Task, annotator: str) -> tuple[int, int]:
    """(units this worker finished, units they rate in all): "3 of 10" on their page."""
    return len(_done(con, task, annotator)[0]), study.units


def next_unit(con: duckdb.DuckDBPyConnection, study: Study, task: Task, annotator: str,
              now: datetime | None = None) -> int | None:
    """The worker's next unit, claimed for them; None when their share is done (or nothing is left for them:
    `finish` then says so). A gold unit at their gold places, a real one elsewhere (K holds for real ones)."""
    golds = stored.gold_units(con, task.task_id)
    done, gold_done = _done(con, task, annotator, golds)
    if len(done) >= study.units:
        return None
    wants_gold = len(done) in gold_places(study, task, annotator) and len(gold_done) < study.gold
    pool = golds if wants_gold and golds - set(done) else None
    if pool is None:
        pool = {int(u) for u in task_store.unit_numbers(con, task.task_id)} - golds
    unit = task_store.next_unit(con, task, annotator, now=now, among=pool)
    if unit is None and pool is not golds and golds - set(done) and len(gold_done) < study.gold:
        unit = task_store.next_unit(con, task, annotator, now=now, among=golds)   # no real unit left: gold ones still
    return unit


# ---------------------------------------------------------------- the end: the pass rule and the codes
@dataclass(frozen=True)
class Ending:
    passed: bool
    code: str | None
    redirect: str | None
    reasons: tuple[str, ...]


def quality(con: duckdb.DuckDBPyConnection, study: Study, task: Task, annotator: str | None = None) -> pd.DataFrame:
    """Per worker: units answered, gold units answered and passed, their share, leave-one-out agreement and MACE
    competence, the share of answers faster than reading allows, straight-lining, seconds, the effective hourly pay.
    With `annotator`: their row alone, without the figures that compare them with the others (what the pass rule
    reads when they finish: it is asked once per worker, hundreds of times in a launch burst)."""
    answers = task_store.latest(con, task.task_id, gold=True, excluded=True)
    workers = stored.workers(con, "rating", task.task_id)
    if annotator is not None:
        answers = answers[answers["annotator"] == annotator]
        workers = workers[workers["annotator"] == annotator]
    frame = crowd_quality.quality(answers, gold=stored.gold(con, task.task_id), text_chars=text_chars(con, task),
                                  pay=study.pay, agreement=annotator is None) \
        if not answers.empty else pd.DataFrame({"annotator": []})
    out = workers[["annotator", "outcome", "other_identity", "excluded", "reason"]].merge(frame, on="annotator",
                                                                                          how="left")
    if "units" in out:   # a worker with no answer yet: nothing answered, nothing straight-lined
        out["units"] = out["units"].fillna(0).astype(int)
        out["straight_lined"] = out["straight_lined"].astype("boolean").fillna(False).astype(bool)
    return out


def text_chars(con: duckdb.DuckDBPyConnection, task: Task) -> pd.Series:
    """Characters a worker reads per unit (the context and the response shown), by unit: the reading-speed floor's
    input."""
    rows = con.execute("""
        SELECT u.unit, length(coalesce(i.context, '')) +
               coalesce(length(g.response), (SELECT max(length(r.text)) FROM responses r WHERE r.dataset = ?
                                             AND r.item_id = u.item_id AND r.model = u.model_a), 0)
        FROM task_units u JOIN items i ON i.dataset = ? AND i.item_id = u.item_id
        LEFT JOIN gold_units g ON g.task_id = u.task_id AND g.unit = u.unit
        WHERE u.task_id = ?""", [task.dataset, task.dataset, task.task_id]).fetchall()
    return pd.Series({int(u): int(n) for u, n in rows}, dtype=float)


def finish(con: duckdb.DuckDBPyConnection, study: Study, worker: str, now: datetime | None = None) -> Ending:
    """The worker's end: the pass rule applied once (a failed worker is excluded, logged), then their code and the
    way back to the platform; asked again, the same answer."""
    task = task_of(con, study.kind, study.task_id)
    me = stored.worker(con, study.kind, study.task_id, worker)
    if me is None:
        raise Refused(_("This worker has not entered the study."))
    reasons: list[str] = []
    if me.outcome == "working":
        reasons = failing(con, study, task, me.annotator)
        outcome = "failed" if reasons else "passed"
        stored.set_outcome(con, study.kind, study.task_id, worker, outcome, now)
        if reasons:
            stored.decide(con, study.task_id, me.annotator, excluded_now=True, reason=" ".join(reasons),
                          by="pass rule", origin=task.origin, kind=study.kind, now=now)
        passed = not reasons
    else:
        passed = me.outcome == "passed"
    code = study.completion_code if passed else study.failed_code
    return Ending(passed, code, way_back(study, code), tuple(reasons))


def failing(con: duckdb.DuckDBPyConnection, study: Study, task, annotator: str) -> list[str]:
    """The sentences saying why the worker fails the task's pass rule (none: they pass). A chat study's: the
    comprehension questions, a second identity, and gold_min on its instruction checks."""
    rule = study.pass_rule
    if study.kind == "chat":
        row = chat_quality(con, study, task, annotator).set_index("annotator").loc[annotator]
        rule = {"gold_min": rule.get("gold_min")}   # reading speed and straight-lining are a rating's
    else:
        row = quality(con, study, task, annotator).set_index("annotator").loc[annotator]
    worker = stored.workers(con, study.kind, study.task_id, identifiers=False)
    reasons = []
    if study.pass_rule.get("comprehension") and stored.checked(con, study.task_id, _worker_of(con, study, annotator),
                                                               study.kind) == "failed":
        reasons.append(_("Failed the comprehension questions in both attempts."))
    if study.pass_rule.get("identity") and int(worker.set_index("annotator").loc[annotator, "other_identity"]) > 0:
        reasons.append(_("Tried to enter again as another worker from the same browser."))
    if study.kind == "chat":
        share, minimum = row.get("gold_share"), rule.get("gold_min")
        if minimum is not None and not pd.isna(share) and share < minimum:
            reasons.append(_("Followed {passed} of {answered} instructions given in a scenario; the task asks for at "
                             "least {minimum}.").format(passed=i18n.number(int(row["checks_passed"])),
                                                        answered=i18n.number(int(row["checks"])),
                                                        minimum=i18n.percent(minimum)))
        return reasons
    reasons += crowd_quality.reasons(row, rule)
    return reasons


def _worker_of(con, study: Study, annotator: str) -> str:
    return con.execute("SELECT worker FROM crowd_workers WHERE kind = ? AND task_id = ? AND annotator = ?",
                       [study.kind, study.task_id, annotator]).fetchall()[0][0]


def way_back(study: Study, code: str | None) -> str | None:
    """Where the worker goes back to with their code: the study's redirect ({code} replaced), else Prolific's
    completion page for a Prolific study; None where the platform takes the code typed in."""
    if code is None:
        return None
    if study.redirect:
        return study.redirect.replace("{code}", quote(code))
    if study.platform == "prolific":
        return PROLIFIC_DONE.format(code=quote(code))
    return None


# ---------------------------------------------------------------- gold units made from the data
def make_gold(con: duckdb.DuckDBPyConnection, task_id: int, *, why: str, dimension: str, low: float,
              high: float | None = None, count: int = 1, item_id: str | None = None, response: str | None = None,
              seed_value: int = 0) -> list[int]:
    """Gold units added to a task: `nonsense` (a reply of the dataset with its characters shuffled: it must get the
    dimension's lowest marks), `copies-knowledge` (a reply that is the item's knowledge copied out: it must get the
    dimension's highest), `custom` (the item and response given). `count` units, each on another item of the task."""
    task = task_store.get(con, task_id)
    if why not in stored.GOLD_KINDS:
        raise Refused(_("A gold unit is one of {known}, got {got}.").format(known=", ".join(stored.GOLD_KINDS),
                                                                             got=repr(why)))
    dim = next((d for d in task.dimensions if d.dimension == dimension), None)
    if dim is None:
        raise Refused(_("Task {task} does not rate {dimension}; it rates {known}.").format(
            task=task_id, dimension=dimension, known=", ".join(d.dimension for d in task.dimensions)))
    high = low if high is None else high
    if not (dim.min <= low <= high <= dim.max):
        raise Refused(_("{dimension} is rated from {low} to {high}: the expected answer must lie within.").format(
            dimension=dimension, low=f"{dim.min:g}", high=f"{dim.max:g}"))
    if task.mode != "absolute" or task.level != "response":
        raise Refused(_("Gold units are made for tasks that rate one response at a time."))
    units = task_store.units(con, task_id)
    units = units[units["model_a"] != GOLD_MODEL]
    rng = np.random.default_rng(seed(seed_value, "gold", why, dimension))
    rows = []
    if why == "custom":
        if not item_id or not (response or "").strip():
            raise Refused(_("A custom gold unit needs --item and --response."))
        track = con.execute("SELECT track FROM items WHERE dataset = ? AND item_id = ?", [task.dataset, item_id]).fetchall()
        if not track:
            raise Refused(_("Dataset {dataset} has no item {item}.").format(dataset=task.dataset, item=repr(item_id)))
        rows.append({"item_id": item_id, "track": track[0][0], "response": response.strip(), "why": why,
                     "expected": {dimension: [low, high]}})
    else:
        picked = units.sample(frac=1.0, random_state=int(rng.integers(2**31))).drop_duplicates("item_id")
        for r in picked.itertuples():
            if len(rows) >= count:
                break
            text = _gold_text(con, task, r.item_id, r.model_a, why, rng)
            if text:
                rows.append({"item_id": r.item_id, "track": r.track, "response": text, "why": why,
                             "expected": {dimension: [low, high]}})
        if len(rows) < count:
            raise Refused(ngettext("Only {n} item of the task can make a {why} gold unit; {count} were asked for.",
                                   "Only {n} items of the task can make a {why} gold unit; {count} were asked for.",
                                   len(rows)).format(n=len(rows), why=why, count=count))
    return stored.add_gold(con, task_id, rows)


def _gold_text(con, task: Task, item_id: str, model: str, why: str, rng: np.random.Generator) -> str | None:
    if why == "nonsense":
        row = con.execute("SELECT text FROM responses WHERE dataset = ? AND item_id = ? AND model = ?",
                          [task.dataset, item_id, model]).fetchall()
        text = (row[0][0] or "").strip() if row else ""
        if len(text) < 6:
            return None
        if " " in text:   # words shuffled (English), characters shuffled (Chinese)
            parts = text.split()
            return " ".join(parts[i] for i in rng.permutation(len(parts)))
        return "".join(text[i] for i in rng.permutation(len(text)))
    row = con.execute("SELECT grounding FROM items WHERE dataset = ? AND item_id = ?", [task.dataset, item_id]).fetchall()
    grounding = json.loads(row[0][0]) if row and row[0][0] else {}
    knowledge = grounding.get("knowledge") if isinstance(grounding, dict) else None
    if not knowledge:
        return None
    lines = ["".join(str(x) for x in k) if isinstance(k, (list, tuple)) else str(k) for k in knowledge]
    sep = "，" if task.lang == "zh-CN" else ", "
    return sep.join(lines[:3]) + ("。" if task.lang == "zh-CN" else ".")


# ---------------------------------------------------------------- exclusions by a person
def exclude(con: duckdb.DuckDBPyConnection, task_id: int, annotator: str, *, reason: str, by: str,
            kind: str = "rating") -> int:
    """Exclude a worker: their ratings of the task leave human_ratings (a chat task's: the dialogue-level ratings
    of their accepted conversations, origin ChatTask.origin; the dialogues stay in the dataset). Logged."""
    return _decide(con, task_id, annotator, True, reason, by, kind)


def include(con: duckdb.DuckDBPyConnection, task_id: int, annotator: str, *, reason: str, by: str,
            kind: str = "rating") -> int:
    return _decide(con, task_id, annotator, False, reason, by, kind)


def _decide(con, task_id: int, annotator: str, excluded_now: bool, reason: str, by: str, kind: str = "rating") -> int:
    task = task_of(con, kind, task_id)
    known = set(stored.workers(con, kind, task_id)["annotator"])
    if annotator not in known:
        raise Refused(_("Task {task} has no worker {name}.").format(task=task_id, name=repr(annotator)))
    if (annotator in stored.excluded(con, task_id, kind)) == excluded_now:
        raise Refused((_("{name} is excluded already.") if excluded_now else _("{name} is not excluded.")).format(
            name=annotator))
    return stored.decide(con, task_id, annotator, excluded_now=excluded_now, reason=reason.strip() or "-", by=by,
                         origin=task.origin, kind=kind)


# ---------------------------------------------------------------- a chat study: conversations and instruction checks
def add_instruction(con: duckdb.DuckDBPyConnection, task_id: int, text: str, expect: str) -> int:
    """An instruction check of a chat study (evalcore.store.crowd.add_instruction); its number."""
    task_of(con, "chat", task_id)
    return stored.add_instruction(con, task_id, text, expect, kind="chat")


def next_conversation(con: duckdb.DuckDBPyConnection, study: Study, task: chat_store.ChatTask, annotator: str,
                      now: datetime | None = None) -> int | None:
    """The worker's conversation in progress, else a new one given to them (chats.assign); None when their share
    of conversations is done, or nothing is left for them (`finish` then says so)."""
    mine = chat_store.mine(con, task.task_id, annotator)
    going = mine[mine["state"].isin(["talking", "ended"])]
    if len(going):
        return int(going["conversation_id"].iloc[0])
    if len(mine) >= study.units:
        return None
    return chat_store.assign(con, task, annotator, now=now)


def conversation_place(con: duckdb.DuckDBPyConnection, study: Study, task: chat_store.ChatTask, annotator: str,
                       conversation_id: int) -> tuple[int, int]:
    """(the conversation's place among the worker's, 1-based; conversations they hold in all)."""
    mine = chat_store.mine(con, task.task_id, annotator)["conversation_id"].tolist()
    place = mine.index(conversation_id) + 1 if conversation_id in mine else len(mine) + 1
    return min(place, study.units), study.units


def _checks(con, study: Study, task: chat_store.ChatTask, annotator: str) -> list[tuple[int, str, str]]:
    """(conversation, instruction, expected word) at each of the worker's gold places they have reached."""
    told = stored.instructions(con, task.task_id, "chat")
    if not told or not study.gold:
        return []
    mine = chat_store.mine(con, task.task_id, annotator)["conversation_id"].tolist()
    return [(int(mine[p]), told[k % len(told)][1], told[k % len(told)][2])
            for k, p in enumerate(sorted(gold_places(study, task, annotator))) if p < len(mine)]


def instruction(con: duckdb.DuckDBPyConnection, study: Study, task: chat_store.ChatTask, annotator: str,
                conversation_id: int) -> str | None:
    """The instruction shown inside this conversation's scenario (None: it is not at one of their gold places)."""
    return next((text for conv, text, __ in _checks(con, study, task, annotator) if conv == conversation_id), None)


def folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text or "").casefold()


def instruction_checks(con: duckdb.DuckDBPyConnection, study: Study, task: chat_store.ChatTask,
                       annotator: str) -> tuple[int, int]:
    """(instruction checks answered, passed): a check is answered once its conversation has ended, passed when one
    of the worker's messages in it contains the expected word (NFKC, case-folded)."""
    answered = passed = 0
    for conv, __, expect in _checks(con, study, task, annotator):
        if chat_store.conversation(con, conv).state == "talking":
            continue
        said = chat_store.messages(con, conv)
        said = said.loc[said["role"] == "user", "text"]
        answered += 1
        passed += any(folded(expect) in folded(t) for t in said)
    return answered, passed


def chat_quality(con: duckdb.DuckDBPyConnection, study: Study, task: chat_store.ChatTask,
                 annotator: str | None = None) -> pd.DataFrame:
    """Per worker of a chat study: conversations finished, instruction checks answered and passed, their share,
    seconds in conversations (from each one's start to its end), and the effective hourly pay."""
    workers = stored.workers(con, "chat", task.task_id)
    if annotator is not None:
        workers = workers[workers["annotator"] == annotator]
    rows = []
    for name in workers["annotator"]:
        mine = con.execute("""SELECT count(*) FILTER (WHERE state NOT IN ('talking', 'open')),
                                     sum(epoch(ended_at) - epoch(assigned_at))
                              FROM chat_conversations WHERE task_id = ? AND person = ?""",
                           [task.task_id, identity_key(name)]).fetchall()[0]
        checks, passed = instruction_checks(con, study, task, name)
        seconds = float(mine[1]) if mine[1] is not None else None
        rows.append({"annotator": name, "conversations": int(mine[0] or 0), "checks": checks, "checks_passed": passed,
                     "gold_share": passed / checks if checks else None, "seconds": seconds,
                     "hourly_pay": study.pay * 3600 / seconds if study.pay is not None and seconds else None})
    frame = pd.DataFrame(rows, columns=["annotator", "conversations", "checks", "checks_passed", "gold_share",
                                        "seconds", "hourly_pay"])
    return workers[["annotator", "outcome", "other_identity", "excluded", "reason"]].merge(frame, on="annotator",
                                                                                          how="left")
