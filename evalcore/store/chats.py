"""Live conversations as stored (migration 18): chat tasks, their scenarios, one row per conversation a person
holds with a blind model, every message as it was sent or received, ratings of the whole dialogue and flags on
single turns.

Each write is its own short transaction (a message, a rating, a flag): a closed tab, a restart or a crash loses
nothing already said, and the person resumes where the store says they stood, on any machine.

Who talks to what: each (scenario, endpoint) is talked through K times, each time by a different person; nobody
meets a scenario twice (its grounding would be known the second time), and each person meets the endpoints in
their own seeded order, so no endpoint is always first. The check and the assignment are one transaction.

A conversation counts once it is accepted (by a reviewer, or at once when rated in a task without review): then
it becomes a dialogue of the task's target dataset with its grounding, its turns, one item per model turn (the
context so far) answered by the endpoint (its name is the model's), and the person's ratings as dialogue-level
human ratings (origin 'chat:<task>'); all of it in one transaction. A conversation sent back stays as it was,
with its reason, and a fresh conversation on the same scenario and endpoint takes its place."""
from __future__ import annotations

import json
import secrets
import unicodedata
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Callable

import duckdb
import numpy as np
import pandas as pd

from evalcore.core import i18n
from evalcore.core.i18n import _
from evalcore.core.seeds import BIG, seed
from evalcore.core.text import bad_character, identity_key
from evalcore.store import crowd
from evalcore.store.annotators import check_name
from evalcore.store.history import record
from evalcore.store.tasks import (MAX_COMMENT, Dimension, TaskClosed, check_lang, check_lookalike, check_settings,
                                  state_shown)
from evalcore.store.transactions import bump_revision, last_id, next_id, transaction

STATES = ("open", "talking", "ended", "rated", "accepted", "sent_back")
COUNTED = ("accepted",)           # the states whose dialogues results count by default
# A task's bounds, the one place the Chat tasks page's controls and `evalcore chat create` read them: a task is one
# transaction of scenarios x endpoints x K conversations (--per-scenario 100000 ran past 90 s and 10 GB).
MAX_SCENARIOS = 500
MAX_PER_SCENARIO = 20
MAX_ROUNDS = 50
MAX_MESSAGE = 4000                # characters of one message a person sends
# characters that draw nothing: a message of only these (zero-width spaces, a BOM, Hangul fillers) says nothing
BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f")


def check_bounds(*, n_scenarios: int | None, per_scenario: int, max_rounds: int) -> None:
    """A task's sizes within the bounds above, each refused in one sentence naming the CLI's option (the page's
    controls stop at the same bounds). `n_scenarios` None: every dialogue of the track."""
    for option, value, most in (("--scenarios", n_scenarios, MAX_SCENARIOS),
                                ("--per-scenario", per_scenario, MAX_PER_SCENARIO),
                                ("--max-rounds", max_rounds, MAX_ROUNDS)):
        if value is not None and not 1 <= value <= most:
            raise ValueError(f"{option} must lie in 1..{most}, got {value}; nothing was stored")


def visible(text: str) -> bool:
    """Does the text draw anything? Whitespace, format characters (zero-width spaces and joiners, a BOM, direction
    marks) and the blank letters do not."""
    return any(not (c.isspace() or c in BLANK or unicodedata.category(c) in ("Cf", "Cc")) for c in text)


# what runs in an acceptance's transaction: (the connection, the task, the dataset the dialogue went to)
Accepted = Callable[[duckdb.DuckDBPyConnection, "ChatTask", str], object]
SIMULATED = "simulator:"          # a simulated conversation's annotator: "simulator:<name>" (no person's name has a colon
#                                   ... a person's may: the `simulator` column, not this, tells them apart)


class NotYours(ValueError):
    """A write to a conversation that another person holds (nothing was stored)."""


class OutOfTurn(ValueError):
    """A message refused: it is not that side's turn, the conversation ended, or the round limit is reached."""


@dataclass(frozen=True)
class ChatTask:
    task_id: int
    name: str
    dataset: str
    track: str
    target: str
    endpoints: tuple[str, ...]
    settings: dict
    per_scenario: int
    max_rounds: int
    dimensions: tuple[Dimension, ...]
    flags: tuple[str, ...]
    guidelines: str
    seed: int
    review: bool
    access_code: str
    state: str
    created_by: str | None
    created_at: datetime
    simulators: dict     # per simulator: how it plays the user (endpoint, template and its hash, style, sampling, seed)
    people: bool         # whether people hold conversations too (else only the simulators do)
    lang: str = "en"     # the task's language (zh-CN or en): its people's pages, definitions, questions and flags

    @property
    def origin(self) -> str:
        return f"chat:{self.task_id}"

    def target_of(self, simulator: str | None) -> str:
        """The dataset a conversation becomes a dialogue of: people's, the task's target; a simulator's, its own
        (<target>-sim-<simulator>), so no board, correlation or trust view mixes simulated users with people."""
        return self.target if simulator is None else f"{self.target}-sim-{simulator}"


