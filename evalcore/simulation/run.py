"""Simulated conversations run: each simulator of a chat task talks with each of the task's blind system endpoints
on the task's scenarios, until it writes its template's end marker or the round limit is reached, then answers the
task's questionnaire (every dimension, and whether the goal was reached) as the person would have.

What is stored is what a person's conversation stores (evalcore.store.chats): each message in its own short
transaction, the end, then the ratings. The store is let go while requests are in flight (Handle.let_go), so the
dashboard reads and people chat meanwhile: a writer takes it briefly every FLUSH_EVERY seconds and writes what came
since, in the order it came, in one transaction, so a message is stored within about a second of its arrival (what
a SIGKILL can lose, asked again by the next run). A run is resumable by construction: a conversation is taken up where the store says it
stands (a user message without its reply: the system is asked; a reply: the simulator is; ended: the
questionnaire), so after a kill nothing stored is sent or stored again. Conversations run side by side, one thread
each, `concurrency` at a time; a conversation whose request fails after its retries, or whose write the store
refuses (the task closed meanwhile), stops where it is, with its reason, and the run goes on."""
from __future__ import annotations

import json
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable

import duckdb
from tqdm import tqdm

from evalcore.core.chat import Caller, plain
from evalcore.core.words import count
from evalcore.ingest.lookup import dataset_language
from evalcore.services import chats as service
from evalcore.simulation.conversations import State, load
from evalcore.simulation.templates import UserTemplate, resolve
from evalcore.store import Handle
from evalcore.store import chats as stored
from evalcore.store.endpoints import get as get_endpoint
from evalcore.store.transactions import bump_revision, database_path, transaction

DONE = ("rated", "accepted", "sent_back")
JSON_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)
FLUSH_EVERY = 0.5    # seconds between the writer's turns: what a SIGKILL can lose (asked again by the next run)
SAMPLING = ("temperature", "top_p", "max_tokens")


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


def unchanged(entry, setting: dict, who: str) -> None:
    """Refuse a run whose endpoint is no longer asked as the task froze it (another served model or host, other
    sampling): its conversations would not match the task's signature."""
    now = {"served_model": entry.model, "host": entry.endpoint().host, **{k: getattr(entry, k) for k in SAMPLING}}
    changed = [f"{k} {setting.get(k)!r} -> {v!r}" for k, v in now.items() if setting.get(k) != v]
    if changed:
        raise ValueError(f"{who}: its endpoint {entry.name} changed since the task was made ({'; '.join(changed)}): its "
                         "conversations would not match the task's signature; register it again as it was, or make a "
                         "new task")


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


