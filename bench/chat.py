"""Benchmark: people chatting with blind models through one dashboard server, at the protocol level (no browser).

    python bench/chat.py [--people 20] [--seconds 120] [--delay 0.3] [--tokens 30] [--token-gap 0.02]
                         [--rounds 10] [--store STORE] [--json OUT]

A store made with `evalcore init` (or a copy of --store, one such store), two endpoints registered at one local
bench/fixed_server.py that answers after --delay seconds with --tokens tokens --token-gap seconds apart, the first
token stamped with the endpoint's clock; a chat task on demo-zh kdconv/knowledge (one conversation per scenario
and endpoint, --rounds rounds, no review, enough scenarios for everyone); `python app.py` on it.

Each simulated person is one websocket session speaking Streamlit's protocol (tests/support/streamlit_session.py): they
enter with the task's access code and their own name, then send a message, wait until the reply is drawn from
the store (the page reruns once it is kept), think 1-3 s, and again; at the round limit they end the
conversation, rate it and take the next one. People start spread over the first 3 s.

Measured: for every reply, the delay from the endpoint sending its first token to that token reaching the
person's session in a ForwardMsg delta (the stamp against this machine's clock when the message is read); the
time from sending a message to the stored reply being drawn; the server's CPU-seconds (/proc, user + system) per
message sent over the run, and the elements it drew per message (each one a ForwardMsg its event loop sends).
Then, the server stopped, the store is checked against every session's log: each message a session sent is
stored exactly once in its conversation (lost: none; duplicated: more than one), each reply a session saw
finished likewise, no message is stored that no session sent, (conversation, idx) is unique and each
conversation alternates person and model from index 0. Errors: exceptions drawn, a message without a reply, a
session that stopped early.
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
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from bench.annotate import serve  # noqa: E402
from bench.protocol import cpu_seconds, p95, servers  # noqa: E402
from evalcore.services import chats as service  # noqa: E402
from evalcore.store import connect  # noqa: E402
from evalcore.store import endpoints as registry  # noqa: E402
from support.streamlit_session import Session  # noqa: E402

STAMP = re.compile(r"⟨(\d+\.\d+)⟩")
KEY_LABEL = "Personal key (leave empty the first time)"
END_LABEL = "End the conversation and rate it"
ROUND_SECONDS = 3.0   # a round's shortest likely length (reply and thinking): how many scenarios people may need


class Tab(Session):
    """A person's session that notes when each reply's first piece arrives: the first time a stamp is read."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.arrived: dict[str, float] = {}   # stamp -> this machine's clock when it was first read
        self.delays: list[float] = []          # seconds from the endpoint's send to that read, one per reply
        self.elements = 0                      # elements drawn in this session: what the server sent it

    def _read(self, el, fragment: str, drawn: list, seen: dict) -> None:
        self.elements += 1
        if el.WhichOneof("type") == "text":
            found = STAMP.match(el.text.body)
            if found and found.group(1) not in self.arrived:
                now = time.time()
                self.arrived[found.group(1)] = now
                self.delays.append(now - float(found.group(1)))
        super()._read(el, fragment, drawn, seen)


class Log:
    """What every session did: messages sent and replies seen finished as (conversation, text), and errors."""

    def __init__(self):
        self.sent: list[tuple[int, str]] = []
        self.replies: list[tuple[int, str]] = []
        self.turns: list[float] = []   # seconds from sending a message to its stored reply drawn
        self.errors: list[str] = []
        self.rated = 0
        self.unfinished = 0
        self.tabs: list[Tab] = []


def endpoint_server(delay: float, tokens: int, gap: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fixed_server.py"), "--delay", str(delay),
                             "--tokens", str(tokens), "--token-gap", str(gap)], stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def make_task(db: Path, url: str, scenarios: int, rounds: int) -> tuple[int, str]:
    """Two endpoints at `url` and a chat task over them: (task id, access code)."""
    con = connect(db)
    try:
        for name in ("bench-a", "bench-b"):
            registry.add(con, registry.Registered(name, url, "m", api_key_env=None, max_tokens=512))
        tid = service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge", endpoints=["bench-a", "bench-b"],
                                  per_scenario=1, max_rounds=rounds, n_scenarios=scenarios, review=False,
                                  name="bench chat", lang="en")   # its page in English: the labels below
        code = con.execute("SELECT access_code FROM chat_tasks WHERE task_id = ?", [tid]).fetchall()[0][0]
        return tid, code
    finally:
        con.close()


def _found(tab: Tab, key: str) -> list[tuple[str, object]]:
    """(key, widget) for each widget on the page whose key matches the regular expression `key`."""
    out = []
    for w in tab.widgets.values():
        match = re.search(rf"-({key})$", w.id)
        if match:
            out.append((match.group(1), w))
    return out