@dataclass(frozen=True)
class Conversation:
    conversation_id: int
    task_id: int
    scenario: int
    endpoint: str
    slot: int
    annotator: str | None
    state: str
    goal: bool | None
    reason: str | None
    dialogue_id: str | None
    simulator: str | None = None


def create(con: duckdb.DuckDBPyConnection, *, name: str, dataset: str, track: str, target: str | None,
           endpoints: list[str], settings: dict | Callable[[int], dict], per_scenario: int, max_rounds: int,
           dimensions: list[Dimension], flags: list[str], scenarios: pd.DataFrame, guidelines: str = "",
           seed: int = 0, review: bool = True, created_by: str | None = None,
           simulators: dict | Callable[[int], dict] | None = None, people: bool = True, lang: str = "en") -> int:
    """Store a chat task, its scenarios (columns dialogue_id, grounding as a dict, opening) and one open
    conversation per (scenario, endpoint, slot) for people (unless `people` is False) and per (scenario, endpoint,
    simulator, slot) for each simulator, in one transaction; its id. `settings` and `simulators` may be functions of
    the new task's id (their signatures name it); `target` None: chat-<id>-<dataset>; `lang`: the task's language."""
    check_lang(lang)
    check_settings(name=name, guidelines=guidelines, seed=seed)
    check_lookalike(con, "chat_tasks", name)
    if len(set(endpoints)) != len(endpoints) or not endpoints:
        raise ValueError("give one or more different endpoints")
    if scenarios.empty:
        raise ValueError(f"no scenarios: track {track!r} of {dataset!r} has no stored dialogues")
    check_bounds(n_scenarios=len(scenarios), per_scenario=per_scenario, max_rounds=max_rounds)
    if not people and not simulators:
        raise ValueError("a task without people needs one or more simulators (--simulators)")
    now = datetime.now().replace(microsecond=0)
    with transaction(con):
        bump_revision(con)
        task_id = next_id(con, "chat_tasks", "task_id")
        settings = settings(task_id) if callable(settings) else settings
        simulators = (simulators(task_id) if callable(simulators) else simulators) or {}
        target = target or f"chat-{task_id}-{dataset}"
        con.execute("INSERT INTO chat_tasks (task_id, name, dataset, track, target, endpoints, settings, per_scenario, "
                    "max_rounds, dimensions, flags, guidelines, seed, review, access_code, state, created_by, "
                    "created_at, simulators, people, lang) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'open', ?, ?, ?, ?, ?)",
                    [task_id, name, dataset, track, target, json.dumps(endpoints), json.dumps(settings, ensure_ascii=False),
                     per_scenario, max_rounds, json.dumps([d.__dict__ for d in dimensions], ensure_ascii=False),
                     json.dumps(flags, ensure_ascii=False), guidelines, seed, review, secrets.token_hex(3),
                     created_by, now, json.dumps(simulators, ensure_ascii=False), people, lang])
        rows = scenarios.reset_index(drop=True)
        con.executemany("INSERT INTO chat_scenarios VALUES (?, ?, ?, ?, ?)",
                        [[task_id, i + 1, r.dialogue_id, json.dumps(r.grounding or {}, ensure_ascii=False),
                          r.opening if isinstance(r.opening, str) and r.opening else None]
                         for i, r in enumerate(rows.itertuples(index=False))])
        first = last_id(con, "chat_conversations", "conversation_id")
        holders = ([None] if people else []) + list(simulators)
        slots = [(s, e, k, h) for s in range(1, len(rows) + 1) for e in endpoints for h in holders
                 for k in range(1, per_scenario + 1)]
        con.executemany("INSERT INTO chat_conversations (conversation_id, task_id, scenario, endpoint, slot, state, "
                        "simulator) VALUES (?, ?, ?, ?, ?, 'open', ?)",
                        [[first + i + 1, task_id, s, e, k, h] for i, (s, e, k, h) in enumerate(slots)])
    return int(task_id)


def get(con: duckdb.DuckDBPyConnection, task_id: int) -> ChatTask:
    rows = con.execute("SELECT task_id, name, dataset, track, target, endpoints, settings, per_scenario, max_rounds, "
                       "dimensions, flags, guidelines, seed, review, access_code, state, created_by, created_at, "
                       "coalesce(simulators, '{}'), coalesce(people, true), coalesce(lang, 'en') FROM chat_tasks "
                       "WHERE task_id = ?",
                       [task_id]).fetchall()
    if not rows:
        raise ValueError(f"no chat task {task_id}")
    r = list(rows[0])
    r[5] = tuple(json.loads(r[5]))
    r[6] = json.loads(r[6])
    r[9] = tuple(Dimension(**d) for d in json.loads(r[9]))
    r[10] = tuple(json.loads(r[10]))
    r[11] = r[11] or ""
    r[18] = json.loads(r[18])
    return ChatTask(*r)


