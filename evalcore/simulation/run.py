"""Simulated conversations run: each simulator of a chat task talks with each of the task's blind system endpoints
on the task's scenarios, until it writes its template's end marker or the round limit is reached, then answers the
task's questionnaire (every dimension, and whether the goal was reached) as the person would have.

What is stored is what a person's conversation stores (evalcore.store.chats): each message in its own short
transaction when it is received, the end, then the ratings. A run is resumable by construction: a conversation is
taken up where the store says it stands (a user message without its reply: the system is asked; a reply: the
simulator is; ended: the questionnaire), so after a kill nothing stored is sent or stored again; a request in flight
when it died is sent once more. Conversations run side by side, one thread each, `concurrency` at a time; a
conversation whose request fails after its retries stops where it is, with its reason, and the run goes on."""
from __future__ import annotations

import json
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

import duckdb

from evalcore.core.chat import Caller, plain
from evalcore.core.words import count
from evalcore.ingest.lookup import dataset_language
from evalcore.services import chats as service
from evalcore.simulation.templates import UserTemplate, resolve
from evalcore.store import chats as stored
from evalcore.store.endpoints import get as get_endpoint
from evalcore.store.transactions import bump_revision, transaction

DONE = ("rated", "accepted", "sent_back")
JSON_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)


@dataclass
class Outcome:
    task_id: int
    conversations: int          # the simulated conversations this run looked at
    finished_before: int        # rated or accepted already when it began
    finished_now: int = 0
    messages: int = 0           # stored by this run, the user's and the system's
    requests: int = 0
    seconds: float = 0.0
    failed: dict = field(default_factory=dict)   # conversation id -> why it stopped where it is
    jobs: set = field(default_factory=set)       # scoring jobs queued by acceptances (a task without review)

    def summary(self) -> str:
        done = self.finished_before + self.finished_now
        text = (f"chat task {self.task_id}: {done} of {count(self.conversations, 'simulated conversation')} finished "
                f"({self.finished_now} now), {count(self.messages, 'message')} stored by this run, "
                f"{count(self.requests, 'request')} in {self.seconds:.1f} s")
        if self.failed:
            text += f"; {count(len(self.failed), 'conversation')} stopped (run again to go on): " + "; ".join(
                f"{cid}: {why}" for cid, why in list(self.failed.items())[:5]) + (" ..." if len(self.failed) > 5 else "")
        return text


def user_template(con: duckdb.DuckDBPyConnection, task: stored.ChatTask, simulator: str) -> UserTemplate:
    """The simulator's user template as the task froze it; refused if it has changed since (a file edited, a shipped
    one in another evalcore): its conversations would not match the task's signature."""
    setting = task.simulators[simulator]
    language, _ = dataset_language(con, task.dataset)
    skill = con.execute("SELECT skill FROM tracks WHERE dataset = ? AND track = ?", [task.dataset, task.track]).fetchall()
    source = setting["template_source"]
    user = resolve(setting["template"] if source == "shipped" else source, skill[0][0] if skill else None, language,
                   setting["style"])
    if user.sha256 != setting["template_sha256"]:
        raise ValueError(f"the user template {setting['template']} (style {setting['style']}) changed since chat task "
                         f"{task.task_id} was made: its conversations would not match the task's signature")
    return user


SAMPLING = ("temperature", "top_p", "max_tokens")


def unchanged(entry, setting: dict, who: str) -> None:
    """Refuse a run whose endpoint is no longer asked as the task froze it (another served model or host, other
    sampling): its conversations would not match the task's signature."""
    now = {"served_model": entry.model, "host": entry.endpoint().host, **{k: getattr(entry, k) for k in SAMPLING}}
    changed = [f"{k} {setting.get(k)!r} -> {v!r}" for k, v in now.items() if setting.get(k) != v]
    if changed:
        raise ValueError(f"{who}: its endpoint {entry.name} changed since the task was made ({'; '.join(changed)}): its "
                         "conversations would not match the task's signature; register it again as it was, or make a "
                         "new task")


def user_grounding(scene: dict) -> dict:
    """What the simulated user knows of a scenario: its grounding, and a chit-chat scenario's opening line as its
    topic (what a person is offered to start with)."""
    grounding = dict(scene["grounding"] or {})
    if scene.get("opening"):
        grounding.setdefault("topic", [scene["opening"]])
    return grounding


