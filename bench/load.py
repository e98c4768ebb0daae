"""Benchmark: the dashboard's server under N simulated users (Streamlit's own protocol, no browser), alone or
beside the CLI importing and scoring, or beside an upload's scoring job.

    python bench/load.py [--users 1,25,50,100,150] [--seconds 60] [--think 5,15] [--side none,job,cli]
                         [--responses 16000] [--post-script-gc on|off|both]
    python bench/load.py --soak 10000                  # the server's RSS over 10,000 loads back to back
    python bench/load.py --browser [--viewers 1,5,10]   # Chromium viewers instead (bench/load_browser.py)

Users: bench/protocol.py (a websocket session per page load, as a new tab opens it, timed from the rerun
request to script_finished; 5-15 s think time; a mix of seven pages with real query strings). Per N and
side: loads, p50/p95/max seconds, errors, the page server's CPU-seconds per load and its RSS at the end.
Sides, each started with the N's run on the same store:
  none  the users alone;
  cli   `evalcore import responses` + `evalcore score` of --responses responses of a new model (a dataset
        `load` of that many items), as a lab member would from a terminal;
  job   an upload's scoring job: --responses responses imported with their job recorded in the same
        transaction, as the Upload page does; the server starts the job's worker (its check runs every
        second here, EVALCORE_JOB_CHECK=1: the path of a page closed before it started its job) and the
        job is timed from the import to done.
Every response text is new (the model's name is in it), so all of them are scored.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.annotate import free_port, healthy  # noqa: E402
from bench.protocol import MIX, cpu_seconds, crowd, load, p95, rss_mb, serve_app, servers, soak  # noqa: E402


def load_dataset(db: str, tmp: Path, n: int) -> None:
    """The dataset `load`: n one-turn items in track load/chitchat, imported into the store."""
    items = tmp / "items.jsonl"
    items.write_text("".join(json.dumps({"item_id": f"load-{i:06d}", "dataset": "load", "track": "load/chitchat",
                                         "context": [f"你 好 ， 今 天 第 {i} 次 聊 天"], "references": [f"好 的 {i % 97}"]},
                                        ensure_ascii=False) + "\n" for i in range(n)), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "evalcore", "import", "items", str(items), "--db", db], cwd=ROOT,
                   check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def responses_file(tmp: Path, model: str, n: int) -> Path:
    """A responses CSV of one model for every item of `load`: texts of its own (the model's name in each), so
    every one is scored anew, none found in the cache of an earlier model's."""
    path = tmp / f"{model}.csv"
    path.write_text("item_id,response\n" + "".join(f"load-{i:06d},{model} 说 好 的 呀 {i}\n" for i in range(n)),
                    encoding="utf-8")
    return path


def cli(db: str, csv: Path, model: str) -> tuple[float, str]:
    start = time.perf_counter()
    run = subprocess.run(
        f"{sys.executable} -m evalcore import responses {csv} --db {db} --dataset load --track load/chitchat "
        f"--model {model} && {sys.executable} -m evalcore score --db {db} --dataset load --track load/chitchat",
        shell=True, cwd=ROOT, capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"CLI failed:\n{run.stdout}\n{run.stderr}")
    return time.perf_counter() - start, run.stderr


def job(db: str, tmp: Path, n: int, model: str, server_pid: int) -> tuple[float, str]:
    """An upload's import and scoring job (see the module's text) in a process of its own: (seconds from the import
    to the job's end, its state). Not in a thread of this one: the import's Python work would hold the GIL that the
    simulated users' event loop needs, and their times would grow by the client's own waiting."""
    run = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--job", db, str(tmp), str(n), model,
                          str(server_pid)], cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if run.returncode:
        sys.exit(f"the job's process failed:\n{run.stdout}\n{run.stderr}")
    took, state = json.loads(run.stdout.strip().splitlines()[-1])
    return took, state