def listing(con: duckdb.DuckDBPyConnection, *, include_deleted: bool = False) -> pd.DataFrame:
    """One row per task: its settings and how many conversations stand in each state."""
    return con.execute("""
        SELECT t.task_id, t.name, t.dataset, t.track, t.target, t.endpoints, t.per_scenario, t.max_rounds, t.state,
               t.review, (SELECT count(*) FROM chat_scenarios s WHERE s.task_id = t.task_id) AS scenarios,
               count(c.conversation_id) FILTER (WHERE c.state NOT IN ('sent_back')) AS conversations,
               count(*) FILTER (WHERE c.state IN ('talking', 'ended')) AS talking,
               count(*) FILTER (WHERE c.state IN ('rated', 'accepted')) AS rated,
               count(*) FILTER (WHERE c.state = 'accepted') AS accepted,
               count(*) FILTER (WHERE c.state = 'sent_back') AS sent_back,
               t.created_by, t.created_at
        FROM chat_tasks t LEFT JOIN chat_conversations c USING (task_id)
        WHERE ? OR t.state <> 'deleted' GROUP BY ALL ORDER BY t.task_id""", [include_deleted]).df()


def conversations(con: duckdb.DuckDBPyConnection, task_id: int) -> pd.DataFrame:
    """Every conversation of a task with its rounds, in id order."""
    return con.execute("""
        SELECT c.*, (SELECT count(*) FROM chat_messages m WHERE m.conversation_id = c.conversation_id
                     AND m.role = 'assistant') AS rounds
        FROM chat_conversations c WHERE task_id = ? ORDER BY conversation_id""", [task_id]).df()


def conversation(con: duckdb.DuckDBPyConnection, conversation_id: int) -> Conversation:
    rows = con.execute("SELECT conversation_id, task_id, scenario, endpoint, slot, annotator, state, goal, reason, "
                       "dialogue_id, simulator FROM chat_conversations WHERE conversation_id = ?",
                       [conversation_id]).fetchall()
    if not rows:
        raise ValueError(f"no conversation {conversation_id}")
    return Conversation(*rows[0])


def scenario(con: duckdb.DuckDBPyConnection, task_id: int, number: int) -> dict:
    """{dialogue_id, grounding (dict), opening} of one scenario."""
    dialogue_id, grounding, opening = con.execute(
        "SELECT dialogue_id, grounding, opening FROM chat_scenarios WHERE task_id = ? AND scenario = ?",
        [task_id, number]).fetchall()[0]
    return {"dialogue_id": dialogue_id, "grounding": json.loads(grounding), "opening": opening}


def messages(con: duckdb.DuckDBPyConnection, conversation_id: int) -> pd.DataFrame:
    return con.execute("SELECT idx, role, text, created_at, attempts, finish, seconds FROM chat_messages "
                       "WHERE conversation_id = ? ORDER BY idx", [conversation_id]).df()



def order_for(task: ChatTask, person: str) -> tuple[list[str], dict[int, int]]:
    """A person's own seeded order of the endpoints, and a rank per scenario (so no endpoint is always met first
    and people do not all start on scenario 1)."""
    rng = np.random.default_rng(seed(task.task_id, task.seed, identity_key(person), byteorder=BIG))
    ends = [str(e) for e in rng.permutation(list(task.endpoints))]
    scenarios = 10_000   # more than a task has; ranks past it fall back to the scenario's number
    return ends, {s + 1: int(r) for s, r in enumerate(rng.permutation(scenarios))}


def mine(con: duckdb.DuckDBPyConnection, task_id: int, annotator: str) -> pd.DataFrame:
    """The person's conversations in the order they were given them (what they see as Conversation 1, 2, ...)."""
    return con.execute("""
        SELECT c.conversation_id, c.scenario, c.state, c.goal, c.reason, c.assigned_at,
               (SELECT count(*) FROM chat_messages m WHERE m.conversation_id = c.conversation_id
                AND m.role = 'assistant') AS rounds
        FROM chat_conversations c WHERE c.task_id = ? AND c.person = ?
        ORDER BY c.assigned_at, c.conversation_id""", [task_id, identity_key(annotator)]).df()


