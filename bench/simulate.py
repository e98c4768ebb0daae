"""Benchmark: simulated conversations through `evalcore chat simulate` against a local endpoint with a fixed delay,
and the same run killed with SIGKILL and resumed.

    python bench/simulate.py [--scenarios 100 --per-scenario 10 --rounds 5 --delay 0.2 --concurrency 32]
                             [--kills 3] [--store STORE] [--out OUT.json]

Not timed: a store made with `python -m evalcore init` (or a copy of --store, one such store), then, in this process,
two endpoints at one bench/sim_endpoint.py (--delay seconds before every answer, non-streaming; "bench-sys" plays the
system, "bench-user" the user: --rounds messages, then "[END]", then the questionnaire answered in JSON), the
simulator "bench-user" and a chat task on demo-zh kdconv/knowledge held by it alone (--no-people): --scenarios
scenarios x 1 system x --per-scenario K conversations (100 x 10 = 1,000), max rounds --rounds + 1 so that the
simulated user's "[END]" ends each one, review on (a conversation ends 'rated': no scoring job runs).

Timed: `python -m evalcore chat simulate TASK --concurrency C --db STORE` as a child process, from its start to its
exit (wall). Measured with it: the requests the endpoint saw (its counters) and the messages stored (the store,
read afterwards); the ideal time = requests x delay / concurrency, and the share of the ideal rate = ideal / wall
(the run's own seconds, from its summary line, beside it: wall less the child's start and its last commit); the
child's CPU (getrusage(RUSAGE_CHILDREN), user + system, the difference across its run) per stored message and per
request; its resident memory (VmRSS in /proc/PID/status) every 0.5 s: at 10%, 50% and 90% of the run and its
largest sample, to show it flat; the endpoint's CPU per request (/proc); the load average before and after. Then the
same command again on the finished task (nothing to do): its wall and CPU are the fixed cost of a start, and the
endpoint must see no request.

--kills N: the run is started, SIGKILLed when the endpoint has seen 1/(N+1), 2/(N+1), ... of the requests a full
run needs (polled every 20 ms), started again each time, and the last run let finish. Reported: each run's wall and
requests; requests needed (one per stored message, plus each conversation's "[END]" and questionnaire) against
requests the endpoint saw: the difference is what the kills cost (requests sent again), and, read from the store
between a kill and the next start, how many of the killed run's requests were in flight or answered and not yet
stored (a run writes what it received in batches: what a SIGKILL loses).

Checked in the store afterwards, in every mode: every conversation of the task rated; for each one, its messages at
idx 0..n-1 with no gap, roles alternating from the user's, exactly --rounds rounds, the k-th user message and the
k-th reply naming round k (a turn stored twice or out of place would not); (conversation_id, idx) never twice; one
rating per dimension per conversation.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.protocol import cpu_seconds, rss_mb  # noqa: E402
from evalcore.services import chats as service  # noqa: E402
from evalcore.store import connect  # noqa: E402
from evalcore.store import chats as stored  # noqa: E402
from evalcore.store import endpoints as registry  # noqa: E402
from evalcore.store import simulators as sims  # noqa: E402

SUMMARY_SECONDS = " in "   # the child's summary line ends "... N requests in X s"
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "NO_PROXY": "127.0.0.1"}


def endpoint_server(delay: float, rounds: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "sim_endpoint.py"), "--delay", str(delay),
                             "--rounds", str(rounds)], stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def seen(url: str) -> dict:
    """The endpoint's counters: requests of each kind it has read."""
    with urllib.request.urlopen(url + "/stats", timeout=10) as answer:
        return json.loads(answer.read())


