"""Benchmark: a crowd study's launch burst at the protocol level (issue 65, item 4): hundreds of workers open the
study's link within minutes and rate their share through one dashboard server, every answer kept once.

    python bench/crowd.py [--workers 300] [--enter-seconds 120] [--rate-minutes 10] [--processes 1,2]
                          [--items 1000] [--think-scale 1] [--unit-seconds LO:HI] [--store STORE] [--json OUT]
    python bench/crowd.py --workers 20 --enter-seconds 10 --rate-minutes 1     # a short try
    python bench/crowd.py --unit-seconds 30:75      # the issue's pace: a share of 10 units over about 10 minutes

The study: a store made with `evalcore init` (or a copy of --store, one such store) and, through the services (no
SQL), a rating task on demo-zh (Info and Coh, --items units, K = 3, its language Chinese, as the dataset's), opened
for Prolific with 10 units per worker of which 2 are gold (`crowd gold`: two nonsense replies that must get Coh 0, one
reply copying the item's knowledge that must get Info 2), one comprehension question, completion code DONE42 and
failed code FAIL42. 1,000 units x K 3 = 3,000 places for 300 workers x 8 real units. The server: `python app.py` at
one process, `evalcore app --processes P` at more (bench/load.py's way), on a fresh copy of that store for each P;
worker k uses server k mod P, as a proxy that keeps each browser on one server spreads them.

Each worker is one websocket session speaking Streamlit's protocol (tests/support/streamlit_session.py) from its own
client address (127.1.x.y: the page knows a browser by its address and User-Agent), opening
`/annotate?task=N&PROLIFIC_PID=<24 hex>&STUDY_ID=s1&SESSION_ID=<24 hex>` at a uniformly random time over
--enter-seconds. It answers the comprehension question (the form's radio, then its submit button), rates the units the
page draws (the segmented control of each dimension) until the page shows its code or --rate-minutes after its entry
have passed. A page that says it cannot go on now (the store busy: a rating not stored, no unit drawn) is met as a
person would: "Try again" (or a reload) 2-5 s later, at most RETRIES times per worker, the rating given again. Planted:
  careless (10%)  every dimension its highest value, 1 s between clicks: fast, straight-lined, failing the nonsense
                  gold units;
  second identity (5%)  after its first unit, opens the link again from the same address with another PROLIFIC_PID
                  and SESSION_ID (an edited URL): must be refused; then goes on as a careful worker;
  careful (the rest)  2-8 s between clicks, the first click on a unit no sooner than the unit's reading floor (its
                  characters / evalcore.analysis.crowd_quality.CHARS_PER_SECOND, + 0.5-2 s: a careful worker reads the
                  text before answering, and the pass rule flags answers faster than that); real units get varied
                  values, gold units their expected answer. Reading at the floor (25 characters a second) they finish
                  their 10 units in about 4 minutes: a harder burst than the issue's, whose workers rate for 10.
                  --unit-seconds LO:HI: at least a uniform LO-HI seconds before a unit's first click (30:75: about
                  57 s a unit with the second click, their share over about 10 minutes, as the issue has it).
A bench shortcut: the workers know which unit is gold, its expected answer and each unit's reading floor from the
store (read before the server starts: `crowd_store.gold`, `crowd.text_chars`), by the unit number in the rating
control's key; a real worker sees nothing that tells a gold unit from a real one. --think-scale S < 1 (for trying)
multiplies every wait by S, and then sets the study's too-fast rule off (too_fast_max 1.0): careful workers no longer
wait the reading floor out in full.

Measured per process count: seconds per click (from sending the rerun to its script or fragment finishing: the entry,
the question's submit, each rating), p50/p95/max, by kind and over all; errors (an exception drawn, a click with no
script_finished in 120 s, a dropped socket); the servers' CPU-seconds (/proc, user + system) per click; this client's
own CPU-seconds. Then, the server stopped, the store is checked against every session's own log:
  - each logged rating click (worker, unit, dimension, value) is stored once in task_answers (lost: none, doubled:
    more than one row), and no rating is stored that no session logged;
  - no worker answered more than the study's 10 units, and no real unit holds more than K not-excluded workers;
  - the excluded workers (`crowd_store.excluded`, what `crowd workers` lists) are the planted careless and
    second-identity workers among those who finished (the page calls `finish`, which applies the pass rule, when it
    shows the code); each finished worker got the code its kind expects;
  - every second identity was refused (the page said so, no worker was stored under its identifier, the refusal
    counted on the first);
  - the platform identifiers (PROLIFIC_PID, SESSION_ID) occur in no ForwardMsg any session received (the bytes of
    every message, counted by the message's kind and whether the identifier was that session's own: the page keeps
    the worker's own identifiers in their address bar, so that a reload resumes them, and Streamlit's
    page_info_changed carries that query string back to the browser that sent it; what the page drew, every other
    message, must hold none), and not in the server's log.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from bench.annotate import serve  # noqa: E402
from bench.load import serve_group  # noqa: E402
from bench.protocol import cpu_seconds, p95, servers  # noqa: E402
from evalcore.analysis.crowd_quality import CHARS_PER_SECOND  # noqa: E402
from evalcore.services import crowd  # noqa: E402
from evalcore.services import tasks as service  # noqa: E402
from evalcore.store import connect  # noqa: E402
from evalcore.store import crowd as crowd_store  # noqa: E402
from evalcore.store import tasks as stored  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402
from support.streamlit_session import Session, Widget  # noqa: E402

UNITS, GOLD, K = 10, 2, 3
DONE, FAIL = "DONE42", "FAIL42"
DIMENSIONS = ["Info", "Coh"]
QUESTION = ("你要评的是什么？", ["只看回复的语法", "回复在对话上下文中的表现"], 1)   # (text, options, the right one)
TIMEOUT = 120.0
PACE: tuple[float, float] | None = None   # --unit-seconds LO:HI: a careful worker's least time on a unit's first click
RETRIES = 20   # times a worker reloads or clicks "Try again" when the page says it cannot go on now
# the identifiers a session might find in what it received: 24 hex digits after a prefix of this bench's own
PID_PREFIX, SESSION_PREFIX = "b3c0", "5e55"
IDS = re.compile(rb"(?=((?:b3c0|5e55)[0-9a-f]{20}))")


# ---------------------------------------------------------------- a worker's tab
class Tab(Session):
    """A worker's session that also reads radios, form submit buttons and code blocks, looks through the bytes of
    every ForwardMsg it receives for platform identifiers, and names the page it is on by its hash in each rerun, as
    the frontend does (without it, the full rerun a fragment asks for with st.rerun ran the app's first page)."""

    def __init__(self, *args, ids: set[str], own: tuple[str, ...], **kwargs):
        super().__init__(*args, **kwargs)
        self.ids, self.own = ids, own
        self.id_hits: list[tuple[str, str, bool]] = []   # (the message's kind, the identifier, whether it is this tab's)
        self.received = 0   # bytes
        self.page_hash = ""

    async def open(self) -> "Tab":
        from websockets.asyncio.client import connect as ws_connect

        self.conn = await ws_connect(self.base.replace("http", "ws") + "/_stcore/stream", subprotocols=["streamlit"],
                                     max_size=None, open_timeout=self.timeout, additional_headers=self.headers,
                                     **({"local_addr": self.local_addr} if self.local_addr else {}))
        recv, send = self.conn.recv, self.conn.send

        async def scanned(*args, **kwargs):
            raw = await recv(*args, **kwargs)
            data = raw.encode() if isinstance(raw, str) else raw
            self.received += len(data)
            fwd = ForwardMsg()
            fwd.ParseFromString(data)
            kind = fwd.WhichOneof("type")
            if kind == "navigation":   # the page now shown, as the frontend keeps it
                self.page_hash = fwd.navigation.page_script_hash
            found = {m.group(1).decode() for m in IDS.finditer(data)} & self.ids
            if found:
                if kind == "delta":
                    kind += ":" + (fwd.delta.new_element.WhichOneof("type") or fwd.delta.WhichOneof("type") or "")
                self.id_hits.extend((kind, i, i in self.own) for i in sorted(found))
            return raw

        async def sent(raw, *args, **kwargs):
            """A rerun names the page shown by its hash too, as the frontend's does: a rerun the script asks for
            (st.rerun in a fragment) reruns the page the session is on, not the app's first page."""
            if self.page_hash:
                msg = BackMsg()
                msg.ParseFromString(raw)
                if msg.WhichOneof("type") == "rerun_script":
                    msg.rerun_script.page_script_hash = self.page_hash
                    raw = msg.SerializeToString()
            return await send(raw, *args, **kwargs)

        self.conn.recv, self.conn.send = scanned, sent
        await self.run()
        return self

    def _read(self, el, fragment: str, drawn: list, seen: dict) -> None:
        kind = el.WhichOneof("type")
        if kind == "radio":
            seen[el.radio.id] = Widget(el.radio.id, "radio", el.radio.label, fragment, list(el.radio.options),
                                       el.radio.disabled)
        elif kind == "code":
            drawn.append(("code", el.code.code_text))
        elif kind == "button" and el.button.is_form_submitter:
            seen[el.button.id] = Widget(el.button.id, "submit", el.button.label, fragment, [], el.button.disabled)
        else:
            super()._read(el, fragment, drawn, seen)

    def pick(self, widget: Widget, option: str) -> None:
        """A radio's option chosen (in a form: sent with the form's submit, as the frontend does)."""
        self.states[widget.id] = WidgetState(id=widget.id, string_value=option)

    def of(self, kind: str) -> list[Widget]:
        return [w for w in self.widgets.values() if w.kind == kind]


# ---------------------------------------------------------------- what the workers did
@dataclass
class Log:
    clicks: list[tuple[str, float, str | None]] = field(default_factory=list)   # (kind, seconds, error)
    # a rating click: (pid, the worker's own count of units rated before this one, the unit if the text told it,
    # dimension, value); uncertain: one that timed out (stored or not); refused: the page said no
    ratings: list[tuple] = field(default_factory=list)
    uncertain: list[tuple] = field(default_factory=list)
    refused_clicks: list[tuple] = field(default_factory=list)
    unfinished: int = 0                                           # still rating when --rate-minutes ended
    retries: int = 0                                              # reloads and "Try again" clicks
    wrong_places: int = 0                                         # "Unit i of n" other than the worker's own count
    codes: dict[str, str] = field(default_factory=dict)           # pid -> the code shown
    kinds: dict[str, str] = field(default_factory=dict)           # pid -> careful | careless | second
    finished: set[str] = field(default_factory=set)
    second: dict[str, tuple[str, str, bool]] = field(default_factory=dict)   # pid -> (other pid, other session, refused)
    errors: list[str] = field(default_factory=list)
    id_hits: list[tuple[str, str, bool]] = field(default_factory=list)   # (message kind, identifier, the tab's own)
    bytes_received: int = 0


@dataclass(frozen=True)
class Study:
    task_id: int
    gold: dict[int, dict[str, float]]     # unit -> {dimension: expected value}
    floor: dict[int, float]               # unit -> reading floor in seconds
    by_text: dict[str, tuple[int, ...]]   # a unit's response text as shown -> the units showing it


def hexid(rng: random.Random, prefix: str) -> str:
    return prefix + "".join(rng.choice("0123456789abcdef") for _ in range(24 - len(prefix)))


def address(k: int) -> str:
    """Worker k's own client address on the loopback network (127.0.0.1 is 'this machine' to the page)."""
    return f"127.1.{k // 250}.{k % 250 + 2}"


async def timed(log: Log, kind: str, step) -> tuple[float, str | None]:
    start = time.perf_counter()
    error = None
    try:
        await step
    except Exception as exc:   # counted, not hidden
        error = f"{type(exc).__name__}: {str(exc)[:160]}"
    took = time.perf_counter() - start
    log.clicks.append((kind, took, error))
    return took, error


def controls(tab: Tab, task_id: int) -> dict[tuple[int, str], Widget]:
    """(place, dimension) -> the segmented control drawn for it (its key: ann-TASK-pPLACE-DIMENSION; a crowd
    worker's controls are keyed by the unit's place among theirs, never by the task's number of the unit)."""
    out = {}
    for w in tab.of("button_group"):
        m = re.search(rf"-ann-{task_id}-p(\d+)-({'|'.join(DIMENSIONS)})$", w.id)
        if m:
            out[(int(m.group(1)), m.group(2))] = w
    return out


def shown_units(tab: Tab, study: Study) -> list[int]:
    """The units whose response text the page shows now (one, but for a text two units share)."""
    return sorted({u for k, t in tab.drawn if k == "text" for u in study.by_text.get(t, ())})


def said_no(tab: Tab) -> str | None:
    found = tab.texts("error") + tab.texts("warning")
    return found[0] if found else None


async def worker(k: int, kind: str, base: str, study: Study, start_at: float, rate_seconds: float, scale: float,
                 log: Log, seed: int, all_ids: set[str]) -> None:
    rng = random.Random(seed * 100_003 + k)
    pid, session = hexid(rng, PID_PREFIX), hexid(rng, SESSION_PREFIX)
    log.kinds[pid] = kind
    wait = lambda lo, hi: asyncio.sleep(rng.uniform(lo, hi) * scale)   # noqa: E731
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    stop = time.monotonic() + rate_seconds
    query = f"task={study.task_id}&PROLIFIC_PID={pid}&STUDY_ID=s1&SESSION_ID={session}"
    tab = Tab(base, "annotate", query, timeout=TIMEOUT, local_addr=(address(k), 0), ids=all_ids, own=(pid, session))
    tabs = [tab]
    try:
        _, error = await timed(log, "enter", tab.open())
        if error:
            log.errors.append(f"{pid[:8]} enter: {error}")
            return
        # the comprehension question: a form of radios and its submit button
        await (wait(0.5, 1) if kind == "careless" else wait(2, 6))
        retries = RETRIES
        while not (tab.of("radio") and tab.of("submit")) and said_no(tab) and retries:
            retries -= 1   # the page could not be drawn (the store busy, say): the worker reloads it a moment later
            log.retries += 1
            await wait(2, 5)
            await timed(log, "retry", tab.run())
        radios, submit = tab.of("radio"), tab.of("submit")
        if not radios or not submit:
            log.errors.append(f"{pid[:8]}: no comprehension form drawn: {said_no(tab) or tab.drawn[:4]}")
            return
        for r in radios:
            tab.pick(r, r.options[QUESTION[2]])
        _, error = await timed(log, "question", submit_form(tab, submit[-1]))
        if error:
            log.errors.append(f"{pid[:8]} question: {error}")
            return
        rated = 0   # units this worker has rated in full: the one shown is their place rated + 1
        accepted: dict[int, set[str]] = defaultdict(set)   # place -> the dimensions stored there
        earlier: dict[str, list[float]] = defaultdict(list)
        while time.monotonic() < stop:
            if tab.texts("code"):
                log.codes[pid] = tab.texts("code")[-1].strip()
                log.finished.add(pid)
                break
            drawn = controls(tab, study.task_id)
            if not drawn:
                if retries and said_no(tab):   # the page said it could not go on now: "Try again" a moment later
                    retries -= 1
                    log.retries += 1
                    await wait(2, 5)
                    again = [w for w in tab.of("button") if w.id.endswith("-ann-retry")]
                    await timed(log, "retry", tab.click(key="ann-retry") if again else tab.run())
                    continue
                log.errors.append(f"{pid[:8]}: a page with nothing to rate: {said_no(tab) or tab.drawn[:4]}")
                break
            place = min(p for p, _ in drawn)
            if place != rated + 1:
                log.wrong_places += 1
            units = shown_units(tab, study)
            unit = units[0] if len(units) == 1 else None
            if kind == "second" and rated == 1 and pid not in log.second:
                await second_identity(k, base, study, pid, rng, log, all_ids, tabs)
            expected = {d: v for u in units for d, v in study.gold.get(u, {}).items()}
            for dim in DIMENSIONS:
                if dim in accepted[place]:
                    continue
                if (place, dim) not in controls(tab, study.task_id):
                    break
                if kind == "careless":
                    await wait(0.8, 1.2)
                    value = 2.0
                else:
                    if not accepted[place]:   # the unit read first
                        floor = max((study.floor.get(u, 0.0) for u in units), default=0.0)
                        read = max(rng.uniform(2, 8), floor + rng.uniform(0.5, 2))
                        if PACE is not None:   # --unit-seconds: a worker who takes their time over each unit
                            read = max(read, rng.uniform(*PACE))
                        await asyncio.sleep(read * scale)
                    else:
                        await wait(2, 8)
                    if dim in expected:
                        value = expected[dim]
                    else:
                        value = float(rng.randint(0, 2))
                        if len(earlier[dim]) >= 3 and set(earlier[dim]) == {value}:
                            value = float((int(value) + 1) % 3)   # a careful worker's answers vary
                _, error = await timed(log, "rate", tab.choose(f"ann-{study.task_id}-p{place}-{dim}", f"{value:g}"))
                record = (pid, rated, unit, dim, value)
                if error:
                    log.uncertain.append(record)
                    log.errors.append(f"{pid[:8]} rate place {place} {dim}: {error}")
                    return
                no = said_no(tab)
                if no:   # not stored: the worker answers it again once the page lets them
                    log.refused_clicks.append((*record, no[:160]))
                    break
                log.ratings.append(record)
                accepted[place].add(dim)
                if kind != "careless" and dim not in expected:
                    earlier[dim].append(value)
            if accepted[place] == set(DIMENSIONS):
                rated += 1
        else:
            log.unfinished += 1   # still rating when its time ended: not an error, a worker who took longer
        for t in tabs:
            if t.exceptions:
                log.errors.extend(f"{pid[:8]}: exception drawn: {e[:160]}" for e in t.exceptions)
    except Exception as exc:   # counted, not hidden
        log.errors.append(f"{pid[:8]}: stopped early: {type(exc).__name__}: {str(exc)[:160]}")
    finally:
        for t in tabs:
            log.id_hits.extend(t.id_hits)
            log.bytes_received += t.received
            await t.close()


async def submit_form(tab: Tab, submit: Widget) -> None:
    tab.states[submit.id] = WidgetState(id=submit.id, trigger_value=True)
    await tab.run(submit.fragment)
    tab.states.pop(submit.id, None)


async def second_identity(k: int, base: str, study: Study, pid: str, rng: random.Random, log: Log, all_ids: set[str],
                          tabs: list) -> None:
    """The same browser (address and User-Agent) opens the link again, edited: another PROLIFIC_PID and SESSION_ID."""
    other_pid, other_session = hexid(rng, PID_PREFIX), hexid(rng, SESSION_PREFIX)
    all_ids.update((other_pid, other_session))
    query = f"task={study.task_id}&PROLIFIC_PID={other_pid}&STUDY_ID=s1&SESSION_ID={other_session}"
    other = Tab(base, "annotate", query, timeout=TIMEOUT, local_addr=(address(k), 0), ids=all_ids,
                own=(other_pid, other_session))
    tabs.append(other)
    _, error = await timed(log, "second", other.open())
    refused = error is None and bool(other.texts("error")) and not controls(other, study.task_id) \
        and not other.of("radio")
    log.second[pid] = (other_pid, other_session, refused)
    await other.close()   # that tab closed: the worker goes on in their own
    if error:
        log.errors.append(f"{pid[:8]} second identity: {error}")


# ---------------------------------------------------------------- the study, the server, the checks
def make_study(db: Path, items: int, scale: float) -> Study:
    """The task and its crowd study, through the services; what the workers may read from the store (see above)."""
    con = connect(db)
    try:
        task_id = service.create_task(con, dataset="demo-zh", mode="absolute", dimensions=DIMENSIONS, items=items,
                                      per_item=K, name="bench crowd")
        rule = {"too_fast_max": 1.0} if scale < 1 else None
        crowd.open_study(con, task_id, platform="prolific", completion_code=DONE, failed_code=FAIL, units=UNITS,
                         gold=GOLD, pay=1.5, currency="GBP", pass_rule=rule)
        crowd.make_gold(con, task_id, why="nonsense", dimension="Coh", low=0, count=2)
        crowd.make_gold(con, task_id, why="copies-knowledge", dimension="Info", low=2, count=1)
        crowd_store.add_question(con, task_id, QUESTION[0], QUESTION[1], QUESTION[2])
        gold = defaultdict(dict)
        for r in crowd_store.gold(con, task_id).itertuples():
            gold[int(r.unit)][r.dimension] = float(r.low)
        task = stored.get(con, task_id)
        floor = {int(u): float(n) / CHARS_PER_SECOND for u, n in crowd.text_chars(con, task).items()}
        by_text = defaultdict(list)
        for unit, text in con.execute("""
                SELECT u.unit, coalesce(g.response, r.text) FROM task_units u
                LEFT JOIN gold_units g ON g.task_id = u.task_id AND g.unit = u.unit
                LEFT JOIN responses r ON r.dataset = ? AND r.item_id = u.item_id AND r.model = u.model_a
                WHERE u.task_id = ?""", [task.dataset, task_id]).fetchall():   # read only: the bench's shortcut
            by_text[text or ""].append(int(unit))
        return Study(task_id, dict(gold), floor, {t: tuple(u) for t, u in by_text.items()})
    finally:
        con.close()


def kinds(workers: int, seed: int) -> list[str]:
    """careless for 10% of the workers, second for 5%, careful for the rest, in a seeded order."""
    careless, second = round(workers * 0.10), round(workers * 0.05)
    out = ["careless"] * careless + ["second"] * second + ["careful"] * (workers - careless - second)
    random.Random(seed).shuffle(out)
    return out


def check(db: Path, study: Study, log: Log, server_log: Path) -> dict:
    """The store against the sessions' logs (see the module's text). A worker's ratings are matched by their place
    among the worker's units (the order of the units' first answers in the store, the worker's own count in the log),
    dimension and value; where the worker's page showed a text only one unit has, the unit too."""
    con = connect(db)
    try:
        people = crowd_store.workers(con, "rating", study.task_id, identifiers=True)
        answers = con.execute("SELECT annotator, unit, dimension, value FROM task_answers WHERE task_id = ? AND "
                              "kind = 'rating' ORDER BY answer_id", [study.task_id]).fetchall()
        excluded = crowd_store.excluded(con, study.task_id)
        reasons = dict(con.execute("SELECT annotator, arg_max(reason, decision_id) FROM crowd_decisions WHERE "
                                   "task_id = ? GROUP BY annotator", [study.task_id]).fetchall())
    finally:
        con.close()
    annotator_of = dict(zip(people["platform_id"], people["annotator"]))
    outcome = dict(zip(people["annotator"], people["outcome"]))
    other_identity = dict(zip(people["annotator"], people["other_identity"]))
    places: dict[str, list[int]] = defaultdict(list)   # annotator -> their units in the order first answered
    stored_rows: Counter = Counter()
    for a, u, d, v in answers:
        if int(u) not in places[a]:
            places[a].append(int(u))
        stored_rows[(a, places[a].index(int(u)), d, float(v))] += 1
    logged = Counter((annotator_of.get(p), i, d, v) for p, i, _, d, v in log.ratings)
    maybe = {(annotator_of.get(p), i, d, v) for p, i, _, d, v in log.uncertain}
    lost = [r for r in logged if stored_rows[r] < logged[r]]
    doubled = [r for r in logged if stored_rows[r] > logged[r]]
    unlogged = [r for r in stored_rows if r not in logged and r not in maybe]
    other_unit = sum(1 for p, i, u, _, _ in log.ratings if u is not None and annotator_of.get(p) in places
                     and (i >= len(places[annotator_of[p]]) or places[annotator_of[p]][i] != u))
    on_unit = defaultdict(set)
    for a, u, _, _ in answers:
        if int(u) not in study.gold and a not in excluded:
            on_unit[int(u)].add(a)
    planted = {annotator_of[p] for p, kind in log.kinds.items()
               if kind in ("careless", "second") and p in log.finished and p in annotator_of}
    finished = {annotator_of[p] for p in log.finished if p in annotator_of}
    expected_code = {p: (FAIL if kind in ("careless", "second") else DONE) for p, kind in log.kinds.items()}
    wrong_codes = {p[:8]: (c, expected_code[p]) for p, c in log.codes.items() if c != expected_code[p]}
    seconds = [p for p, kind in log.kinds.items() if kind == "second"]
    refused = [p for p in seconds if p in log.second and log.second[p][2]
               and log.second[p][0] not in annotator_of and other_identity.get(annotator_of.get(p), 0) > 0]
    log_bytes = server_log.read_bytes() if server_log.exists() else b""
    every_id = set(log.kinds) | {i for o, s, _ in log.second.values() for i in (o, s)}
    in_log = sum(log_bytes.count(i.encode()) for i in every_id)
    extra = sorted((excluded & finished) - planted)
    hits = Counter((kind, "own" if own else "another's") for kind, _, own in log.id_hits)
    return {
        "ratings_logged": sum(logged.values()), "ratings_stored": len(answers), "lost": len(lost),
        "doubled": len(doubled), "stored_not_logged": len(unlogged), "uncertain_clicks": len(log.uncertain),
        "refused_clicks": len(log.refused_clicks), "refused_samples": [r[-1] for r in log.refused_clicks[:3]],
        "unit_other_than_shown": other_unit, "wrong_places": log.wrong_places,
        "workers_entered": len(people), "workers_finished": len(log.finished),
        "most_units_per_worker": max((len(s) for s in places.values()), default=0),
        "workers_over_units": sum(len(s) > UNITS for s in places.values()),
        "most_workers_per_real_unit": max((len(s) for s in on_unit.values()), default=0),
        "real_units_over_k": sum(len(s) > K for s in on_unit.values()),
        "excluded": len(excluded), "planted_finished": len(planted),
        "excluded_equals_planted": (excluded & finished) == planted,
        "planted_not_excluded": len(planted - excluded), "excluded_not_planted": len(extra),
        "excluded_not_planted_reasons": [reasons.get(a, "")[:200] for a in extra[:5]],
        "excluded_unfinished": len(excluded - finished),
        "finished_still_working": sum(1 for a in finished if outcome.get(a) == "working"),
        "codes_shown": len(log.codes), "wrong_codes": len(wrong_codes),
        "wrong_code_samples": list(wrong_codes.items())[:5],
        "second_identities": len(seconds), "second_identities_tried": len(log.second),
        "second_identities_refused": len(refused),
        "ids_in_page_messages": len(log.id_hits),
        # what the page drew (every message but the address bar's: page_info_changed echoes the query string the
        # worker's own browser holds)
        "ids_in_page_content": sum(1 for kind, _, own in log.id_hits if not (kind == "page_info_changed" and own)),
        "ids_in_page_messages_by_kind": {f"{k} ({whose})": n for (k, whose), n in sorted(hits.items())},
        "mb_received": round(log.bytes_received / 1e6, 1), "ids_in_server_log": in_log,
    }


def served(db: Path, processes: int, log: Path) -> tuple[subprocess.Popen, list[str]]:
    env = {"PYTHONPATH": str(ROOT)}
    if processes == 1:
        proc, base = serve(["app.py"], {**os.environ, "EVALCORE_DB": str(db), **env}, ROOT, log)
        return proc, [base]
    proc, bases = serve_group(db, processes, log, env)
    return proc, bases


def summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50_s": round(statistics.median(values), 3), "p95_s": round(p95(values), 3),
            "max_s": round(max(values), 3)}