async def person(base: str, tid: int, code: str, name: str, stop: float, log: Log) -> None:
    """One person: enter, then chat, end, rate and take the next conversation until `stop` (time.monotonic())."""
    rng = random.Random(name)
    await asyncio.sleep(rng.uniform(0, 3))
    tab = Tab(base, "chat", f"task={tid}")
    log.tabs.append(tab)
    prefix = f"chat-{tid}"
    said = 0
    try:
        await tab.open()
        await tab.fill("Your name", name)
        await tab.fill("Access code", code)
        await tab.fill(KEY_LABEL, "")
        await tab.click(label="Start chatting")
        await tab.click(key=f"{prefix}-kept")
        while time.monotonic() < stop:
            boxes = _found(tab, rf"{prefix}-say-\d+")
            box_key, box = boxes[-1] if boxes else (None, None)
            follow = _found(tab, rf"{prefix}-next")
            scales = _found(tab, rf"{prefix}-rate-\d+-\w+")
            if box is not None and not box.disabled:
                cid = int(box_key.rsplit("-", 1)[1])
                said += 1
                text = f"{name} 第{said}句：这个你知道多少？"
                before = set(tab.texts("text"))
                log.sent.append((cid, text))
                start = time.monotonic()
                await tab.send_chat(box_key, text)
                new = [t for t in tab.texts("text") if STAMP.match(t) and t not in before]
                if new:
                    log.turns.append(time.monotonic() - start)
                    log.replies.extend((cid, t) for t in new)
                else:
                    log.errors.append(f"{name}: no reply to {text!r}: {tab.texts('warning') or tab.texts('error')}")
                    retry = _found(tab, rf"{prefix}-retry-\d+")
                    if not retry:
                        break
                    await tab.click(key=retry[-1][0])
                await asyncio.sleep(rng.uniform(1, 3))
            elif box is not None:
                await tab.click(label=END_LABEL)   # the round limit: end it and rate it
            elif follow:
                await tab.click(key=f"{prefix}-next")
            elif scales:
                for key, _ in scales:
                    await tab.choose(key, str(rng.randint(0, 2)))
                log.rated += bool(_found(tab, rf"{prefix}-next"))   # every dimension rated: handed in
                await asyncio.sleep(rng.uniform(0.5, 1))
            elif tab.said("Nothing more to talk about"):
                break
            else:
                log.errors.append(f"{name}: a page with nothing to do: {tab.drawn[:6]}")
                break
        if tab.exceptions:
            log.errors.extend(f"{name}: exception drawn: {e[:160]}" for e in tab.exceptions)
    except Exception as exc:   # counted, not hidden
        log.unfinished += 1
        log.errors.append(f"{name}: stopped early: {type(exc).__name__}: {exc}")
    finally:
        await tab.close()


def check(db: Path, tid: int, log: Log) -> dict:
    """The store against the sessions' logs."""
    con = connect(db)
    try:
        rows = con.execute("""
            SELECT m.conversation_id, m.idx, m.role, m.text FROM chat_messages m
            JOIN chat_conversations c USING (conversation_id) WHERE c.task_id = ?
            ORDER BY m.conversation_id, m.idx""", [tid]).fetchall()
        accepted = con.execute("SELECT count(*) FROM chat_conversations WHERE task_id = ? AND state = 'accepted'",
                               [tid]).fetchall()[0][0]
        ratings = con.execute("SELECT count(*) FROM human_ratings WHERE origin = ? AND target = 'dialogue'",
                              [f"chat:{tid}"]).fetchall()[0][0]
    finally:
        con.close()
    stored = Counter((cid, role, text) for cid, _, role, text in rows)
    sent = set(log.sent)
    by_conversation: dict[int, list[tuple[int, str]]] = {}
    for cid, idx, role, _ in rows:
        by_conversation.setdefault(cid, []).append((idx, role))
    out_of_order = sum(1 for msgs in by_conversation.values()
                       if [i for i, _ in msgs] != list(range(len(msgs)))
                       or any(r != ("user" if i % 2 == 0 else "assistant") for i, r in msgs))
    return {"lost": sum(stored[(c, "user", t)] == 0 for c, t in log.sent),
            "duplicated": sum(stored[(c, "user", t)] > 1 for c, t in log.sent),
            "replies_lost": sum(stored[(c, "assistant", t)] == 0 for c, t in log.replies),
            "replies_duplicated": sum(stored[(c, "assistant", t)] > 1 for c, t in log.replies),
            "unsent_stored": sum(1 for cid, _, role, text in rows if role == "user" and (cid, text) not in sent),
            "key_repeats": len(rows) - len({(cid, idx) for cid, idx, _, _ in rows}),
            "out_of_order_conversations": out_of_order, "accepted": accepted, "dialogue_ratings": ratings}