def make_task(db: Path, url: str, scenarios: int, per_scenario: int, rounds: int) -> tuple[int, list[str]]:
    """The two endpoints, the simulator and the task: (task id, its dimensions)."""
    con = connect(db)
    try:
        for name in ("bench-sys", "bench-user"):
            registry.add(con, registry.Registered(name, url, name, api_key_env=None, max_tokens=256), replace=True)
        sims.add(con, sims.Simulator("bench-user", "bench-user", "cooperative", None, 0), replace=True)
        tid = service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge", endpoints=["bench-sys"],
                                  per_scenario=per_scenario, max_rounds=rounds + 1, n_scenarios=scenarios,
                                  review=True, simulators=["bench-user"], people=False, name="bench simulate")
        return tid, [d.dimension for d in stored.get(con, tid).dimensions]
    finally:
        con.close()


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Child:
    """One `chat simulate` run: started, watched (VmRSS every 0.5 s; the endpoint's counters every 20 ms when it is
    to be killed at a count), ended by itself or by SIGKILL."""

    def __init__(self, db: Path, tid: int, concurrency: int, log: Path):
        self.cpu0 = children_cpu()
        self.log = log
        self.start = time.monotonic()
        with open(log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "evalcore", "chat", "simulate", str(tid),
                                          "--concurrency", str(concurrency), "--db", str(db)],
                                         cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=out)
        self.rss: list[tuple[float, float]] = []   # (seconds since start, MB)

    def watch(self, url: str | None = None, kill_at: int | None = None) -> dict:
        next_rss = 0.0
        killed_at = None
        while self.proc.poll() is None:
            now = time.monotonic() - self.start
            if now >= next_rss:
                try:
                    mb = rss_mb(self.proc.pid)
                    if mb > 1:   # not while it is being exec'd (under 1 MB), nor gone (nan)
                        self.rss.append((now, mb))
                except (FileNotFoundError, ProcessLookupError):
                    pass
                next_rss = now + 0.5
            if kill_at is not None and seen(url)["total"] >= kill_at:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                time.sleep(0.1)   # what it sent before it died is read by the endpoint and counted
                killed_at = seen(url)["total"]
                break
            time.sleep(0.02 if kill_at is not None else 0.1)
        stdout = self.proc.stdout.read().decode("utf-8", "replace")
        code = self.proc.wait()
        wall = time.monotonic() - self.start
        summary = next((line for line in stdout.splitlines() if line.startswith("chat task ")), "")
        own = None
        if summary.rstrip().endswith(" s") and SUMMARY_SECONDS in summary:
            try:
                own = float(summary.rstrip()[:-2].rsplit(SUMMARY_SECONDS, 1)[1])
            except ValueError:
                own = None
        return {"wall_s": round(wall, 2), "run_s": own, "returncode": code, "killed_at_requests": killed_at,
                "cpu_s": round(children_cpu() - self.cpu0, 3), "summary": summary.strip(), "rss": self.rss}


def rss_profile(samples: list[tuple[float, float]]) -> dict:
    """VmRSS at 10%, 50% and 90% of the run (the sample nearest each), the largest, and how many samples."""
    if not samples:
        return {"samples": 0}
    end = samples[-1][0]

    def at(share: float) -> float:
        return round(min(samples, key=lambda s: abs(s[0] - share * end))[1], 1)

    return {"samples": len(samples), "rss_mb_10": at(0.1), "rss_mb_50": at(0.5), "rss_mb_90": at(0.9),
            "rss_mb_max": round(max(mb for _, mb in samples), 1)}