class Writer:
    """What the conversations' threads received, written in the order it came: every FLUSH_EVERY seconds (counted
    from the last turn's start), the store taken briefly (Handle.now), the task checked open once, and the batch
    written in one transaction. Should the store refuse it, the batch is written again one write per transaction,
    so that a refused write stops only its own conversation (broken), with its reason."""

    def __init__(self, handle: Handle, task: stored.ChatTask, outcome: Outcome, tally: threading.Lock):
        self.handle, self.task, self.outcome, self.tally = handle, task, outcome, tally
        self.pending: list[tuple[int, Callable, str | None]] = []
        self.lock = threading.Lock()
        self.broken: set[int] = set()
        self.stop = threading.Event()
        self.error: BaseException | None = None   # the store failed (a full disk): the run stops and raises it
        self.thread = threading.Thread(target=self._loop, name="evalcore-simulate-writer", daemon=True)

    def put(self, cid: int, write: Callable, kind: str | None = None) -> None:
        """`write(con, task=..., within=...)`; `kind`: "message" (one more stored) or "finished" (it returns the
        scoring job its acceptance queued, or None)."""
        with self.lock:
            self.pending.append((cid, write, kind))

    def _loop(self) -> None:
        wait = FLUSH_EVERY
        while not self.stop.wait(wait):
            began = time.monotonic()
            try:
                self.flush()
            except Exception as exc:   # noqa: BLE001 - said by simulate(), which raises it
                self.error = exc
                return
            wait = max(0.0, FLUSH_EVERY - (time.monotonic() - began))

    def _break(self, cid: int, why: str) -> None:
        self.broken.add(cid)
        with self.tally:
            self.outcome.failed[cid] = f"the store refused a write: {why}"

    def flush(self) -> None:
        with self.lock:
            batch, self.pending = self.pending, []
        batch = [op for op in batch if op[0] not in self.broken]
        if not batch:
            return
        with self.handle.now() as con:
            try:
                with transaction(con):   # the task checked open in the batch's own transaction (writes are serial)
                    state = con.execute("SELECT state FROM chat_tasks WHERE task_id = ?",
                                        [self.task.task_id]).fetchall()[0][0]
                    if state != "open":
                        raise stored.TaskClosed(f"chat task {self.task.task_id} is {state}: nothing was stored")
                    done = [(op, op[1](con, task=self.task, within=True)) for op in batch]
            except stored.TaskClosed as exc:   # closed meanwhile: nothing more is stored, every conversation says why
                for cid, _, _ in batch:
                    self._break(cid, str(exc))
                return
            except (ValueError, duckdb.Error):   # one write refused: each on its own, so only its conversation stops
                done = []
                for op in batch:
                    if op[0] in self.broken:
                        continue
                    try:
                        with transaction(con):
                            done.append((op, op[1](con, task=self.task, within=True)))
                    except (ValueError, duckdb.Error) as exc:
                        self._break(op[0], str(exc))
        with self.tally:
            for (_, _, kind), result in done:
                self.outcome.messages += kind == "message"
                if kind == "finished":
                    self.outcome.finished_now += 1
                    if result is not None:
                        self.outcome.jobs.add(result)

    def close(self) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()
        if self.error is None:
            self.flush()


