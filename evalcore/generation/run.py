"""Generation: a benchmark's items sent to a registered endpoint, each rendered by its skill's template, and the
replies stored as one model's responses in one submission, signed like a metric's values.

Resumable by construction: a reply is committed in a batch within about a second of its arrival, and a run sends
only the items that have no reply stored, so a re-run after a crash, a SIGKILL or Ctrl-C sends the rest and a reply
is never stored twice (the responses' key is (dataset, item, model); a batch inserts what is not there). A run
whose signature differs from the stored one's (another endpoint, template, sampling or sample) is refused: one
model name, one way of asking. The store is let go while requests are in flight (Handle.let_go), so the
dashboard reads it meanwhile; each batch takes it briefly.
"""
from __future__ import annotations

import json
import os
import random
import socket
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable

import duckdb
from tqdm import tqdm

from evalcore.core.chat import OVERDUE, Refused, Retryable, chat_iter, served_models
from evalcore.core.keys import REFUSED, key_hint, where_from
from evalcore.core.processes import alive_on
from evalcore.core.words import count
from evalcore.generation.signature import Plan, sign
from evalcore.generation.source import Item, load_items
from evalcore.generation.templates import Template, resolve
from evalcore.ingest.lookup import dataset_language
from evalcore.store import Handle, StoreError, next_id, transaction
from evalcore.store.endpoints import Registered
from evalcore.store.endpoints import get as get_endpoint
from evalcore.store.history import current_user, record
from evalcore.store.transactions import bump_revision

FLUSH_EVERY = 1.0    # seconds between batch commits: what a SIGKILL can lose (sent again by the re-run)
FLUSH_ROWS = 500     # replies per batch at most
RETRIES = 3          # attempts per item (backoff and Retry-After between them)
FATAL = (*REFUSED, "HTTP 404")   # failures every item would meet: the run stops at the first
# Items in a row that failed after all their attempts, at least, for the endpoint to count as down and the run to
# stop; and at least twice the concurrency (the requests in flight when a server goes down fail together)
DOWN_AFTER = 3


@dataclass
class Outcome:
    """What a run did: its generation, replies stored now and in all, failures and why, why it stopped."""
    generation: int
    model: str
    total: int
    stored_before: int
    stored_now: int = 0
    failed: Counter = field(default_factory=Counter)   # reason -> items
    flags: Counter = field(default_factory=Counter)    # empty, length, refused, cut -> replies stored so
    cleaned: Counter = field(default_factory=Counter)  # what was removed from a reply's text -> replies stored so
    stopped: str | None = None   # why the run ended before every item had a reply
    submission: int | None = None
    tracks: list[str] = field(default_factory=list)

    @property
    def missing(self) -> int:
        return self.total - self.stored_before - self.stored_now

    def lines(self) -> list[str]:
        out = [f"{self.model}: {self.stored_now:,} replies stored now, "
               f"{self.stored_before + self.stored_now:,} of {self.total:,} items answered "
               f"(generation {self.generation}, submission {self.submission})"]
        if self.flags:
            out.append("stored with a reason: " + ", ".join(f"{n:,} {FLAG_WORDS[k]}" for k, n in self.flags.most_common()))
        for note, n in self.cleaned.most_common(3):
            out.append(f"{count(n, 'reply', 'replies')} with characters removed ({note})")
        for reason, n in self.failed.most_common(5):
            out.append(f"no reply for {count(n, 'item')}: {reason}")
        if self.stopped:
            out.append(f"stopped: {self.stopped}")
        if self.missing:
            out.append(f"{count(self.missing, 'item')} without a reply: run the same command again to send only those")
        return out


FLAG_WORDS = {"empty": "empty", "length": "cut by the length limit (max_tokens)", "refused": "refused by the server",
              "cut": "cut by the client's token or byte limit"}