def assign(con: duckdb.DuckDBPyConnection, task: ChatTask, annotator: str, *, now: datetime | None = None) -> int | None:
    """The person's conversation still in progress (talking, or ended and not yet rated), else a new one given to
    them now; None when nothing is left for them (every open conversation is on a scenario they met)."""
    annotator = check_name(annotator)
    person = identity_key(annotator)
    now = (now or datetime.now()).replace(microsecond=0)
    with transaction(con):
        state = con.execute("SELECT state FROM chat_tasks WHERE task_id = ?", [task.task_id]).fetchall()[0][0]
        going = con.execute("SELECT conversation_id FROM chat_conversations WHERE task_id = ? AND person = ? AND "
                            "state IN ('talking', 'ended') ORDER BY assigned_at, conversation_id LIMIT 1",
                            [task.task_id, person]).fetchall()
        if going:
            return int(going[0][0])
        if state != "open":
            return None
        frame = con.execute("""
            SELECT c.conversation_id, c.scenario, c.endpoint, c.slot,
                   (SELECT count(*) FROM chat_conversations x WHERE x.task_id = c.task_id AND x.scenario = c.scenario
                    AND x.person IS NOT NULL AND x.simulator IS NULL AND x.state <> 'sent_back') AS taken
            FROM chat_conversations c WHERE c.task_id = ? AND c.state = 'open' AND c.person IS NULL
              AND c.simulator IS NULL AND c.scenario NOT IN (SELECT scenario FROM chat_conversations WHERE task_id = ? AND person = ?)""",
                            [task.task_id, task.task_id, person]).df()
        if frame.empty:
            return None
        had = con.execute("SELECT endpoint, count(*) FROM chat_conversations WHERE task_id = ? AND person = ? "
                          "GROUP BY endpoint", [task.task_id, person]).fetchall()
        met = dict(had)
        ends, ranks = order_for(task, person)
        frame["met"] = frame["endpoint"].map(lambda e: met.get(e, 0))
        frame["end_rank"] = frame["endpoint"].map(ends.index)
        frame["scen_rank"] = frame["scenario"].map(lambda s: ranks.get(int(s), int(s)))
        # the endpoint they met least (in their own order), on the scenario MOST people have started already: those
        # people cannot take it, so the scenarios they can still meet stay free for them (taking the least-started
        # one first left a second person only an endpoint they had met, with two people and two endpoints)
        frame["taken"] = -frame["taken"]
        pick = frame.sort_values(["met", "end_rank", "taken", "scen_rank", "slot"], kind="stable").iloc[0]
        con.execute("UPDATE chat_conversations SET annotator = ?, person = ?, state = 'talking', assigned_at = ? "
                    "WHERE conversation_id = ?", [annotator, person, now, int(pick.conversation_id)])
        return int(pick.conversation_id)


def _held(con, conversation_id: int, annotator: str) -> tuple[Conversation, ChatTask]:
    conv = conversation(con, conversation_id)
    if conv.annotator is None or identity_key(conv.annotator) != identity_key(annotator):
        raise NotYours(_("this conversation is someone else's; nothing was stored"))
    task = get(con, conv.task_id)
    if task.state != "open":
        raise TaskClosed((_("chat task {task} is {state}: it takes no messages or ratings now; nothing was stored "
                            "(whoever runs it can reopen it)") if task.state == "closed" else
                          _("chat task {task} is {state}: it takes no messages or ratings now; nothing was stored"))
                         .format(task=task.task_id, state=state_shown(task.state)))
    return conv, task


def say(con: duckdb.DuckDBPyConnection, conversation_id: int, annotator: str, text: str, *,
        now: datetime | None = None) -> int:
    """Store the person's message; its index. Refused (nothing stored) when the model has not answered the last
    one yet, the conversation ended, or the round limit is reached."""
    text = (text or "").strip()
    if not visible(text):   # zero-width spaces alone are empty too
        raise ValueError(_("An empty message is not sent (it holds no visible character); nothing was stored"))
    if len(text) > MAX_MESSAGE:
        raise ValueError(_("A message holds at most {most} characters, this one {n}; nothing was stored: shorten it "
                           "and send it again").format(most=i18n.number(MAX_MESSAGE), n=i18n.number(len(text))))
    bad = bad_character(text)
    if bad:
        raise ValueError(_("a message may not hold a {bad}").format(bad=bad))
    now = now or datetime.now()
    with transaction(con):
        conv, task = _held(con, conversation_id, annotator)
        if conv.state != "talking":
            raise OutOfTurn(_("this conversation has ended ({state}); nothing was stored").format(
                state=state_shown(conv.state, spaced=False)))
        last = con.execute("SELECT idx, role FROM chat_messages WHERE conversation_id = ? ORDER BY idx DESC LIMIT 1",
                           [conversation_id]).fetchall()
        if last and last[0][1] == "user":
            raise OutOfTurn(_("The model has not answered your last message yet; nothing was stored"))
        rounds = con.execute("SELECT count(*) FROM chat_messages WHERE conversation_id = ? AND role = 'assistant'",
                             [conversation_id]).fetchall()[0][0]
        if rounds >= task.max_rounds:
            raise OutOfTurn(_("this conversation reached its {rounds} rounds: end it and rate it").format(
                rounds=task.max_rounds))
        idx = last[0][0] + 1 if last else 0
        con.execute("INSERT INTO chat_messages (conversation_id, idx, role, text, created_at) VALUES (?, ?, 'user', ?, ?)",
                    [conversation_id, idx, text, now])
    return idx


