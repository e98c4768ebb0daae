"""Benchmark: generation throughput against a local endpoint that answers after a fixed delay.

    python bench/generate.py [--concurrency 8,32,128] [--delay 0.2] [--requests N] [--stream] [--json OUT]
    python bench/generate.py --requests 20000 --concurrency 32      # the memory run
    python bench/generate.py --generate [--concurrency 32] [--items N]   # `evalcore generate` end to end

The endpoint is bench/fixed_server.py (asyncio, its own process). For each concurrency C the client runs in a
fresh process of its own, sending N requests through evalcore's chat client (evalcore.core.chat.chat_iter, what
`evalcore generate` sends with), so its CPU and memory are the client's alone. Reported per C: wall seconds,
requests per second, the ideal (C / delay) and the share of it reached, the client's CPU milliseconds per
request (user + system, getrusage), its peak RSS (ru_maxrss), its RSS at 10%, 50% and 100% of the requests
(flat memory: the last minus the 10% one stays within a few MB however many requests) and, in the JSON, its
RSS sampled every second; and the server's CPU milliseconds per request (/proc), which shows it was not the
bound. N defaults to max(2,000, 40 x C) per concurrency.

--generate runs `evalcore generate` itself (templates, the store, resumability) on a temporary store built with
`python -m evalcore init`, against the same endpoint: items per second as a share of the ideal, and the whole
process's CPU per item and peak RSS (os.wait4), beside the client alone.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evalcore.core.chat import Endpoint, chat_iter  # noqa: E402

HEADER = (f"{'run':>8} {'C':>4} {'requests':>8} {'failed':>6} {'wall_s':>7} {'req/s':>7} {'ideal':>6} {'share':>6} "
          f"{'cpu_ms/req':>10} {'srv_ms/req':>10} {'peak_mb':>7} {'rss 10%/50%/100% MB':>20}")


def rss_mb(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Sampler(threading.Thread):
    """This process's RSS in MB, once a second, into `samples` (memory over time, not only its peak)."""

    def __init__(self, every: float = 1.0):
        super().__init__(daemon=True)
        self.every, self.samples, self.halt = every, [], threading.Event()

    def run(self) -> None:
        while not self.halt.wait(self.every):
            self.samples.append(round(rss_mb(), 1))