def prepare(con: duckdb.DuckDBPyConnection, *, dataset: str, tracks: list[str] | None, endpoint: str, model: str,
            items: int | None = None, seed: int | None = None, template: str | None = None) -> Plan:
    """What a run will send and how it is signed (no request yet). ValueError for a choice that cannot run."""
    entry = get_endpoint(con, endpoint)
    chosen = load_items(con, dataset, tracks)
    if not chosen:
        raise ValueError(f"no items in {dataset} {', '.join(tracks or [])}: nothing to generate")
    if items is not None:
        if items < 1:
            raise ValueError("--items must be at least 1")
        pick = random.Random(0 if seed is None else seed).sample(range(len(chosen)), min(items, len(chosen)))
        chosen = [chosen[i] for i in sorted(pick)]
    language, _ = dataset_language(con, dataset)
    templates: dict[str, Template] = {}
    for it in chosen:
        if it.track not in templates:
            templates[it.track] = resolve(template or entry.template, it.skill, language)
    return sign(dataset, sorted({it.track for it in chosen}), entry, model, chosen, templates,
                sample=None if items is None else (items, 0 if seed is None else seed))


def begin(con: duckdb.DuckDBPyConnection, plan: Plan) -> tuple[int, int, int]:
    """The generation this plan continues, or a new one with its submission, in one transaction:
    (generation id, submission id, replies stored already). Refuses another signature, a run alive elsewhere,
    and a model name whose responses came from somewhere else."""
    with transaction(con):
        row = con.execute("SELECT generation_id, signature, submission_id, state, pid, host FROM generations "
                          "WHERE dataset = ? AND model = ?", [plan.dataset, plan.model]).fetchall()
        have = con.execute("SELECT count(*) FILTER (WHERE g.submission_id IS NULL "
                           "OR r.submission_id IS DISTINCT FROM g.submission_id) "
                           "FROM responses r LEFT JOIN generations g USING (dataset, model) "
                           "WHERE r.dataset = ? AND r.model = ?", [plan.dataset, plan.model]).fetchall()[0][0]
        if have:
            raise ValueError(f"{plan.model} already has {count(have, 'response')} in {plan.dataset} that this "
                             "generation did not write: give another --model name (or `evalcore delete-model` "
                             "first, restorable)")
        if row:
            gid, signature, sid, state, pid, host = row[0]
            if signature != plan.signature:
                raise ValueError(f"{plan.model} was generated in {plan.dataset} as {signature}; this run would be "
                                 f"{plan.signature}: give another --model name, so each name is one way of asking")
            if state == "running" and pid != os.getpid() and alive_on(pid, host):
                raise ValueError(f"a generation of {plan.model} on {plan.dataset} is running (process {pid} on {host})")
        else:
            sid = record(con, kind="generate", dataset=plan.dataset, models=[plan.model], tracks=plan.tracks,
                         file=f"endpoint {plan.endpoint.name} ({plan.endpoint.base_url})", uploader=current_user())
            gid = next_id(con, "generations", "generation_id")
            con.execute("INSERT INTO generations (generation_id, dataset, model, endpoint, tracks, signature, details, "
                        "submission_id, state, total, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)",
                        [gid, plan.dataset, plan.model, plan.endpoint.name, json.dumps(plan.tracks, ensure_ascii=False),
                         plan.signature, json.dumps(plan.details, ensure_ascii=False), sid, len(plan.items),
                         datetime.now()])
            con.execute("INSERT OR IGNORE INTO models (model, description, added_at, added_by) VALUES (?, ?, ?, ?)",
                        [plan.model, f"generated by endpoint {plan.endpoint.name}", datetime.now(), current_user()])
        con.execute("UPDATE generations SET state = 'running', pid = ?, host = ?, updated_at = ?, detail = NULL "
                    "WHERE generation_id = ?", [os.getpid(), socket.gethostname(), datetime.now(), gid])
        stored = con.execute("SELECT count(*) FROM responses WHERE dataset = ? AND model = ? AND submission_id = ?",
                             [plan.dataset, plan.model, sid]).fetchall()[0][0]
    return int(gid), int(sid), int(stored)