def written(db: Path, tid: int) -> int:
    """The requests whose answers the store holds: each message, each end ("[END]"), each questionnaire."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT (SELECT count(*) FROM chat_messages JOIN chat_conversations USING (conversation_id) "
                           "WHERE task_id = $1) + (SELECT count(*) FILTER (state IN ('ended', 'rated', 'accepted')) "
                           "+ count(*) FILTER (state IN ('rated', 'accepted')) FROM chat_conversations WHERE task_id = $1)",
                           [tid]).fetchall()[0][0]
    finally:
        con.close()


def check(db: Path, tid: int, rounds: int, dimensions: list[str]) -> dict:
    """Every conversation whole, no turn twice (see the docstring)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        convs = dict(con.execute("SELECT conversation_id, state FROM chat_conversations WHERE task_id = ?",
                                 [tid]).fetchall())
        rows = con.execute("SELECT m.conversation_id, m.idx, m.role, m.text FROM chat_messages m JOIN "
                           "chat_conversations c USING (conversation_id) WHERE c.task_id = ? ORDER BY 1, 2",
                           [tid]).fetchall()
        repeats = con.execute("SELECT count(*) FROM (SELECT conversation_id, idx FROM chat_messages JOIN "
                              "chat_conversations USING (conversation_id) WHERE task_id = ? GROUP BY ALL "
                              "HAVING count(*) > 1)", [tid]).fetchall()[0][0]
        rated = con.execute("SELECT r.conversation_id, r.dimension, count(*) FROM chat_ratings r JOIN chat_conversations "
                            "c USING (conversation_id) WHERE c.task_id = ? GROUP BY ALL", [tid]).fetchall()
    finally:
        con.close()
    messages: dict[int, list] = {cid: [] for cid in convs}
    for cid, idx, role, text in rows:
        messages[cid].append((idx, role, text))
    ratings: dict[int, Counter] = {cid: Counter() for cid in convs}
    for cid, dim, n in rated:
        ratings[cid][dim] += n
    broken: dict[int, str] = {}
    for cid, state in convs.items():
        turns = messages[cid]
        if state not in ("rated", "accepted"):
            broken[cid] = f"state {state}"
        elif [t[0] for t in turns] != list(range(len(turns))):
            broken[cid] = f"idx {[t[0] for t in turns]}"
        elif len(turns) != 2 * rounds:
            broken[cid] = f"{len(turns)} messages, not {2 * rounds}"
        elif any(role != ("user" if i % 2 == 0 else "assistant") for i, (_, role, _) in enumerate(turns)):
            broken[cid] = "roles do not alternate from the user's"
        elif any(not text.startswith(f"第{i // 2 + 1}轮") for i, (_, _, text) in enumerate(turns)):
            broken[cid] = "a turn names another round (stored twice or out of place)"
        elif sorted(ratings[cid]) != sorted(dimensions) or any(n != 1 for n in ratings[cid].values()):
            broken[cid] = f"ratings {dict(ratings[cid])}"
    return {"conversations": len(convs), "whole": len(convs) - len(broken), "not_whole": len(broken),
            "states": dict(Counter(convs.values())), "messages_stored": len(rows), "key_repeats": repeats,
            "not_whole_samples": [f"{cid}: {why}" for cid, why in list(broken.items())[:5]]}


def run(scenarios: int, per_scenario: int, rounds: int, delay: float, concurrency: int, kills: int,
        store: Path | None = None) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-simulate-"))
    db, log = tmp / "s.duckdb", tmp / "simulate.log"
    if store is not None:
        shutil.copyfile(store, db)
    else:
        subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", str(db)], cwd=ROOT, check=True,
                       capture_output=True, env=ENV)
    server, url = endpoint_server(delay, rounds)
    try:
        tid, dimensions = make_task(db, url, scenarios, per_scenario, rounds)
        conversations = scenarios * per_scenario
        needed_each = 2 * rounds + 2   # rounds x (the user's message, the reply), "[END]", the questionnaire
        expected = conversations * needed_each
        load_before = os.getloadavg()
        server_cpu0 = cpu_seconds(server.pid)
        runs = []
        lost = 0   # requests whose answer died with a run, so far
        for k in range(1, kills + 1):
            runs.append(Child(db, tid, concurrency, log).watch(url, kill_at=round(expected * k / (kills + 1))))
            # what the killed run had been answered (or was waiting for) and not stored: asked again by the next
            runs[-1]["unstored_at_kill"] = runs[-1]["killed_at_requests"] - written(db, tid) - lost
            lost += runs[-1]["unstored_at_kill"]
        runs.append(Child(db, tid, concurrency, log).watch())
        server_cpu = cpu_seconds(server.pid) - server_cpu0
        counts = seen(url)
        load_after = os.getloadavg()
        again = Child(db, tid, concurrency, log).watch()   # the finished task: a start's fixed cost, nothing sent
        counts_after = seen(url)
    finally:
        server.terminate()
        server.wait(timeout=30)
    found = check(db, tid, rounds, dimensions)
    requests = counts["total"]
    needed = found["messages_stored"] + 2 * found["conversations"]   # each message, each "[END]" and questionnaire
    wall = sum(r["wall_s"] for r in runs)
    own = [r["run_s"] for r in runs]
    cpu = sum(r["cpu_s"] for r in runs)
    ideal = requests * delay / concurrency
    rss = runs[-1]["rss"]   # the run that finished (with --kills: the last, resumed one)
    summary = {
        "conversations": conversations, "rounds": rounds, "delay_s": delay, "concurrency": concurrency, "kills": kills,
        "wall_s": round(wall, 2), "run_s": round(sum(own), 2) if None not in own else None,
        "requests": requests, "requests_by_kind": {k: counts[k] for k in ("sys", "user", "end", "rating", "other")},
        "requests_needed": needed, "requests_sent_again": requests - needed,
        "ideal_s": round(ideal, 2),
        "share_of_ideal": round(ideal / wall, 3) if wall else None,
        "share_of_ideal_run_s": round(ideal / sum(own), 3) if None not in own and sum(own) else None,
        "client_cpu_s": round(cpu, 2),
        "client_cpu_ms_per_message": round(1000 * cpu / found["messages_stored"], 2) if found["messages_stored"] else None,
        "client_cpu_ms_per_request": round(1000 * cpu / requests, 2) if requests else None,
        "server_cpu_ms_per_request": round(1000 * server_cpu / requests, 2) if requests else None,
        "rss": rss_profile(rss),
        "runs": [{k: v for k, v in r.items() if k != "rss"} for r in runs],
        "idle_run": {"wall_s": again["wall_s"], "cpu_s": again["cpu_s"], "returncode": again["returncode"],
                     "requests_sent": counts_after["total"] - counts["total"]},
        "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in load_after],
        **found,
    }
    if found["not_whole"] or any(r["returncode"] not in (0, -signal.SIGKILL) for r in runs):
        summary["log"] = str(log)
        summary["store"] = str(db)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary


def show(s: dict) -> None:
    rows = [("conversations x rounds", f"{s['conversations']} x {s['rounds']}, delay {s['delay_s']} s, "
                                       f"concurrency {s['concurrency']}, kills {s['kills']}"),
            ("wall (child start to exit)", f"{s['wall_s']} s (the runs' own: {s['run_s']} s)"),
            ("requests seen / needed", f"{s['requests']} / {s['requests_needed']} (sent again: "
                                       f"{s['requests_sent_again']}; {s['requests_by_kind']})"),
            ("ideal (requests x delay / C)", f"{s['ideal_s']} s"),
            ("share of the ideal rate", f"{s['share_of_ideal']} (on the runs' own seconds: {s['share_of_ideal_run_s']})"),
            ("client CPU", f"{s['client_cpu_s']} s: {s['client_cpu_ms_per_message']} ms per stored message, "
                           f"{s['client_cpu_ms_per_request']} ms per request"),
            ("endpoint CPU", f"{s['server_cpu_ms_per_request']} ms per request"),
            ("client RSS (MB)", ", ".join(f"{k} {v}" for k, v in s["rss"].items())),
            ("a start with nothing to do", f"{s['idle_run']['wall_s']} s wall, {s['idle_run']['cpu_s']} CPU-s, "
                                           f"{s['idle_run']['requests_sent']} requests"),
            ("load average before / after", f"{s['load_before']} / {s['load_after']}"),
            ("store", f"{s['whole']} of {s['conversations']} conversations whole, {s['messages_stored']} messages, "
                      f"(conversation, idx) repeats {s['key_repeats']}, states {s['states']}")]
    for r in s["runs"]:
        killed = (f"killed at {r['killed_at_requests']} requests, {r['unstored_at_kill']} of them answered or in "
                  f"flight and not stored" if r["killed_at_requests"] is not None else "finished")
        rows.append(("run", f"{r['wall_s']} s, rc {r['returncode']}, {killed}, {r['cpu_s']} CPU-s: {r['summary']}"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k.ljust(width)}  {v}")
    for sample in s["not_whole_samples"]:
        print("  not whole:", sample)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", type=int, default=100, help="scenarios of demo-zh kdconv/knowledge (at most 450)")
    parser.add_argument("--per-scenario", type=int, default=10, help="conversations per scenario (at most 20)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds the simulated user holds before [END]")
    parser.add_argument("--delay", type=float, default=0.2, help="the endpoint's seconds before every answer")
    parser.add_argument("--concurrency", type=int, default=32, help="`chat simulate --concurrency`")
    parser.add_argument("--kills", type=int, default=0, help="SIGKILL the run this many times, then resume it")
    parser.add_argument("--store", type=Path, help="copy this `evalcore init` store instead of building one")
    parser.add_argument("--out", type=Path, help="also write the summary here as JSON")
    args = parser.parse_args()
    s = run(args.scenarios, args.per_scenario, args.rounds, args.delay, args.concurrency, args.kills, args.store)
    show(s)
    if args.out:
        args.out.write_text(json.dumps(s, ensure_ascii=False, indent=1), encoding="utf-8")
    sys.exit(0 if s["not_whole"] == 0 and s["key_repeats"] == 0 else 1)


if __name__ == "__main__":
    main()