def simulate(con: duckdb.DuckDBPyConnection, task_id: int, *, simulators: list[str] | None = None,
             concurrency: int | None = None, stop: threading.Event | None = None, progress: bool = False,
             retries: int = 3, backoff: float = 0.5, handle: Handle | None = None,
             on_progress: Callable[[int, int], None] | None = None) -> Outcome:
    """Run every simulated conversation of the task that is not finished (of `simulators` only, when given).
    `handle`: the store to let go of while requests are in flight (the CLI's and a job's worker; its `con` is the
    one to use afterwards); without one, `con` is kept and written on. `on_progress(finished, total)` is called as
    conversations finish."""
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
    todo = [int(c) for c, s in zip(frame["conversation_id"], frame["state"]) if s not in DONE]
    if not todo:
        return outcome
    users = {s: user_template(con, task, s) for s in wanted}
    for who, setting in [*task.settings.items(), *((s, task.simulators[s]) for s in wanted)]:
        unchanged(get_endpoint(con, setting.get("endpoint", who)), setting, who)
    systems = {e: service.system_template(con, task, e) for e in task.endpoints}
    registered = {e: get_endpoint(con, e) for e in {*task.endpoints, *(task.simulators[s]["endpoint"] for s in wanted)}}
    width = max(1, min(int(concurrency or min(r.concurrency for r in registered.values())), len(todo)))
    states = load(con, task, todo)
    lets_go = handle is not None
    handle = handle or Handle(database_path(con), con)
    # a system's caller per endpoint; a simulator's its own, with the seed the task froze for it
    callers = {("system", e): Caller(registered[e].endpoint(), width, retries=retries, backoff=backoff)
               for e in task.endpoints}
    for s in wanted:
        callers[("user", s)] = Caller(registered[task.simulators[s]["endpoint"]].endpoint(seed=task.simulators[s]["seed"]),
                                      width, retries=retries, backoff=backoff)
    stop, tally = stop or threading.Event(), threading.Lock()
    writer = Writer(handle, task, outcome, tally)
    started = time.monotonic()

    def ask(caller: Caller, messages: list[dict]):
        reply = caller.ask(messages)
        with tally:
            outcome.requests += 1
        return reply

    def note(cid: int, why: str) -> None:
        with tally:
            outcome.failed[cid] = why

    def run_one(c: State) -> None:
        cid, user = c.conversation_id, users[c.simulator]
        sim_caller, sys_caller = callers[("user", c.simulator)], callers[("system", c.endpoint)]
        while not stop.is_set() and c.state not in DONE and cid not in writer.broken and writer.error is None:
            if c.state == "ended":
                reply = ask(sim_caller, user.rating_messages(c.user_grounding, c.turns, task.dimensions))
                if reply.error is not None:
                    return note(cid, f"the simulator did not answer the questionnaire: {plain(reply.error)}")
                try:
                    values, goal = parse_rating(reply.text, task.dimensions)
                except ValueError as exc:
                    return note(cid, str(exc))

                def rate(k, values=values, goal=goal, **how):
                    jobs: dict = {}   # the acceptance's scoring job (a task without review)
                    stored.simulated_rate(k, cid, values, goal, then=lambda k2, t, where: jobs.__setitem__(
                        "job", service.queue_scoring(k2, t, where)), **how)
                    return jobs.get("job")
                writer.put(cid, rate, "finished")
                c.state = "rated"
                return
            if c.turns and c.turns[-1][0] == "user":   # the system's turn
                texts = [t for _, t in c.turns]
                reply = ask(sys_caller, systems[c.endpoint].render(texts, c.grounding, [r for r, _ in c.turns]))
                if reply.error is not None:
                    return note(cid, f"the system did not answer: {plain(reply.error)}")
                if reply.flag == "empty":
                    return note(cid, "the system answered with nothing (nothing stored; run again to ask again)")
                after = len(c.turns) - 1
                writer.put(cid, lambda k, r=reply, after=after, task=None, within=False: stored.reply(
                    k, cid, after, r.text, attempts=r.attempts, finish=r.finish, seconds=round(r.seconds, 3),
                    within=within), "message")
                c.turns.append(("assistant", reply.text))
                continue
            if c.rounds() >= task.max_rounds:
                writer.put(cid, lambda k, **how: stored.simulated_end(k, cid, **how))
                c.state = "ended"
                continue
            reply = ask(sim_caller, user.messages(c.user_grounding, c.turns))
            if reply.error is not None:
                return note(cid, f"the simulator did not answer: {plain(reply.error)}")
            text, ended = split_end(reply.text or "", user.end)
            if not ended and not text:   # not an end: nothing stored, asked again by the next run
                return note(cid, "the simulated user's message was empty (nothing stored)")
            if ended:
                if not c.rounds():
                    return note(cid, "the simulated user ended before the system said anything")
                writer.put(cid, lambda k, **how: stored.simulated_end(k, cid, **how))
                c.state = "ended"
                continue
            writer.put(cid, lambda k, r=reply, text=text, **how: stored.simulated_say(
                k, cid, text, attempts=r.attempts, finish=r.finish, seconds=round(r.seconds, 3), **how), "message")
            c.state = "talking"
            c.turns.append(("user", text))

    bar = None
    if progress:
        bar = tqdm(total=len(todo), unit="conv", file=sys.stderr, desc=f"chat task {task_id}")
    pool = ThreadPoolExecutor(max_workers=width)
    try:
        with handle.let_go() if lets_go else nullcontext():
            writer.thread.start()
            try:
                futures = [pool.submit(run_one, states[cid]) for cid in todo if cid in states]
                for done, future in enumerate(as_completed(futures), 1):
                    future.result()
                    if bar is not None:
                        bar.update(1)
                    if on_progress is not None:
                        on_progress(done, len(futures))
            except KeyboardInterrupt:
                stop.set()
                raise
            finally:
                stop.set()
                pool.shutdown(wait=True, cancel_futures=True)
                writer.close()   # what came is written before the store is taken back
    finally:
        for caller in callers.values():
            caller.close()
        if bar is not None:
            bar.close()
        outcome.seconds = time.monotonic() - started
    if writer.error is not None:   # what came after the last batch written is asked again by the next run
        raise writer.error
    if outcome.messages:
        with transaction(handle.con):
            bump_revision(handle.con)   # pages' caches follow the new messages
    return outcome