def pending(con: duckdb.DuckDBPyConnection, conversation_id: int) -> int | None:
    """The index of the person's last message when the model has not answered it (a reply to fetch, or retry)."""
    last = con.execute("SELECT idx, role FROM chat_messages WHERE conversation_id = ? ORDER BY idx DESC LIMIT 1",
                       [conversation_id]).fetchall()
    return int(last[0][0]) if last and last[0][1] == "user" else None


def reply(con: duckdb.DuckDBPyConnection, conversation_id: int, after: int, text: str, *, attempts: int | None = None,
          finish: str | None = None, seconds: float | None = None, now: datetime | None = None,
          within: bool = False) -> int | None:
    """Store the model's reply to message `after`; its index, or None when a reply to it is stored already (two
    tabs of one person both asked: the first one's reply stays, the second is dropped). `within`: inside the
    caller's transaction (a batch of a simulation's writes), else its own."""
    now = now or datetime.now()
    with _own(con, within):
        if pending(con, conversation_id) != after:
            return None
        con.execute("INSERT INTO chat_messages VALUES (?, ?, 'assistant', ?, ?, ?, ?, ?)",
                    [conversation_id, after + 1, text, now, attempts, finish, seconds])
    return after + 1


def end(con: duckdb.DuckDBPyConnection, conversation_id: int, annotator: str, *, goal: bool | None = None,
        now: datetime | None = None) -> None:
    """The person ends the conversation (the goal reached, or the round limit): what is left is rating it."""
    now = (now or datetime.now()).replace(microsecond=0)
    with transaction(con):
        conv, __ = _held(con, conversation_id, annotator)
        if conv.state != "talking":
            raise OutOfTurn(_("this conversation is {state} already").format(state=state_shown(conv.state,
                                                                                              spaced=False)))
        replies = con.execute("SELECT count(*) FROM chat_messages WHERE conversation_id = ? AND role = 'assistant'",
                              [conversation_id]).fetchall()[0][0]
        if replies == 0:
            raise OutOfTurn(_("nothing to rate yet: the model has not said anything"))
        con.execute("UPDATE chat_conversations SET state = 'ended', goal = ?, ended_at = ? WHERE conversation_id = ?",
                    [goal, now, conversation_id])


# ------------------------------------------------------------------ a simulator's side of its conversations
# The same rows as a person's, written by evalcore.simulation.run: its messages, the end, then the questionnaire's
# answers in one write. No person holds these conversations: the annotator column names the simulator
# ("simulator:<name>") and people are never assigned them (assign). Each write is its own transaction, or with
# `within` part of the caller's (a batch of a run's writes, whose caller checked the task is open and passes it).

def _own(con, within: bool):
    return nullcontext(con) if within else transaction(con)


def _simulated(con, conversation_id: int, task: ChatTask | None = None) -> tuple[Conversation, ChatTask]:
    conv = conversation(con, conversation_id)
    if conv.simulator is None:
        raise NotYours(f"conversation {conversation_id} is a person's, not a simulator's")
    if task is None:
        task = get(con, conv.task_id)
        if task.state != "open":
            raise TaskClosed(f"chat task {task.task_id} is {task.state}: nothing was stored")
    return conv, task


def simulated_say(con: duckdb.DuckDBPyConnection, conversation_id: int, text: str, *, seconds: float | None = None,
                  attempts: int | None = None, finish: str | None = None, now: datetime | None = None,
                  task: ChatTask | None = None, within: bool = False) -> int:
    """The simulated user's message (the conversation starts 'talking' with its first); its index. Refused, nothing
    stored, when the system has not answered the last one, the conversation ended, or its rounds are used up."""
    if not visible(text or ""):
        raise ValueError("the simulated user's message holds no visible character")
    now = now or datetime.now()
    with _own(con, within):
        conv, task = _simulated(con, conversation_id, task)
        if conv.state not in ("open", "talking"):
            raise OutOfTurn(f"conversation {conversation_id} has ended ({conv.state})")
        top, role, rounds = con.execute(
            "SELECT max(idx), arg_max(role, idx), count(*) FILTER (WHERE role = 'assistant') FROM chat_messages "
            "WHERE conversation_id = ?", [conversation_id]).fetchall()[0]
        last = [(top, role)] if top is not None else []
        if last and last[0][1] == "user":
            raise OutOfTurn("the system has not answered the simulated user's last message yet")
        if rounds >= task.max_rounds:
            raise OutOfTurn(f"conversation {conversation_id} reached its {task.max_rounds} rounds")
        if conv.state == "open":
            con.execute("UPDATE chat_conversations SET state = 'talking', annotator = ?, assigned_at = ? "
                        "WHERE conversation_id = ?", [SIMULATED + conv.simulator, now.replace(microsecond=0),
                                                      conversation_id])
        idx = last[0][0] + 1 if last else 0
        con.execute("INSERT INTO chat_messages VALUES (?, ?, 'user', ?, ?, ?, ?, ?)",
                    [conversation_id, idx, text, now, attempts, finish, seconds])
    return idx