def preflight(entry: Registered) -> None:
    """Refuse, before any item is sent, an endpoint that cannot answer: unreachable, a key it refuses (naming
    where the key comes from), or a model name it does not serve (listing those it does). A server without
    GET /models is let through: its first replies decide."""
    try:
        served = served_models(entry.endpoint())
    except Retryable as exc:
        raise ValueError(f"endpoint {entry.name} ({entry.base_url}) cannot be reached: {exc.reason}") from None
    except Refused as exc:
        if key_hint(str(exc), entry.api_key_env):
            raise ValueError(f"endpoint {entry.name} refused the key ({exc}); {where_from(entry.api_key_env)}") from None
        return
    if served and entry.model not in served:
        raise ValueError(f"endpoint {entry.name} does not serve {entry.model!r}; it serves: {', '.join(served)} "
                         f"(`evalcore endpoint add {entry.name} --base-url {entry.base_url} --model NAME --replace`)")


class Writer:
    """Replies gathered and committed in batches, each in one short transaction that takes the store briefly."""

    def __init__(self, handle: Handle, plan: Plan, gid: int, sid: int, outcome: Outcome,
                 on_progress: Callable[[int, int], None] | None):
        self.handle, self.plan, self.gid, self.sid, self.outcome = handle, plan, gid, sid, outcome
        self.on_progress = on_progress
        self.rows: list[tuple] = []
        self.last = time.monotonic()

    def add(self, item: Item, reply) -> None:
        self.rows.append((item, reply))
        if len(self.rows) >= FLUSH_ROWS or time.monotonic() - self.last >= FLUSH_EVERY:
            self.flush()

    def flush(self, state: str | None = None, detail: str | None = None, final: bool = False) -> None:
        rows, self.rows, self.last = self.rows, [], time.monotonic()
        with self.handle.now() as con, transaction(con):
            ds, model = self.plan.dataset, self.plan.model
            if rows:
                # one statement per table over the batch's columns as lists: executemany ran a statement per row,
                # 0.9 s for a batch of 70 replies
                ids = [it.item_id for it, _ in rows]
                con.execute(
                    "INSERT INTO responses (dataset, item_id, model, text, origin, submission_id) "
                    "SELECT ?, unnest(?::VARCHAR[]), ?, unnest(?::VARCHAR[]), ?, ? ON CONFLICT DO NOTHING",
                    [ds, ids, model, [r.text for _, r in rows], f"endpoint {self.plan.endpoint.name}", self.sid])
                con.execute(
                    "INSERT OR REPLACE INTO generated (dataset, item_id, model, generation_id, flag, finish, attempts, "
                    "seconds) SELECT ?, unnest(?::VARCHAR[]), ?, ?, unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), "
                    "unnest(?::INTEGER[]), unnest(?::DOUBLE[])",
                    [ds, ids, model, self.gid, [r.flag for _, r in rows], [r.finish for _, r in rows],
                     [r.attempts for _, r in rows], [round(r.seconds, 3) for _, r in rows]])
            stored = con.execute("SELECT count(*) FROM responses WHERE dataset = ? AND model = ? AND submission_id = ?",
                                 [ds, model, self.sid]).fetchall()[0][0]
            con.execute("UPDATE generations SET stored = ?, failed = ?, updated_at = ?, state = coalesce(?, state), "
                        "detail = coalesce(?, detail) WHERE generation_id = ?",
                        [stored, sum(self.outcome.failed.values()), datetime.now(), state, detail, self.gid])
            if final:   # once per run: pages' caches follow the new responses (not every second of a run)
                con.execute("UPDATE submissions SET rows_written = ? WHERE submission_id = ?",
                            [json.dumps({"responses": stored}), self.sid])
                bump_revision(con, ds)
        self.outcome.stored_now = stored - self.outcome.stored_before
        for _, r in rows:
            if r.flag:
                self.outcome.flags[r.flag] += 1
            if r.cleaned:
                self.outcome.cleaned[r.cleaned] += 1
        if self.on_progress is not None:
            self.on_progress(stored, self.outcome.total)