def client(url: str, concurrency: int, requests: int, delay: float, stream: bool) -> dict:
    """One run in this process: its figures, as a dict (printed as JSON by --client)."""
    endpoint = Endpoint(url, "m", api_key_env=None, max_tokens=64, timeout=30, stream=stream)
    marks = {max(1, requests // 10): "rss_10", max(1, requests // 2): "rss_50"}
    out: dict = {"rss_start": round(rss_mb(), 1)}
    failed = 0
    sampler = Sampler()
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    sampler.start()
    conversations = ((i, [{"role": "user", "content": f"第 {i} 个问题：你好吗？"}]) for i in range(requests))
    for done, (_, reply) in enumerate(chat_iter(endpoint, conversations, concurrency=concurrency, retries=1), 1):
        failed += reply.text is None
        if done in marks:
            out[marks[done]] = round(rss_mb(), 1)
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    sampler.halt.set()
    cpu = (usage.ru_utime - usage0.ru_utime) + (usage.ru_stime - usage0.ru_stime)
    ideal = concurrency / delay
    out.update(run="client", concurrency=concurrency, requests=requests, failed=failed, wall_s=round(wall, 2),
               req_per_s=round(requests / wall, 1), ideal_req_per_s=round(ideal, 1),
               share_of_ideal=round(requests / wall / ideal, 3), cpu_ms_per_request=round(1000 * cpu / requests, 3),
               peak_rss_mb=round(usage.ru_maxrss / 1024, 1), rss_100=round(rss_mb(), 1),
               rss_every_s=sampler.samples)
    return out


def run_client(url: str, c: int, n: int, delay: float, stream: bool) -> dict:
    done = subprocess.run([sys.executable, __file__, "--client", url, "--concurrency", str(c), "--requests", str(n),
                           "--delay", str(delay)] + (["--stream"] if stream else []),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def evalcore(*args: str, db: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalcore", *args, "--db", db], cwd=ROOT, capture_output=True,
                          text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def run_generate(url: str, db: str, c: int, items: int | None, delay: float, name: str, tmp: Path) -> dict:
    """`evalcore generate` of demo-zh (or a seeded sample of `items` of it) as model `name`, timed; its CPU and
    peak RSS are the generate process's alone (os.wait4 on it, not the sum over every child)."""
    evalcore("endpoint", "add", f"fixed{c}", "--base-url", url, "--model", "m", "--api-key-env", "NO_KEY",
             "--concurrency", str(c), "--timeout", "30", "--replace", db=db)
    cmd = [sys.executable, "-m", "evalcore", "generate", "--db", db, "--dataset", "demo-zh", "--endpoint",
           f"fixed{c}", "--model", name, "--no-score", "--no-progress"] + (["--items", str(items)] if items else [])
    with open(tmp / "out.txt", "w+") as out, open(tmp / "err.txt", "w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err, env={**os.environ, "PYTHONPATH": str(ROOT)})
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)   # reaped here: Popen must not wait for it again
        out.seek(0)
        err.seek(0)
        said, why = out.read(), err.read()
    if proc.returncode != 0:
        raise SystemExit(f"evalcore generate failed ({proc.returncode}): {why.strip()[-2000:]}")
    import duckdb  # here, not at the top: the client runs would carry its memory

    con = duckdb.connect(db, read_only=True)
    try:
        [(stored,)] = con.execute("SELECT count(*) FROM responses WHERE model = ?", [name]).fetchall()
        [(total,)] = con.execute("SELECT count(*) FROM items WHERE dataset = 'demo-zh'").fetchall()
    finally:
        con.close()
    ideal = c / delay
    return dict(run="generate", concurrency=c, requests=stored, failed=min(items or total, total) - stored, wall_s=round(wall, 2),
                req_per_s=round(stored / wall, 1), ideal_req_per_s=round(ideal, 1),
                share_of_ideal=round(stored / wall / ideal, 3),
                cpu_ms_per_request=round(1000 * (usage.ru_utime + usage.ru_stime) / max(stored, 1), 3),
                peak_rss_mb=round(usage.ru_maxrss / 1024, 1), output=said.strip().splitlines())


def line(r: dict) -> str:
    rss = f"{r.get('rss_10', '-')}/{r.get('rss_50', '-')}/{r.get('rss_100', '-')}"
    return (f"{r['run']:>8} {r['concurrency']:4d} {r['requests']:8d} {r['failed']:6d} {r['wall_s']:7.2f} "
            f"{r['req_per_s']:7.1f} {r['ideal_req_per_s']:6.0f} {r['share_of_ideal']:6.3f} "
            f"{r['cpu_ms_per_request']:10.2f} {r.get('server_cpu_ms_per_request', float('nan')):10.2f} "
            f"{r['peak_rss_mb']:7.1f} {rss:>20}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", default="8,32,128", help="comma-separated (default 8,32,128)")
    parser.add_argument("--delay", type=float, default=0.2, help="the server's seconds per answer (default 0.2)")
    parser.add_argument("--requests", type=int, help="requests per concurrency (default max(2000, 40 x C))")
    parser.add_argument("--stream", action="store_true", help="ask for server-sent events, as generation does")
    parser.add_argument("--generate", action="store_true",
                        help="also run `evalcore generate` of demo-zh per concurrency (a store is built first, ~20 s)")
    parser.add_argument("--items", type=int, help="with --generate: a seeded sample of N items (default: all)")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--client", help=argparse.SUPPRESS)   # URL: run one client here and print its figures
    args = parser.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    if args.client:
        print(json.dumps(client(args.client, levels[0], args.requests, args.delay, args.stream)))
        return
    server = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fixed_server.py"), "--delay", str(args.delay)],
                              stdout=subprocess.PIPE, text=True)
    rows = []
    try:
        url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            db = str(Path(tmp) / "store.duckdb")
            if args.generate:
                evalcore("init", db=db)
            print(HEADER, flush=True)
            for c in levels:
                n = args.requests or max(2000, 40 * c)
                before = cpu_seconds(server.pid)
                rows.append(run_client(url, c, n, args.delay, args.stream))
                rows[-1]["server_cpu_ms_per_request"] = round(1000 * (cpu_seconds(server.pid) - before) / n, 3)
                print(line(rows[-1]), flush=True)
                if args.generate:
                    before = cpu_seconds(server.pid)
                    rows.append(run_generate(url, db, c, args.items, args.delay, f"bench-c{c}", Path(tmp)))
                    rows[-1]["server_cpu_ms_per_request"] = round(
                        1000 * (cpu_seconds(server.pid) - before) / max(rows[-1]["requests"], 1), 3)
                    print(line(rows[-1]), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
    meta = {"delay_s": args.delay, "stream": args.stream, "cores": os.cpu_count(), "load_avg": os.getloadavg(),
            "requests": args.requests or "max(2000, 40 x C)"}
    print(f"(delay {args.delay} s, stream {args.stream}, {os.cpu_count()} cores, load average at the end "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; ideal = C / delay; srv = the endpoint's CPU)")
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