def run(workers: int, enter_seconds: float, rate_minutes: float, processes: int, study: Study, source: Path,
        tmp: Path, scale: float, seed: int) -> dict:
    db = tmp / f"store-{processes}.duckdb"
    shutil.copyfile(source, db)
    server_log = tmp / f"server-{processes}.log"
    proc, bases = served(db, processes, server_log)
    log = Log()
    try:
        pids = servers(proc.pid)
        plan = kinds(workers, seed)
        rng = random.Random(seed)
        all_ids: set[str] = set()
        # every worker's identifiers, known before the run (the second identities' are added as they are made)
        for k in range(workers):
            r = random.Random(seed * 100_003 + k)
            all_ids.update((hexid(r, PID_PREFIX), hexid(r, SESSION_PREFIX)))
        cpu0, client0 = sum(cpu_seconds(p) for p in pids), time.process_time()
        start = time.monotonic()
        entries = sorted(rng.uniform(0, enter_seconds) for _ in range(workers))

        async def burst() -> None:
            await asyncio.gather(*(worker(k, plan[k], bases[k % len(bases)], study, start + entries[k],
                                          rate_minutes * 60, scale, log, seed, all_ids) for k in range(workers)))

        asyncio.run(burst())
        took = time.monotonic() - start
        cpu = sum(cpu_seconds(p) for p in pids) - cpu0
        client = time.process_time() - client0
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    found = check(db, study, log, server_log)
    found["ok"] = (found["lost"] == found["doubled"] == found["stored_not_logged"] == found["workers_over_units"]
                   == found["real_units_over_k"] == found["wrong_codes"] == found["ids_in_page_content"]
                   == found["ids_in_server_log"] == found["unit_other_than_shown"] == 0
                   and found["excluded_equals_planted"]
                   and found["second_identities_refused"] == found["second_identities_tried"])
    ok = [(k, t) for k, t, e in log.clicks if e is None]
    errors = [e for _, _, e in log.clicks if e is not None]
    out = {"processes": processes, "workers": workers, "enter_seconds": enter_seconds, "rate_minutes": rate_minutes,
           "think_scale": scale, "unit_seconds": list(PACE) if PACE else None, "seconds": round(took, 1), "clicks": len(log.clicks),
           "click": summary([t for _, t in ok]),
           **{kind: summary([t for k, t in ok if k == kind]) for kind in ("enter", "question", "rate", "second", "retry")},
           "retries": log.retries, "unfinished": log.unfinished,
           "click_errors": len(errors), "errors": len(log.errors), "error_samples": log.errors[:8],
           "server_cpu_s": round(cpu, 1), "server_cpu_s_per_click": round(cpu / max(len(log.clicks), 1), 4),
           "client_cpu_s": round(client, 1), **found}
    if not log.errors and found["lost"] == found["doubled"] == 0:
        for path in (db, server_log):
            path.unlink(missing_ok=True)
    else:
        out["kept"] = str(tmp)
    return out


