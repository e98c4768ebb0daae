"""Benchmark: the dashboard's server under N simulated users speaking Streamlit's own protocol (no browser).

    python bench/protocol.py [--users 1,25,50,100] [--seconds 60] [--think 5,15] [--post-script-gc on|off|both]
    python bench/protocol.py --soak 10000 --post-script-gc off     # the server's RSS over 10,000 loads
    python bench/protocol.py --users 50,100,150 --with-cli 16000     # beside the CLI importing and scoring

Each user is one websocket session on /_stcore/stream, as a browser tab opens it: it sends a BackMsg
`rerun_script` with a page's name and a real query string, reads ForwardMsgs until `script_finished`, then
thinks 5-15 s (uniform) and opens the next page of a fixed mix (overview, trust, leaderboard, correlations,
drill-down, human evaluation, judge audit) as a new tab does: a fresh session per load. Timed: from sending
the rerun request to script_finished (the server's time; no browser draws anything here, as in a lab where
each viewer has their own computer). Reported per N: loads, p50/p95/max seconds, errors (an exception
element, a session that never finished in 120 s, a dropped socket), the server's CPU-seconds per load
(/proc, user + system, over the run) and its resident memory at the end. Users start spread over the
first think time, so the first loads do not all land at once.

Server: `python app.py` on a store built with `evalcore init` (the embedded default), with the project's
.streamlit/config.toml, with `--runner.postScriptGC true` or `false` (Streamlit's default runs a full
gc.collect(2) after every script run; the project's config turns it off).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.annotate import serve  # noqa: E402

MIX = [("", ""), ("trust", "dataset=msde-paper"), ("leaderboard", "dataset=msde-paper&track=luge%2Fchitchat"),
       ("correlations", "dataset=msde-paper&track=luge%2Fchitchat"), ("drilldown", "dataset=demo-zh&track=lccc%2Fchitchat"),
       ("human", "dataset=engagement-en"), ("judges", "")]
FINISHED = {0, 3}   # FINISHED_SUCCESSFULLY, FINISHED_FRAGMENT_RUN_SUCCESSFULLY


async def load(base: str, page: str, query: str, timeout: float = 120.0) -> tuple[float, str | None]:
    """One page load over the protocol: (seconds from the rerun request to script_finished, error or None)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.asyncio.client import connect

    conn = await connect(base.replace("http", "ws") + "/_stcore/stream", subprotocols=["streamlit"],
                         max_size=None, open_timeout=timeout)
    try:
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        start = time.perf_counter()
        await conn.send(msg.SerializeToString())
        error = None
        deadline = start + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                return time.perf_counter() - start, "no script_finished in time"
            try:
                raw = await asyncio.wait_for(conn.recv(), left)
            except Exception as exc:   # closed by the server
                return time.perf_counter() - start, f"socket: {type(exc).__name__}"
            if isinstance(raw, str):
                continue
            fwd = ForwardMsg()
            fwd.ParseFromString(raw)
            kind = fwd.WhichOneof("type")
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element" \
                    and fwd.delta.new_element.WhichOneof("type") == "exception":
                error = error or f"exception: {fwd.delta.new_element.exception.message[:120]}"
            elif kind == "script_finished":
                seconds = time.perf_counter() - start
                if fwd.script_finished not in FINISHED:
                    error = error or f"script_finished {fwd.script_finished}"
                return seconds, error
    finally:
        await conn.close()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def crowd(base: str, users: int, seconds: float, think: tuple[float, float], seed: int) -> list[tuple]:
    """`users` users loading pages for `seconds`: [(page, seconds, error)]."""
    out: list[tuple] = []
    stop = time.monotonic() + seconds

    async def user(k: int) -> None:
        rng = random.Random(seed * 1000 + k)
        await asyncio.sleep(rng.uniform(0, think[1]))
        i = rng.randrange(len(MIX))
        while time.monotonic() < stop:
            page, query = MIX[i % len(MIX)]
            i += 1
            try:
                took, error = await load(base, page, query)
            except Exception as exc:   # counted, not hidden
                took, error = float("nan"), f"{type(exc).__name__}: {exc}"
            out.append((page or "overview", took, error))
            await asyncio.sleep(rng.uniform(*think))

    await asyncio.gather(*(user(k) for k in range(users)))
    return out


def serve_app(db: Path, gc: bool, log: Path) -> tuple[subprocess.Popen, str]:
    return serve(["app.py", "--runner.postScriptGC", "true" if gc else "false"],   # config.toml's says false
                 {**os.environ, "EVALCORE_DB": str(db)}, ROOT, log)


