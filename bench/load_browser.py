"""Benchmark, browser variant (`python bench/load.py --browser ...`): the dashboard under N Chromium viewers
while the CLI writes to the same store. On a two-core machine the viewers' own Chromium spends ~4 CPU-s per
load and measures mostly itself: the server's capacity is bench/load.py's protocol-level users.

    python bench/load.py --browser [--viewers 1,5,10] [--loads 3] [--responses 16000] [--out F]

Builds the default store (`python -m evalcore init`) plus a dataset `load` of --responses items,
starts `python app.py` on it, then per N: N headless Chromium viewers (one process each) load
/leaderboard and /correlations --loads times each, timed to the first table or chart as
bench/browser.py does (each viewer is one browser profile whose cache is kept between its loads, as
a person's browser keeps it; --fresh: a new empty context per load) while, from the moment the
viewers start, the CLI
imports --responses responses of a new model into `load` and scores them (`import responses`,
then `score`), on the same store. Reported per N: median and p95 time to content, loads that
drew nothing or failed ("errors"), the CLI's time, whether a viewer sees the new model on the
leaderboard afterwards (no restart), and the server's resident memory before and after.
The CLI's time alone (no viewers) is measured first.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser import ARGS, CHROMIUM, ROOT, Server, load  # noqa: E402
from load import cli, load_dataset, responses_file  # noqa: E402

PAGES = ["/leaderboard", "/correlations"]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def viewer(base: str, loads: int, fresh: bool, out) -> None:
    """One person's browser: each load opens the page by URL in a new tab of the same profile (its
    cache kept, as a lab member's browser keeps it), or with `fresh` in a new empty context."""
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = None if fresh else browser.new_context(viewport={"width": 1400, "height": 1000})
        for _ in range(loads):
            for path in PAGES:
                try:
                    seconds, drawn, _ = load(browser, base + path, context=context)
                except Exception as exc:  # a failed load counts as an error, not a crash of the bench
                    seconds, drawn = math.nan, f"error: {type(exc).__name__}"
                times.append((path, seconds, drawn))
        browser.close()
    out.put(times)


def sees_model(base: str, model: str) -> bool:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        page.goto(f"{base}/leaderboard?dataset=load&track=load/chitchat")
        try:
            page.get_by_text(model).first.wait_for(timeout=60_000)
            return True
        except Exception:
            return False
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench/load.py --browser")
    ap.add_argument("--viewers", default="1,5,10")
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--responses", type=int, default=16_000)
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--fresh", action="store_true",
                    help="every load in a new empty browser context (nothing cached: a first visit each time)")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-load-"))
    db = str(tmp / "store.duckdb")
    subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", db], cwd=ROOT, check=True, capture_output=True)
    load_dataset(db, tmp, args.responses)

    def responses(model: str) -> Path:
        return responses_file(tmp, model, args.responses)

    alone, _ = cli(db, responses("alone"), "alone")
    print(f"CLI import + score of {args.responses:,} responses, no dashboard: {alone:.1f} s", flush=True)
    server = Server(db, args.port, tmp / "streamlit.log")
    server.start()
    rows = []
    try:
        for n in [int(x) for x in args.viewers.split(",")]:
            before = rss_mb(server.proc.pid)
            model = f"load-n{n}"
            csv = responses(model)
            queue: mp.Queue = mp.Queue()
            procs = [mp.Process(target=viewer, args=(server.base, args.loads, args.fresh, queue)) for _ in range(n)]
            for p in procs:
                p.start()
            took, waited = cli(db, csv, model)
            times = [t for _ in procs for t in queue.get()]
            for p in procs:
                p.join()
            seen = sees_model(server.base, model)
            after = rss_mb(server.proc.pid)
            ok = sorted(s for _, s, _ in times if not math.isnan(s))
            errors = len(times) - len(ok)
            p95 = ok[min(len(ok) - 1, math.ceil(0.95 * len(ok)) - 1)] if ok else math.nan
            row = {"viewers": n, "loads": len(times), "median_s": statistics.median(ok) if ok else math.nan,
                   "p95_s": p95, "max_s": ok[-1] if ok else math.nan, "errors": errors, "cli_s": took,
                   "cli_alone_s": alone, "cli_waited": "waiting for" in waited, "new_model_seen": seen,
                   "rss_before_mb": before, "rss_after_mb": after}
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        server.stop()
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