def report(s: dict) -> None:
    c = s["click"]
    print(f"processes {s['processes']}  workers {s['workers']} over {s['enter_seconds']:g} s  {s['seconds']} s  "
          f"clicks {s['clicks']}  errors {s['click_errors']} clicks, {s['errors']} in all  still rating at their end "
          f"{s['unfinished']}  retries {s['retries']}", flush=True)
    if c["n"]:
        print(f"  per click p50 {c['p50_s']} s  p95 {c['p95_s']} s  max {c['max_s']} s; "
              + "  ".join(f"{k} {s[k]['p50_s']}/{s[k]['p95_s']}/{s[k]['max_s']} ({s[k]['n']})"
                          for k in ("enter", "question", "rate", "second", "retry") if s[k]["n"]))
    print(f"  server {s['server_cpu_s']} CPU-s, {s['server_cpu_s_per_click']} per click; client {s['client_cpu_s']} "
          f"CPU-s", flush=True)
    print(f"  ratings logged {s['ratings_logged']}  stored {s['ratings_stored']}  lost {s['lost']}  doubled "
          f"{s['doubled']}  stored but not logged {s['stored_not_logged']}  uncertain {s['uncertain_clicks']}  "
          f"refused {s['refused_clicks']}  unit other than the one shown {s['unit_other_than_shown']}  "
          f"'Unit i of n' other than the worker's count {s['wrong_places']}", flush=True)
    print(f"  entered {s['workers_entered']}  finished {s['workers_finished']}  most units per worker "
          f"{s['most_units_per_worker']} (over {UNITS}: {s['workers_over_units']})  most workers per real unit "
          f"{s['most_workers_per_real_unit']} (over K: {s['real_units_over_k']})", flush=True)
    print(f"  excluded {s['excluded']}  planted and finished {s['planted_finished']}  equal: "
          f"{s['excluded_equals_planted']} (planted not excluded {s['planted_not_excluded']}, excluded not planted "
          f"{s['excluded_not_planted']})  codes shown {s['codes_shown']}, wrong {s['wrong_codes']}", flush=True)
    print(f"  second identities {s['second_identities']}, tried {s['second_identities_tried']}, refused "
          f"{s['second_identities_refused']}  identifiers in page messages {s['ids_in_page_messages']} "
          f"({s['mb_received']} MB read)  in the server log {s['ids_in_server_log']}", flush=True)
    for kind, n in s["ids_in_page_messages_by_kind"].items():
        print(f"    identifiers in {kind}: {n}", flush=True)
    print(f"  checks {'passed' if s['ok'] else 'FAILED'} (identifiers in what the page drew: "
          f"{s['ids_in_page_content']})", flush=True)
    for e in s["error_samples"]:
        print("   ", e, flush=True)
    for r in s["excluded_not_planted_reasons"]:
        print("    excluded, not planted:", r, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=300)
    parser.add_argument("--enter-seconds", type=float, default=120)
    parser.add_argument("--rate-minutes", type=float, default=10, help="each worker's time to rate after entering")
    parser.add_argument("--processes", default="1,2", help="comma-separated page-serving process counts")
    parser.add_argument("--items", type=int, default=1000, help="the task's units (K = 3)")
    parser.add_argument("--think-scale", type=float, default=1.0, help="every wait times this (below 1: a try)")
    parser.add_argument("--unit-seconds", help="LO:HI: careful workers spend a uniform LO-HI seconds on a unit before "
                        "its first click (at least its reading floor); by default the floor + 0.5-2 s")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", type=Path, help="copy this `evalcore init` store instead of building one")
    parser.add_argument("--json", type=Path, help="also write the runs' summaries here")
    args = parser.parse_args()
    global PACE
    if args.unit_seconds:
        lo, hi = (float(v) for v in args.unit_seconds.split(":"))
        PACE = (lo, hi)
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-crowd-"))
    source = tmp / "study.duckdb"
    if args.store is not None:
        shutil.copyfile(args.store, source)
    else:
        subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", str(source)], cwd=ROOT, check=True,
                       capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    study = make_study(source, args.items, args.think_scale)
    print(f"task {study.task_id}: {args.items} units + {len(study.gold)} gold, K {K}, {UNITS} units per worker "
          f"({GOLD} gold); reading floor per unit median {statistics.median(study.floor.values()):.1f} s", flush=True)
    runs = []
    for processes in [int(p) for p in args.processes.split(",")]:
        runs.append(run(args.workers, args.enter_seconds, args.rate_minutes, processes, study, source, tmp,
                        args.think_scale, args.seed))
        report(runs[-1])
        if args.json:
            args.json.write_text(json.dumps(runs, ensure_ascii=False, indent=1), encoding="utf-8")
    if all("kept" not in r for r in runs):
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(runs, ensure_ascii=False))


if __name__ == "__main__":
    main()