def ms(values: list[float], q) -> float | None:
    return round(q(values) * 1000, 1) if values else None


def run(people: int, seconds: float, delay: float, tokens: int, gap: float, rounds: int = 10,
        store: Path | None = None) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-chat-"))
    db = tmp / "store.duckdb"
    if store is not None:
        shutil.copyfile(store, db)
    else:
        subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", str(db)], cwd=ROOT, check=True,
                       capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    endpoint, url = endpoint_server(delay, tokens, gap)
    app = None
    try:
        scenarios = min(450, people * int(seconds / (rounds * ROUND_SECONDS) + 2))
        tid, code = make_task(db, url, scenarios, rounds)
        app, base = serve(["app.py"], {**os.environ, "EVALCORE_DB": str(db), "PYTHONPATH": str(ROOT)}, ROOT,
                          tmp / "server.log")
        pids = servers(app.pid)
        log = Log()
        cpu0, start = sum(cpu_seconds(p) for p in pids), time.monotonic()
        stop = start + seconds

        async def crowd() -> None:
            await asyncio.gather(*(person(base, tid, code, f"sim-{k:02d}", stop, log) for k in range(people)))

        asyncio.run(crowd())
        took, cpu = time.monotonic() - start, sum(cpu_seconds(p) for p in pids) - cpu0
    finally:
        for proc in (app, endpoint):
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
    found = check(db, tid, log)
    delays = [d for tab in log.tabs for d in tab.delays]
    summary = {"people": people, "seconds": round(took, 1), "delay_s": delay, "tokens": tokens, "token_gap_s": gap,
               "messages": len(log.sent), "replies": len(log.replies), "conversations_rated": log.rated,
               **found,
               "first_token_ms_p50": ms(delays, statistics.median), "first_token_ms_p95": ms(delays, p95),
               "first_token_ms_max": ms(delays, max), "first_tokens": len(delays),
               "turn_s_p50": round(statistics.median(log.turns), 3) if log.turns else None,
               "turn_s_p95": round(p95(log.turns), 3) if log.turns else None,
               "server_cpu_s_per_message": round(cpu / len(log.sent), 4) if log.sent else None,
               "elements_per_message": round(sum(t.elements for t in log.tabs) / len(log.sent), 1) if log.sent else None,
               "errors": len(log.errors), "unfinished_sessions": log.unfinished, "error_samples": log.errors[:5]}
    if log.errors:
        summary["server_log"] = str(tmp / "server.log")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--people", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--delay", type=float, default=0.3, help="the endpoint's seconds before its first token")
    parser.add_argument("--tokens", type=int, default=30, help="tokens per reply")
    parser.add_argument("--token-gap", type=float, default=0.02, help="seconds between tokens")
    parser.add_argument("--rounds", type=int, default=10, help="the task's round limit per conversation")
    parser.add_argument("--store", type=Path, help="copy this `evalcore init` store instead of building one")
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args()
    s = run(args.people, args.seconds, args.delay, args.tokens, args.token_gap, args.rounds, args.store)
    print(f"people {s['people']}  seconds {s['seconds']}  messages sent {s['messages']}  replies {s['replies']}  "
          f"conversations rated {s['conversations_rated']}")
    print(f"lost {s['lost']}  duplicated {s['duplicated']}  replies lost {s['replies_lost']}  replies duplicated "
          f"{s['replies_duplicated']}  stored but never sent {s['unsent_stored']}  (conversation, idx) repeats "
          f"{s['key_repeats']}  conversations out of order {s['out_of_order_conversations']}")
    print(f"first token to the session: p50 {s['first_token_ms_p50']} ms  p95 {s['first_token_ms_p95']} ms  "
          f"max {s['first_token_ms_max']} ms  ({s['first_tokens']} replies)")
    print(f"message to its stored reply drawn: p50 {s['turn_s_p50']} s  p95 {s['turn_s_p95']} s")
    print(f"server CPU-seconds per message {s['server_cpu_s_per_message']}  elements drawn per message "
          f"{s['elements_per_message']}  errors {s['errors']}  "
          f"sessions that never finished {s['unfinished_sessions']}")
    for e in s["error_samples"]:
        print("  ", e)
    if args.json:
        args.json.write_text(json.dumps(s, ensure_ascii=False, indent=1), encoding="utf-8")
    print(json.dumps(s, ensure_ascii=False))


if __name__ == "__main__":
    main()