def simulated_end(con: duckdb.DuckDBPyConnection, conversation_id: int, *, now: datetime | None = None,
                  task: ChatTask | None = None, within: bool = False) -> None:
    """The simulated user ended the conversation (or its rounds ran out): its questionnaire is what is left."""
    now = (now or datetime.now()).replace(microsecond=0)
    with _own(con, within):
        conv, __ = _simulated(con, conversation_id, task)
        if conv.state != "talking":
            raise OutOfTurn(f"conversation {conversation_id} is {conv.state}, not talking")
        con.execute("UPDATE chat_conversations SET state = 'ended', ended_at = ? WHERE conversation_id = ?",
                    [now, conversation_id])


def simulated_rate(con: duckdb.DuckDBPyConnection, conversation_id: int, values: dict[str, float], goal: bool | None,
                   *, now: datetime | None = None, then: Accepted | None = None, task: ChatTask | None = None,
                   within: bool = False) -> None:
    """The simulated user's answers to the questionnaire, every dimension at once (checked against the task's
    ranges: a value out of range or missing is refused whole, nothing stored); the conversation is then 'rated',
    and accepted at once in a task without review (`then` runs in the same transaction, as for people)."""
    now = now or datetime.now()
    with _own(con, within):
        conv, task = _simulated(con, conversation_id, task)
        if conv.state != "ended":
            raise OutOfTurn(f"conversation {conversation_id} is {conv.state}: a simulated user rates it once it ended")
        for d in task.dimensions:
            value = values.get(d.dimension)
            if value is None or not d.min <= float(value) <= d.max:
                raise ValueError(f"{d.dimension} must lie in {d.min:g}..{d.max:g}, got {value!r}")
        for d in task.dimensions:
            rid = next_id(con, "chat_ratings", "rating_id")
            con.execute("INSERT INTO chat_ratings VALUES (?, ?, ?, ?, ?, ?)",
                        [rid, conversation_id, conv.annotator, d.dimension, float(values[d.dimension]), now])
        con.execute("UPDATE chat_conversations SET state = 'rated', goal = ? WHERE conversation_id = ?",
                    [goal, conversation_id])
        if not task.review:
            _accept(con, task, conversation(con, conversation_id), reviewer=None, now=now.replace(microsecond=0))
            if then is not None:
                then(con, task, task.target_of(conv.simulator))


def rate(con: duckdb.DuckDBPyConnection, conversation_id: int, annotator: str, dimension: str, value: float, *,
         now: datetime | None = None, then: Accepted | None = None) -> None:
    """One rating of the whole dialogue on one dimension (a change is a new row; the latest counts). Once every
    dimension is rated the conversation is 'rated', and in a task without review it is accepted at once (then
    `then` runs in the same transaction, as for review)."""
    now = now or datetime.now()
    with transaction(con):
        conv, task = _held(con, conversation_id, annotator)
        if conv.state not in ("ended", "rated"):
            raise OutOfTurn(_("a conversation is rated once it has ended") if conv.state == "talking" else
                            _("this conversation is {state}: its ratings are fixed").format(
                                state=state_shown(conv.state)))
        dims = {d.dimension: d for d in task.dimensions}
        if dimension not in dims:
            raise ValueError(f"unknown dimension {dimension!r}; this task asks {', '.join(dims)}")
        d = dims[dimension]
        if not d.min <= float(value) <= d.max:
            raise ValueError(f"{dimension} lies in {d.min:g}..{d.max:g}, got {value}")
        rid = next_id(con, "chat_ratings", "rating_id")
        con.execute("INSERT INTO chat_ratings VALUES (?, ?, ?, ?, ?, ?)",
                    [rid, conversation_id, conv.annotator, dimension, float(value), now])
        rated = {r for (r,) in con.execute("SELECT DISTINCT dimension FROM chat_ratings WHERE conversation_id = ?",
                                           [conversation_id]).fetchall()}
        if set(dims) <= rated and conv.state == "ended":
            con.execute("UPDATE chat_conversations SET state = 'rated' WHERE conversation_id = ?", [conversation_id])
            if not task.review:
                _accept(con, task, conversation(con, conversation_id), reviewer=None, now=now)
                if then is not None:
                    then(con, task, task.target)


def ratings(con: duckdb.DuckDBPyConnection, conversation_id: int) -> dict[str, float]:
    """The latest rating per dimension."""
    return {d: v for d, v in con.execute(
        "SELECT dimension, arg_max(value, rating_id) FROM chat_ratings WHERE conversation_id = ? GROUP BY dimension",
        [conversation_id]).fetchall()}