async def soak(base: str, pid: int, loads: int, users: int, every: int) -> list[tuple[int, float, float]]:
    """`users` sessions loading the page mix back to back until `loads` loads: (loads so far, RSS MB, seconds)."""
    done, curve, errors = 0, [(0, rss_mb(pid), 0.0)], 0
    start = time.monotonic()

    async def user(k: int) -> None:
        nonlocal done, errors
        i = k
        while done < loads:
            page, query = MIX[i % len(MIX)]
            i += 1
            _, error = await load(base, page, query)
            errors += error is not None
            done += 1
            if done % every == 0:
                curve.append((done, rss_mb(pid), time.monotonic() - start))
                print(f"soak {done:6d} loads  rss {curve[-1][1]:6.0f} MB  {curve[-1][2]:6.0f} s  errors {errors}",
                      flush=True)

    await asyncio.gather(*(user(k) for k in range(users)))
    return curve


def cli_writer(db: Path, tmp: Path, n: int):
    """bench/load.py's dataset `load` of n items, and a function that imports n responses of a model into it and
    scores them (bench/load.py's command), returning its seconds."""
    from bench.load import cli, load_dataset, responses_file

    load_dataset(str(db), tmp, n)
    return lambda model: cli(str(db), responses_file(tmp, model, n), model)[0]


def p95(values: list[float]) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", default="1,25,50,100")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--think", default="5,15")
    parser.add_argument("--post-script-gc", choices=("on", "off", "both"), default="both")
    parser.add_argument("--db", help="an existing store (default: a fresh `evalcore init`)")
    parser.add_argument("--with-cli", type=int, default=0, metavar="RESPONSES",
                        help="also, from each N's start, the CLI imports RESPONSES responses of a new model into a "
                             "dataset `load` and scores them (bench/load.py's command), on the same store")
    parser.add_argument("--soak", type=int, default=0, metavar="LOADS",
                        help="instead: LOADS loads back to back by 20 sessions, the server's RSS every 1,000")
    args = parser.parse_args()
    think = tuple(float(x) for x in args.think.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-protocol-"))
    db = Path(args.db) if args.db else tmp / "store.duckdb"
    if not args.db:
        subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", str(db)], cwd=ROOT, check=True,
                       capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    writer = None
    if args.with_cli:
        writer = cli_writer(db, tmp, args.with_cli)
        print(f"CLI import + score of {args.with_cli:,} responses, no server: {writer('alone'):.1f} s", flush=True)
    settings = {"on": [True], "off": [False], "both": [True, False]}[args.post_script_gc]
    if args.soak:
        for gc in settings:
            proc, base = serve_app(db, gc, tmp / "server.log")
            try:
                print(f"post-script GC {'on' if gc else 'off'}", flush=True)
                asyncio.run(soak(base, proc.pid, args.soak, 20, 1000))
            finally:
                proc.terminate()
                proc.wait(timeout=30)
        return
    print("gc  users  loads  p50_s  p95_s  max_s  errors  cpu_s/load  rss_mb", flush=True)
    for gc in settings:
        proc, base = serve_app(db, gc, tmp / "server.log")
        try:
            for page, query in MIX:   # warm: every page once (caches filled, as on a server that has run a while)
                asyncio.run(load(base, page, query))
            for users in [int(u) for u in args.users.split(",")]:
                before = cpu_seconds(proc.pid)
                took: list[float] = []
                side = None
                if writer:
                    side = threading.Thread(target=lambda: took.append(writer(f"m{users}{'gc' if gc else ''}")))
                    side.start()
                rows = asyncio.run(crowd(base, users, args.seconds, think, seed=users))
                cpu = cpu_seconds(proc.pid) - before
                if side:
                    side.join()
                    print(f"    CLI import + score meanwhile: {took[0]:.1f} s" if took else "    CLI failed", flush=True)
                times = [t for _, t, e in rows if e is None]
                errors = [e for _, _, e in rows if e is not None]
                nan = float("nan")
                print(f"{'on ' if gc else 'off'} {users:6d} {len(rows):6d} {statistics.median(times) if times else nan:6.2f} "
                      f"{p95(times):6.2f} {max(times) if times else nan:6.2f} {len(errors):7d} "
                      f"{cpu / max(len(rows), 1):11.3f} {rss_mb(proc.pid):7.0f}", flush=True)
                for e in sorted(set(errors))[:3]:
                    print(f"    error: {e}", flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