def parse_rating(text: str, dimensions) -> tuple[dict[str, float], bool | None]:
    """The questionnaire's answer: the first JSON object in the text with a number for every dimension (in range)
    and "goal" true, false or absent. ValueError saying what is wrong (nothing is stored then)."""
    for match in JSON_OBJECT.finditer(text or ""):
        try:
            answer = json.loads(match.group())
        except ValueError:
            continue
        if isinstance(answer, dict):
            break
    else:
        raise ValueError("the questionnaire's answer holds no JSON object")
    values = {}
    for d in dimensions:
        value = answer.get(d.dimension)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not d.min <= value <= d.max:
            raise ValueError(f"the questionnaire's answer gives {d.dimension} {str(value)[:40]!r}, not a number in "
                             f"{d.min:g}..{d.max:g}")
        values[d.dimension] = float(value)
    goal = answer.get("goal")
    return values, goal if isinstance(goal, bool) else None


def split_end(text: str, marker: str) -> tuple[str, bool]:
    """(the message, whether the user ended the conversation): a message holding the end marker ends it; its other
    words are not sent (the system would have to answer them)."""
    if marker and marker in text:
        return "", True
    return text.strip(), False


class Conversation:
    """One simulated conversation taken up where the store has it; `step` advances it by one request."""

    def __init__(self, con, lock, task: stored.ChatTask, conversation_id: int, user: UserTemplate, system_template):
        self.con, self.lock, self.task, self.id = con, lock, task, conversation_id
        with lock:
            self.conv = stored.conversation(con, conversation_id)
            frame = stored.messages(con, conversation_id)
            self.scene = stored.scenario(con, task.task_id, self.conv.scenario)
        self.turns = list(zip(frame["role"].tolist(), frame["text"].tolist()))
        self.state = self.conv.state
        self.user, self.system_template = user, system_template
        self.grounding = user_grounding(self.scene)

    def rounds(self) -> int:
        return sum(role == "assistant" for role, _ in self.turns)