def _job_here(db: str, tmp: Path, n: int, model: str, server_pid: int) -> tuple[float, str]:
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.services import jobs
    from evalcore.store import connect

    csv = responses_file(tmp, model, n)
    start = time.perf_counter()
    made = []

    def then(c, tracks):   # the Upload page's record_job, as recorded by the server's process
        made.append(jobs.create(c, "load", jobs.scoring_steps(c, "load", tracks), model=model))
        c.execute("UPDATE jobs SET pid = ? WHERE job_id = ?", [server_pid, made[-1]])

    con = connect(db, wait=120)
    try:
        import_responses(con, csv, dataset="load", track="load/chitchat", model=model, then=then)
    finally:
        con.close()
    # Opened every second from here until the job ended, the store was held by this harness a twentieth of the time,
    # and the page runs and the worker waited for it (the Upload page shows a job's progress through the server's
    # own connection). So: read the job's row until a worker has claimed it, wait for that process to end, read it.
    def row() -> tuple:
        con = connect(db, wait=120)
        try:
            return con.execute("SELECT state, pid FROM jobs WHERE job_id = ?", [made[0]]).fetchall()[0]
        finally:
            con.close()

    state, pid = row()
    while state in ("queued", "running"):
        if state == "running":   # its worker's process: done or failed once it has ended (or resumed by another)
            while jobs.alive(pid, socket.gethostname()):
                time.sleep(0.1)
        else:
            time.sleep(0.5)
        state, pid = row()
    return time.perf_counter() - start, state


def serve_group(db: Path, processes: int, log: Path, env: dict) -> tuple[subprocess.Popen, list[str]]:
    """`evalcore app --processes N` (README, "More than one page-serving process") on free ports: (its process, bases)."""
    port = free_port()
    while any(free_port() == port + i for i in range(1, processes)):
        port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "evalcore", "app", "--db", str(db), "--port", str(port),
                             "--processes", str(processes)], cwd=ROOT, env={**os.environ, **env},
                            stdout=open(log, "a"), stderr=subprocess.STDOUT)
    bases = [f"http://localhost:{port + i}" for i in range(processes)]
    if not all(healthy(base) for base in bases):
        proc.kill()
        raise SystemExit(f"the servers did not start; see {log}")
    return proc, bases


