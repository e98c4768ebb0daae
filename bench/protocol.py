"""Simulated users speaking Streamlit's own protocol (no browser): bench/load.py's client.

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

import asyncio
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.annotate import serve  # noqa: E402

MIX = [("", ""), ("trust", "dataset=msde-paper"), ("leaderboard", "dataset=msde-paper&track=luge%2Fchitchat"),
       ("correlations", "dataset=msde-paper&track=luge%2Fchitchat"), ("drilldown", "dataset=demo-zh&track=lccc%2Fchitchat"),
       ("human", "dataset=engagement-en"), ("judges", "")]
FINISHED = {0, 3}   # FINISHED_SUCCESSFULLY, FINISHED_FRAGMENT_RUN_SUCCESSFULLY


async def load(base: str, page: str, query: str, timeout: float = 120.0, content: bool = False) -> tuple:
    """One page load over the protocol: (seconds from the rerun request to script_finished, error or None),
    and with `content` the bytes of every message the page sent (what a test looks for a name in)."""
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
        got: list[bytes] = []

        def out(seconds: float, error: str | None) -> tuple:
            return (seconds, error, b"".join(got)) if content else (seconds, error)

        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                return out(time.perf_counter() - start, "no script_finished in time")
            try:
                raw = await asyncio.wait_for(conn.recv(), left)
            except Exception as exc:   # closed by the server
                return out(time.perf_counter() - start, f"socket: {type(exc).__name__}")
            if isinstance(raw, str):
                continue
            if content:
                got.append(raw)
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
                return out(seconds, error)
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


def servers(pid: int) -> list[int]:
    """The page-serving processes behind `pid`: itself, or the servers `evalcore app --processes N` started."""
    try:
        kids = [int(k) for k in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        kids = []
    return [k for k in kids if b"app.py" in Path(f"/proc/{k}/cmdline").read_bytes()] or [pid]


async def crowd(base: str | list[str], users: int, seconds: float, think: tuple[float, float], seed: int) -> list[tuple]:
    """`users` users loading pages for `seconds`: [(page, seconds, error)]. Several bases (servers): user k
    uses base k mod n, as a proxy that keeps each browser on one server spreads them."""
    bases = [base] if isinstance(base, str) else base
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
                took, error = await load(bases[k % len(bases)], page, query)
            except Exception as exc:   # counted, not hidden
                took, error = float("nan"), f"{type(exc).__name__}: {exc}"
            out.append((page or "overview", took, error))
            await asyncio.sleep(rng.uniform(*think))

    await asyncio.gather(*(user(k) for k in range(users)))
    return out


def serve_app(db: Path, gc: bool, log: Path, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    return serve(["app.py", "--runner.postScriptGC", "true" if gc else "false"],   # config.toml's says false
                 {**os.environ, "EVALCORE_DB": str(db), **(env or {})}, ROOT, log)


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


def p95(values: list[float]) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=20, method="inclusive")[18]