def flag(con: duckdb.DuckDBPyConnection, conversation_id: int, idx: int, annotator: str, name: str, value: bool, *,
         now: datetime | None = None) -> None:
    """Set or clear a per-turn flag on one model message."""
    now = now or datetime.now()
    with transaction(con):
        conv, task = _held(con, conversation_id, annotator)
        if name not in task.flags:
            raise ValueError(f"unknown flag {name!r}; this task offers {', '.join(task.flags) or 'none'}")
        if conv.state in ("accepted", "sent_back"):
            raise OutOfTurn(_("this conversation is {state}: its flags are fixed").format(state=state_shown(conv.state)))
        role = con.execute("SELECT role FROM chat_messages WHERE conversation_id = ? AND idx = ?",
                           [conversation_id, idx]).fetchall()
        if not role or role[0][0] != "assistant":
            raise ValueError("only a model's message can be flagged")
        fid = next_id(con, "chat_flags", "flag_id")
        con.execute("INSERT INTO chat_flags VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [fid, conversation_id, idx, conv.annotator, name, bool(value), now])


def flags(con: duckdb.DuckDBPyConnection, conversation_id: int) -> dict[int, set[str]]:
    """The flags set now, per model message."""
    out: dict[int, set[str]] = {}
    for idx, name in con.execute(
            "SELECT idx, flag FROM (SELECT idx, flag, arg_max(value, flag_id) AS on_ FROM chat_flags "
            "WHERE conversation_id = ? GROUP BY idx, flag) WHERE on_", [conversation_id]).fetchall():
        out.setdefault(int(idx), set()).add(name)
    return out


def review(con: duckdb.DuckDBPyConnection, conversation_id: int, reviewer: str, *, accept: bool, reason: str = "",
           now: datetime | None = None, then: Accepted | None = None) -> int | None:
    """Accept a rated conversation (it becomes a dialogue of the target dataset) or send it back with a reason (a
    fresh conversation on its scenario and endpoint takes its place, for someone else); the new conversation's id
    when sent back. `then(con, task)` runs inside the acceptance's transaction (the scoring job its dialogue needs
    is recorded with it: an accepted dialogue never stands without its job)."""
    now = (now or datetime.now()).replace(microsecond=0)
    reason = (reason or "").strip()
    if not accept and not reason:
        raise ValueError("say why it is sent back: the reason is what the person and the results show")
    if len(reason) > MAX_COMMENT:
        raise ValueError(f"a reason has at most {MAX_COMMENT:,} characters")
    with transaction(con):
        conv = conversation(con, conversation_id)
        task = get(con, conv.task_id)
        if conv.state != "rated":
            raise OutOfTurn(f"conversation {conversation_id} is {conv.state.replace('_', ' ')}: "
                            "only a rated conversation is reviewed")
        if accept:
            _accept(con, task, conv, reviewer=reviewer, now=now)
            if then is not None:
                then(con, task, task.target_of(conv.simulator))
            return None
        con.execute("UPDATE chat_conversations SET state = 'sent_back', reason = ?, reviewer = ?, reviewed_at = ? "
                    "WHERE conversation_id = ?", [reason, reviewer, now, conversation_id])
        new = next_id(con, "chat_conversations", "conversation_id")
        con.execute("INSERT INTO chat_conversations (conversation_id, task_id, scenario, endpoint, slot, state, simulator) "
                    "VALUES (?, ?, ?, ?, ?, 'open', ?)",
                    [new, task.task_id, conv.scenario, conv.endpoint, conv.slot, conv.simulator])
        return int(new)


def dialogue_id_of(task: ChatTask, conversation_id: int) -> str:
    return f"chat{task.task_id}-c{conversation_id}"


def _accept(con, task: ChatTask, conv: Conversation, *, reviewer: str | None, now: datetime) -> None:
    """Inside the caller's transaction: the conversation as a dialogue of the target dataset, its model turns as
    items answered by the endpoint, its ratings as dialogue-level human ratings. A simulated conversation goes to
    the simulator's own dataset (ChatTask.target_of), and its user's ratings are not people's: they stay in
    chat_ratings, where the simulator audit reads them, and are never stored as human ratings."""
    target = task.target_of(conv.simulator)
    dialogue = write_dialogue(con, task, conv, target, reviewer or conv.annotator, now)
    for dimension, value in ({} if conv.simulator else ratings(con, conv.conversation_id)).items():
        con.execute("INSERT INTO human_ratings (dataset, track, target, item_id, dialogue_id, model, annotator, dimension, "
                    "score, origin) VALUES (?, ?, 'dialogue', NULL, ?, ?, ?, ?, ?, ?)",
                    [target, task.track, dialogue, conv.endpoint, conv.annotator, dimension, value, task.origin])
    if not conv.simulator:   # a crowd worker excluded before this acceptance: their ratings stay out (evalcore.store.crowd)
        crowd.kept_out(con, "chat", task.task_id, conv.annotator, task.origin)
    con.execute("UPDATE chat_conversations SET state = 'accepted', reviewer = ?, reviewed_at = ?, dialogue_id = ? "
                "WHERE conversation_id = ?", [reviewer, now, dialogue, conv.conversation_id])


def write_dialogue(con, task: ChatTask, conv: Conversation, target: str, uploader: str | None, now: datetime) -> str:
    """Inside the caller's transaction: the conversation as a dialogue of `target` (made with the track, the task's
    dimensions and the endpoint as a model where missing): its grounding, turns, one item per model turn (the
    context so far) answered by the endpoint; its dialogue id."""
    bump_revision(con, target)
    dialogue = dialogue_id_of(task, conv.conversation_id)
    grounding = scenario(con, task.task_id, conv.scenario)["grounding"]
    texts = messages(con, conv.conversation_id)
    source = con.execute("SELECT language, licence FROM datasets WHERE dataset = ?", [task.dataset]).fetchall()
    language, licence = source[0] if source else (None, None)
    sid = record(con, kind="chat", dataset=target, models=[conv.endpoint], tracks=[task.track],
                 file=f"chat task {task.task_id}, conversation {conv.conversation_id}"
                 + (f", user simulated by {conv.simulator}" if conv.simulator else ""), uploader=uploader)
    con.execute("INSERT OR IGNORE INTO datasets (dataset, language, licence, source, description) VALUES (?, ?, ?, ?, ?)",
                [target, language, licence, f"chat task {task.task_id}",
                 f"Conversations of chat task {task.task_id} ({task.name}) on scenarios of {task.dataset}/{task.track}"
                 + (f", the user played by simulator {conv.simulator}" if conv.simulator else "")])
    skill = con.execute("SELECT competition, skill, corpus FROM tracks WHERE dataset = ? AND track = ?",
                        [task.dataset, task.track]).fetchall()
    competition, track_skill, corpus = skill[0] if skill else (None, None, None)
    con.execute("INSERT OR IGNORE INTO tracks (dataset, track, competition, skill, corpus) VALUES (?, ?, ?, ?, ?)",
                [target, task.track, competition, track_skill, corpus])
    con.execute("INSERT INTO dialogues (dataset, dialogue_id, track, split, grounding) VALUES (?, ?, ?, ?, ?)",
                [target, dialogue, task.track, "simulated" if conv.simulator else "chat",
                 json.dumps(grounding, ensure_ascii=False)])
    context: list[str] = []
    for m in texts.itertuples(index=False):
        speaker = "user" if m.role == "user" else "model"
        con.execute("INSERT INTO turns (dataset, dialogue_id, turn_index, speaker, text) VALUES (?, ?, ?, ?, ?)",
                    [target, dialogue, int(m.idx), speaker, m.text])
        if m.role == "assistant":
            item = f"{dialogue}-t{int(m.idx)}"
            con.execute("INSERT INTO items (dataset, item_id, track, dialogue_id, turn_index, context, grounding, skill, origin) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [target, item, task.track, dialogue, int(m.idx), json.dumps(context, ensure_ascii=False),
                         json.dumps(grounding, ensure_ascii=False), track_skill,
                         f"chat task {task.task_id}, conversation {conv.conversation_id}, message {int(m.idx)}"])
            con.execute("INSERT INTO responses (dataset, item_id, model, text, origin, submission_id) VALUES (?, ?, ?, ?, ?, ?)",
                        [target, item, conv.endpoint, m.text, f"chat:{task.task_id}", sid])
        context.append(m.text)
    con.execute("INSERT OR IGNORE INTO models (model, description, added_at, added_by) VALUES (?, ?, ?, ?)",
                [conv.endpoint, f"registered endpoint {conv.endpoint}", now, task.created_by])
    for d in task.dimensions:
        con.execute("INSERT OR IGNORE INTO dimensions VALUES (?, ?, ?, ?, ?)",
                    [target, d.dimension, d.min, d.max, d.description or None])
    return dialogue


def set_state(con: duckdb.DuckDBPyConnection, task_id: int, state: str) -> None:
    """Close (no messages or ratings until it is reopened; review goes on), reopen, or delete a task. Deleting keeps
    every row (reopen brings it back); dialogues already accepted stay in the target dataset, where `evalcore
    delete-model` removes them, restorably."""
    if state not in ("open", "closed", "deleted"):
        raise ValueError(f"unknown state {state!r}")
    get(con, task_id)
    with transaction(con):
        bump_revision(con)
        con.execute("UPDATE chat_tasks SET state = ? WHERE task_id = ?", [state, task_id])
