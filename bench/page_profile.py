"""Benchmark: where a page's server-side run spends its CPU, in CPU seconds and call counts (steady under other load,
unlike wall time).

    python bench/page_profile.py --db STORE --page leaderboard [--runs 5] [--query k=v,...] [--top 25] [--count NAME,...]

The page runs headless through Streamlit's AppTest, as the tests run it (tests/support/apptest.py): run 1 is the
page's first run in this process (its imports, the store's opening, its caches empty), runs 2.. are warm (a new
AppTest each, so a new session, as a fresh browser tab; the process's caches kept). Each run's script thread is
profiled by cProfile; printed: each run's CPU seconds (the script thread's time.thread_time), the hottest functions
by cumulative time of the first and of the last warm run, and the call counts of the functions --count names
(regular expressions on "file:line(function)").
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COUNT = [r"core/frame.py:\d+\(__getitem__\)", r"arrow/array.py:\d+\(__getitem__\)", r"marks.py:\d+\(stamp\)",
         r"shared.py:\d+\(lease\)", r"locks.py:\d+\(someone_waits\)", r"hashing.py:\d+\(_to_bytes\)"]


def profiled_run(page: str, query: dict, profile: bool = True) -> tuple[float, cProfile.Profile]:
    from streamlit.runtime.scriptrunner import script_runner
    from streamlit.testing.v1 import AppTest

    prof, cpu = cProfile.Profile(), [0.0]
    original = script_runner.ScriptRunner._run_script_thread

    def thread(self):
        start = time.thread_time()
        if profile:
            prof.enable()
        try:
            original(self)
        finally:
            if profile:
                prof.disable()
            cpu[0] += time.thread_time() - start

    script_runner.ScriptRunner._run_script_thread = thread
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        if page != "overview":
            at.switch_page(f"pages/views/{page}.py")
        for key, value in query.items():
            at.query_params[key] = value
        at.run()
        if at.exception:
            raise SystemExit(f"{page}: {[e.value for e in at.exception]}")
    finally:
        script_runner.ScriptRunner._run_script_thread = original
    return cpu[0], prof


def counts(prof: cProfile.Profile, patterns: list[str]) -> dict[str, int]:
    """Calls of the functions whose "file:line(function)" matches each regular expression."""
    stats = pstats.Stats(prof).stats
    return {p: sum(v[1] for (file, line, fn), v in stats.items() if re.search(p, f"{file}:{line}({fn})"))
            for p in patterns}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True)
    ap.add_argument("--page", default="leaderboard")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--query", default="", help="URL parameters, k=v,k=v")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--no-profile", action="store_true", help="CPU seconds only, without cProfile's overhead")
    ap.add_argument("--count", action="append", default=None,
                    help="a regular expression on file:line(function) whose calls to count (repeatable)")
    args = ap.parse_args()
    os.environ["EVALCORE_DB"] = str(Path(args.db).resolve())
    query = dict(kv.split("=", 1) for kv in args.query.split(",") if kv)
    names = args.count or COUNT
    runs = []
    for i in range(args.runs):
        cpu, prof = profiled_run(args.page, query, not args.no_profile)
        runs.append((cpu, prof))
        print(f"run {i + 1}: {cpu:.3f} CPU-s" + ("" if args.no_profile else "  " + "  ".join(
            f"{k}={v}" for k, v in counts(prof, names).items())), flush=True)
    warm = sorted(c for c, _ in runs[1:])
    if warm:
        print(f"{args.page}: first run {runs[0][0]:.3f} CPU-s; warm median {warm[len(warm) // 2]:.3f} CPU-s")
    for label, (_, prof) in (() if args.no_profile else (("first run", runs[0]), ("last warm run", runs[-1]))):
        print(f"\n== {label}: top {args.top} by cumulative time")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
