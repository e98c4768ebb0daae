"""Benchmark: generation throughput against a local endpoint that answers after a fixed delay.

    python bench/generate.py [--concurrency 8,32,128] [--delay 0.2] [--requests N] [--stream] [--json OUT]

The endpoint is bench/fixed_server.py (asyncio, its own process). For each concurrency C the client runs in a fresh
process of its own, sending N requests through evalcore's chat client (evalcore.core.chat.chat_iter, what
`evalcore generate` sends with), so its CPU and memory are the client's alone. Reported per C: wall seconds,
requests per second, the ideal (C / delay) and the share of it reached, the client's CPU milliseconds per
request (user + system), its peak RSS, and its RSS at 10%, 50% and 100% of the run (flat memory: the last minus
the 10% one stays within a few MB however many requests). N defaults to max(2,000, 40 x C); --requests 20000 is
the memory run.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def client(url: str, concurrency: int, requests: int, stream: bool) -> dict:
    """One run in this process: the figures, as a dict (printed as JSON by --client)."""
    from evalcore.core.chat import Endpoint, chat_iter

    endpoint = Endpoint(url, "m", api_key_env=None, max_tokens=64, timeout=30, stream=stream)
    marks = {max(1, requests // 10): "rss_10", max(1, requests // 2): "rss_50"}
    out: dict = {}
    failed = 0
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    conversations = ((i, [{"role": "user", "content": f"第 {i} 个问题：你好吗？"}]) for i in range(requests))
    for done, (_, reply) in enumerate(chat_iter(endpoint, conversations, concurrency=concurrency, retries=1), 1):
        failed += reply.text is None
        if done in marks:
            out[marks[done]] = round(rss_mb(), 1)
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (usage.ru_utime - usage0.ru_utime) + (usage.ru_stime - usage0.ru_stime)
    ideal = concurrency / DELAY[0]
    out.update(concurrency=concurrency, requests=requests, failed=failed, wall_s=round(wall, 2),
               req_per_s=round(requests / wall, 1), ideal_req_per_s=round(ideal, 1),
               share_of_ideal=round(requests / wall / ideal, 3), cpu_ms_per_request=round(1000 * cpu / requests, 3),
               peak_rss_mb=round(usage.ru_maxrss / 1024, 1), rss_100=round(rss_mb(), 1))
    return out


DELAY = [0.2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", default="8,32,128")
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--requests", type=int, help="requests per concurrency (default max(2000, 40 x C))")
    parser.add_argument("--stream", action="store_true", help="ask for server-sent events, as generation does")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--client", help=argparse.SUPPRESS)   # URL: run one client here and print its figures
    args = parser.parse_args()
    DELAY[0] = args.delay
    if args.client:
        [c] = [int(x) for x in args.concurrency.split(",")]
        print(json.dumps(client(args.client, c, args.requests, args.stream)))
        return
    server = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fixed_server.py"), "--delay", str(args.delay)],
                              stdout=subprocess.PIPE, text=True)
    rows = []
    try:
        url = server.stdout.readline().strip()
        for c in [int(x) for x in args.concurrency.split(",")]:
            n = args.requests or max(2000, 40 * c)
            done = subprocess.run([sys.executable, __file__, "--client", url, "--concurrency", str(c), "--requests",
                                   str(n), "--delay", str(args.delay)] + (["--stream"] if args.stream else []),
                                  capture_output=True, text=True, check=True)
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            r = rows[-1]
            print(f"C={c:4d}  n={r['requests']:6d}  {r['wall_s']:7.2f} s  {r['req_per_s']:7.1f} req/s  "
                  f"ideal {r['ideal_req_per_s']:6.1f}  share {r['share_of_ideal']:.3f}  "
                  f"cpu {r['cpu_ms_per_request']:.2f} ms/req  peak {r['peak_rss_mb']:.0f} MB  "
                  f"rss 10/50/100% {r.get('rss_10')}/{r.get('rss_50')}/{r['rss_100']} MB  failed {r['failed']}",
                  flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
    meta = {"delay_s": args.delay, "stream": args.stream, "cores": os.cpu_count(), "load_avg": os.getloadavg()}
    print(f"(delay {args.delay} s, stream {args.stream}, {os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