def simulate(con: duckdb.DuckDBPyConnection, task_id: int, *, simulators: list[str] | None = None,
             concurrency: int | None = None, stop: threading.Event | None = None, progress: bool = False,
             retries: int = 3, backoff: float = 0.5) -> Outcome:
    """Run every simulated conversation of the task that is not finished (of `simulators` only, when given)."""
    task = stored.get(con, task_id)
    if not task.simulators:
        raise ValueError(f"chat task {task_id} has no simulators (`evalcore chat create ... --simulators S1,S2`)")
    unknown = [s for s in simulators or [] if s not in task.simulators]
    if unknown:
        raise ValueError(f"chat task {task_id} has no simulator {unknown[0]!r}; it has {', '.join(task.simulators)}")
    if task.state != "open":
        raise ValueError(f"chat task {task_id} is {task.state}: reopen it to run its simulated conversations")
    wanted = simulators or list(task.simulators)
    frame = stored.conversations(con, task_id)
    frame = frame[frame["simulator"].isin(wanted)]
    outcome = Outcome(task_id, len(frame), int(frame["state"].isin(DONE).sum()))
    todo = frame.loc[~frame["state"].isin(DONE), ["conversation_id", "simulator", "endpoint"]]
    if todo.empty:
        return outcome
    users = {s: user_template(con, task, s) for s in wanted}
    for who, setting in [*task.settings.items(), *((s, task.simulators[s]) for s in wanted)]:
        unchanged(get_endpoint(con, setting.get("endpoint", who)), setting, who)
    systems = {e: service.system_template(con, task, e) for e in task.endpoints}
    registered = {e: get_endpoint(con, e) for e in {*task.endpoints, *(task.simulators[s]["endpoint"] for s in wanted)}}
    width = concurrency or min(r.concurrency for r in registered.values())
    width = max(1, min(int(width), len(todo)))
    # a system's caller per endpoint; a simulator's its own (its seed is sent where its endpoint sets none: a
    # simulator on a system's endpoint, self-chat, is asked with the simulator's seed)
    callers = {("system", e): Caller(registered[e].endpoint(), width, retries=retries, backoff=backoff)
               for e in task.endpoints}
    for s in wanted:
        entry = registered[task.simulators[s]["endpoint"]]
        callers[("user", s)] = Caller(entry.endpoint(seed=task.simulators[s]["seed"]), width, retries=retries,
                                      backoff=backoff)
    lock, stop = threading.Lock(), stop or threading.Event()
    started = time.monotonic()

    def note(cid: int, why: str) -> None:
        outcome.failed[cid] = why

    tally = threading.Lock()   # the outcome's counters, added to from every conversation's thread

    def ask(caller: Caller, messages: list[dict]):
        reply = caller.ask(messages)
        with tally:
            outcome.requests += 1
        return reply

    def stored_one(finished: bool = False) -> None:
        with tally:
            outcome.messages += not finished
            outcome.finished_now += finished

    def run_one(cid: int, simulator: str, endpoint: str) -> None:
        c = Conversation(con, lock, task, cid, users[simulator], systems[endpoint])
        sim_caller, sys_caller = callers[("user", simulator)], callers[("system", endpoint)]
        while not stop.is_set() and c.state not in DONE:
            if c.state == "ended":
                reply = ask(sim_caller, c.user.rating_messages(c.grounding, c.turns, task.dimensions))
                if reply.error is not None:
                    return note(cid, f"the simulator did not answer the questionnaire: {plain(reply.error)}")
                try:
                    values, goal = parse_rating(reply.text, task.dimensions)
                except ValueError as exc:
                    return note(cid, str(exc))
                jobs: dict = {}
                with lock:
                    stored.simulated_rate(con, cid, values, goal, then=lambda k, t, where: jobs.setdefault(
                        "job", service.queue_scoring(k, t, where)))
                with tally:
                    outcome.jobs.update(jobs.values())
                c.state = "rated"
                return stored_one(finished=True)
            if c.turns and c.turns[-1][0] == "user":   # the system's turn
                texts = [t for _, t in c.turns]
                reply = ask(sys_caller, c.system_template.render(texts, c.scene["grounding"], [r for r, _ in c.turns]))
                if reply.error is not None:
                    return note(cid, f"the system did not answer: {plain(reply.error)}")
                if reply.flag == "empty":
                    return note(cid, "the system answered with nothing (nothing stored; run again to ask again)")
                with lock:
                    stored.reply(con, cid, len(c.turns) - 1, reply.text, attempts=reply.attempts, finish=reply.finish,
                                 seconds=round(reply.seconds, 3))
                c.turns.append(("assistant", reply.text))
                stored_one()
                continue
            if c.rounds() >= task.max_rounds:
                with lock:
                    stored.simulated_end(con, cid)
                c.state = "ended"
                continue
            reply = ask(sim_caller, c.user.messages(c.grounding, c.turns))
            if reply.error is not None:
                return note(cid, f"the simulator did not answer: {plain(reply.error)}")
            text, ended = split_end(reply.text or "", c.user.end)
            if not ended and not text:   # not an end: nothing stored, asked again by the next run
                return note(cid, "the simulated user's message was empty (nothing stored)")
            if ended:
                if not c.rounds():
                    return note(cid, "the simulated user ended before the system said anything")
                with lock:
                    stored.simulated_end(con, cid)
                c.state = "ended"
                continue
            with lock:
                stored.simulated_say(con, cid, text, attempts=reply.attempts, finish=reply.finish,
                                     seconds=round(reply.seconds, 3))
            c.state = "talking"
            c.turns.append(("user", text))
            stored_one()

    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(todo), unit="conv", file=sys.stderr, desc=f"chat task {task_id}")
    pool = ThreadPoolExecutor(max_workers=width)
    try:
        futures = {pool.submit(run_one, int(cid), sim, end): int(cid)
                   for cid, sim, end in zip(todo["conversation_id"], todo["simulator"], todo["endpoint"])}
        for future in as_completed(futures):
            try:
                future.result()
            except (ValueError, duckdb.Error) as exc:   # the store refused a write: the conversation stops, with why
                outcome.failed[futures[future]] = str(exc)
            if bar is not None:
                bar.update(1)
    except KeyboardInterrupt:
        stop.set()
        raise
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        for caller in callers.values():
            caller.close()
        if bar is not None:
            bar.close()
        outcome.seconds = time.monotonic() - started
        if outcome.messages:
            with lock, transaction(con):
                bump_revision(con)   # pages' caches follow the new messages
    return outcome