def run(handle: Handle, plan: Plan, *, stop: threading.Event | None = None, progress: bool = False,
        on_progress: Callable[[int, int], None] | None = None) -> Outcome:
    """Send every item of `plan` that has no reply stored, and store the replies (see the module's docstring).
    `progress`: a bar with rate and ETA on standard error. `stop`: set it to send nothing more (Ctrl-C does so)."""
    preflight(plan.endpoint)
    gid, sid, stored = begin(handle.con, plan)
    outcome = Outcome(gid, plan.model, len(plan.items), stored, submission=sid, tracks=plan.tracks)
    done = {i for (i,) in handle.con.execute("SELECT item_id FROM responses WHERE dataset = ? AND model = ?",
                                             [plan.dataset, plan.model]).fetchall()}
    todo = [it for it in plan.items if it.item_id not in done]
    stop = stop or threading.Event()
    writer = Writer(handle, plan, gid, sid, outcome, on_progress)
    bar = _bar(progress, outcome)
    width = plan.endpoint.concurrency
    failing = 0   # failures in a row: an endpoint that went down stops the run, the rest resumable
    endpoint = plan.endpoint.endpoint(stream=True)
    try:
        with handle.let_go():
            messages = ((it, plan.templates[it.track].render(it.context, it.grounding, it.speakers)) for it in todo)
            for item, reply in chat_iter(endpoint, messages, concurrency=width, retries=RETRIES, stop=stop):
                if bar is not None:
                    bar.update(1)
                if reply.text is None:
                    outcome.failed[reply.error] += 1
                    # items that failed after their retries, or past their deadline, in a row (a refused answer is
                    # the item's own)
                    failing += " after " in reply.error or reply.error.startswith(OVERDUE)
                    if reply.error.startswith(FATAL) or failing >= max(2 * width, DOWN_AFTER):
                        outcome.stopped = outcome.stopped or _why(reply.error, plan.endpoint, failing)
                        stop.set()
                    continue
                failing = 0
                writer.add(item, reply)
    except KeyboardInterrupt:
        stop.set()
        outcome.stopped = "interrupted (Ctrl-C)"
        writer.flush("stopped", outcome.stopped, final=True)
        raise
    except Exception as exc:   # a bug or the store failing: the generation is not left 'running', then the traceback
        stop.set()
        outcome.stopped = f"ended by an error: {type(exc).__name__}: {exc}"[:2000]
        try:
            writer.flush("stopped", outcome.stopped, final=True)
        except Exception:   # the store itself may be what failed: the first error is the one to see
            pass
        raise
    finally:
        if bar is not None:
            bar.close()
    writer.flush()   # the last replies first: what is missing is counted from what is stored
    finished = outcome.missing == 0
    writer.flush("done" if finished else "stopped", None if finished else (outcome.stopped or _failed(outcome)),
                 final=True)
    return outcome


def _why(error: str, entry: Registered, failing: int) -> str:
    if key_hint(error, entry.api_key_env):
        return f"the endpoint refused the key ({error}); {where_from(entry.api_key_env)}"
    if error.startswith("HTTP 404"):
        return f"the endpoint answered 404 ({error}): `evalcore endpoint test {entry.name}` lists the served models"
    return f"{failing} requests in a row failed, the last with: {error}"


def _failed(outcome: Outcome) -> str:
    return "; ".join(f"{n} × {reason}" for reason, n in outcome.failed.most_common(3))[:2000]


def _bar(progress: bool, outcome: Outcome):
    if not progress:
        return None
    return tqdm(total=outcome.total, initial=outcome.stored_before, unit="reply", file=sys.stderr,
                desc=f"generating {outcome.model}", dynamic_ncols=True)


def generate(handle: Handle, *, dataset: str, tracks: list[str] | None, endpoint: str, model: str,
             items: int | None = None, seed: int | None = None, template: str | None = None, progress: bool = False,
             on_progress: Callable[[int, int], None] | None = None, stop: threading.Event | None = None) -> Outcome:
    """prepare() then run(): the whole of `evalcore generate`."""
    plan = prepare(handle.con, dataset=dataset, tracks=tracks, endpoint=endpoint, model=model, items=items, seed=seed,
                   template=template)
    return run(handle, plan, stop=stop, progress=progress, on_progress=on_progress)


__all__ = ["Outcome", "Plan", "StoreError", "generate", "prepare", "run"]