def main() -> None:
    if sys.argv[1:2] == ["--job"]:   # job()'s process
        db, tmp, n, model, pid = sys.argv[2:7]
        print(json.dumps(_job_here(db, Path(tmp), int(n), model, int(pid))), flush=True)
        return
    if "--browser" in sys.argv:
        from bench.load_browser import main as browser

        return browser([a for a in sys.argv[1:] if a != "--browser"])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", default="1,25,50,100,150")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--think", default="5,15")
    parser.add_argument("--side", default="none", help="comma-separated: none, cli, job (see above)")
    parser.add_argument("--responses", type=int, default=16_000)
    parser.add_argument("--post-script-gc", choices=("on", "off", "both"), default="off")
    parser.add_argument("--db", help="an existing store (default: a fresh `evalcore init`)")
    parser.add_argument("--processes", type=int, default=1,
                        help="page-serving processes (`evalcore app --processes N`, with the project's config: "
                             "post-script GC off); users are spread over them")
    parser.add_argument("--soak", type=int, default=0, metavar="LOADS",
                        help="instead: LOADS loads back to back by 20 sessions, the server's RSS every 1,000")
    parser.add_argument("--out", help="also write the rows as JSON here")
    args = parser.parse_args()
    think = tuple(float(x) for x in args.think.split(","))
    sides = args.side.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-load-"))
    db = Path(args.db) if args.db else tmp / "store.duckdb"
    if not args.db:
        subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", str(db)], cwd=ROOT, check=True,
                       capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if set(sides) - {"none"}:
        load_dataset(str(db), tmp, args.responses)
    if "cli" in sides:
        alone, _ = cli(str(db), responses_file(tmp, "alone", args.responses), "alone")
        print(f"CLI import + score of {args.responses:,} responses, no server: {alone:.1f} s", flush=True)
    settings = {"on": [True], "off": [False], "both": [True, False]}[args.post_script_gc]
    env = {"EVALCORE_JOB_CHECK": "1"}
    if args.soak:
        for gc in settings:
            proc, base = serve_app(db, gc, tmp / "server.log", env)
            try:
                print(f"post-script GC {'on' if gc else 'off'}", flush=True)
                asyncio.run(soak(base, proc.pid, args.soak, 20, 1000))
            finally:
                proc.terminate()
                proc.wait(timeout=30)
        return
    rows = []
    print("gc   side  users  loads  p50_s  p95_s  max_s  errors  cpu_s/load  rss_mb  side_s", flush=True)
    if args.processes > 1:
        settings = [False]   # the group runs with config.toml's settings
    for gc in settings:
        if args.processes > 1:
            proc, base = serve_group(db, args.processes, tmp / "server.log", env)
            time.sleep(2)
        else:
            proc, base = serve_app(db, gc, tmp / "server.log", env)
        pids = servers(proc.pid)
        first = pids[0]
        try:
            if "job" in sides:   # the server has started its first worker once (as any server soon has)
                job(str(db), tmp, 10, "warm", first)
            for b in [base] if isinstance(base, str) else base:
                for page, query in MIX:   # warm: every page once (caches filled, as on a server that has run a while)
                    asyncio.run(load(b, page, query))
            for users in [int(u) for u in args.users.split(",")]:
                for side in sides:
                    model = f"m{users}-{side}-{'gc' if gc else 'nogc'}"
                    before = sum(cpu_seconds(p) for p in pids)
                    took: list = []
                    work = {"cli": lambda: took.append(cli(str(db), responses_file(tmp, model, args.responses), model)),
                            "job": lambda: took.append(job(str(db), tmp, args.responses, model, first))}.get(side)
                    thread = threading.Thread(target=work) if work else None
                    if thread:
                        thread.start()
                    out = asyncio.run(crowd(base, users, args.seconds, think, seed=users))
                    cpu = sum(cpu_seconds(p) for p in pids) - before
                    if thread:
                        thread.join()
                    times = [t for _, t, e in out if e is None]
                    errors = [e for _, _, e in out if e is not None]
                    nan = float("nan")
                    row = {"gc": gc, "side": side, "users": users, "loads": len(out),
                           "p50_s": statistics.median(times) if times else nan, "p95_s": p95(times),
                           "max_s": max(times) if times else nan, "errors": len(errors),
                           "cpu_s_per_load": cpu / max(len(out), 1), "rss_mb": sum(rss_mb(p) for p in pids),
                           "processes": len(pids),
                           "side_s": took[0][0] if took else nan,
                           "side_state": took[0][1] if took and side == "job" else ""}
                    rows.append(row)
                    print(f"{'on ' if gc else 'off'} {side:>5} {users:6d} {len(out):6d} {row['p50_s']:6.2f} "
                          f"{row['p95_s']:6.2f} {row['max_s']:6.2f} {len(errors):7d} {row['cpu_s_per_load']:11.3f} "
                          f"{row['rss_mb']:7.0f} {row['side_s']:7.1f} {row['side_state']}", flush=True)
                    for e in sorted(set(errors))[:3]:
                        print(f"    error: {e}", flush=True)
                    by_page = {}
                    for page, t, e in out:
                        if e is None:
                            by_page.setdefault(page, []).append(t)
                    row["pages_p95"] = {page: round(p95(ts), 3) for page, ts in sorted(by_page.items())}
                    print("    per page p50/p95: " + ", ".join(f"{page} {statistics.median(ts):.2f}/{p95(ts):.2f}"
                                                             for page, ts in sorted(by_page.items())), flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
