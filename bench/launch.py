"""Benchmark: a cold start in wall time, from launching the server to the first page drawn in headless Chromium.

    python bench/launch.py [--runs 5] [--out F]

bench/startup.py measures a cold start in CPU seconds of imports; this measures what a person waits. First (not
timed) it builds a store with `python -m evalcore init --db TMP/store.duckdb` and launches Chromium once. Then, in
--runs alternating rounds (the dashboard, then the bare app, then the dashboard, ...), so that a change in the
machine's load falls on both:

  dashboard  `python app.py --server.port P --server.headless true --browser.gatherUsageStats false` with
             EVALCORE_DB set to that store; page "/" (the Overview)
  bare app   `python -m streamlit run bench/bare_app.py` with the same options (a title and one 10x3
             st.dataframe, what bench/browser.py --baseline compares pages against); page "/"

What is timed, per round: the timer starts just before the server's Popen (a new port each round).
  healthy  /_stcore/health polled every 50 ms until it answers 200 (bench/browser.py's Server.start polls
           every 0.5 s, too coarse here)
  drawn    then a NEW browser context (empty cache, new Streamlit session) is opened, inside the timed window,
           and the page loaded with bench/browser.py's load(): stopped when the first table, chart or metric is
           visible in the main area (its DRAWN rule, polled every 50 ms). A page that draws nothing within 90 s, or
           whose script finishes with nothing of the kind drawn, is NaN. Both figures are seconds since the launch.
The server is then stopped (terminate, wait, kill after 20 s) before the next round starts.

The dashboard's first page run includes its page imports (app.py's page half and the overview: bench/startup.py's
`page` case), which the bare app does not have; "drawn" counts them, "healthy" does not. Printed: each round, the
medians of both figures over the rounds, the ratio dashboard / bare app of each median, and the load average
(os.getloadavg()) before and after the rounds: wall time moves with the machine's load, so quote it beside them.
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# load() applies browser.py's DRAWN_JS to its DRAWN selectors: the same "drawn" as every other page timing
from bench.browser import ARGS, CHROMIUM, DRAWN, VIEWPORT, free_port, load, write_out  # noqa: E402

POLL_S = 0.05
HEALTHY_WITHIN_S = 120
DASHBOARD, BARE = "dashboard", "bare app"


def command(name: str, port: int) -> list[str]:
    script = ["app.py"] if name == DASHBOARD else ["-m", "streamlit", "run", str(ROOT / "bench" / "bare_app.py")]
    return [sys.executable, *script, "--server.port", str(port),
            "--server.headless", "true", "--browser.gatherUsageStats", "false"]


def env_for(name: str, db: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "EVALCORE_DB"}
    if name == DASHBOARD:
        env["EVALCORE_DB"] = db
    return env


class Stamped:
    """A browser context handed to load(): it notes the moment its new tab is open, which is when load() starts
    its own timer (just before page.goto), so launch-to-drawn = (that moment - launch) + load()'s seconds, with
    the context's and the tab's opening counted and nothing after the page was drawn."""

    def __init__(self, context):
        self.context, self.opened = context, math.nan

    def new_page(self):
        page = self.context.new_page()
        self.opened = time.perf_counter()
        return page


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()   # this server's pid only
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def one_round(browser, name: str, db: str, log: Path) -> tuple[float, float, str]:
    """(seconds to healthy, seconds to drawn, what was drawn) for one launch of `name`."""
    port = free_port()
    base = f"http://localhost:{port}"
    with open(log, "a") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(command(name, port), cwd=ROOT, env=env_for(name, db), stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        healthy = math.nan
        while time.perf_counter() - start < HEALTHY_WITHIN_S and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=1) as r:
                    if r.status == 200:
                        healthy = time.perf_counter() - start
                        break
            except OSError:
                pass
            time.sleep(POLL_S)
        if math.isnan(healthy):
            raise SystemExit(f"{name} did not answer /_stcore/health within {HEALTHY_WITHIN_S} s (exit code "
                             f"{proc.poll()}); its log ends:\n{log.read_text(errors='replace')[-3000:]}")
        context = Stamped(browser.new_context(viewport=dict(VIEWPORT)))
        try:
            seconds, drawn, _ = load(browser, base + "/", context=context)
        finally:
            context.context.close()
        return healthy, context.opened - start + seconds, drawn
    finally:
        stop(proc)


def median(xs: list[float]) -> float:
    ok = [x for x in xs if not math.isnan(x)]
    return statistics.median(ok) if ok else math.nan


def ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def fmt(x: float, spec: str = "6.2f") -> str:
    return format("NaN", ">" + spec.split(".")[0]) if math.isnan(x) else format(x, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="rounds; each launches the dashboard, then the bare app")
    parser.add_argument("--out", help="also write the results as JSON here")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="evalcore-launch-"))
    db = str(tmp / "store.duckdb")
    info = {"nproc": len(os.sched_getaffinity(0)), "streamlit": version("streamlit"),
            "date": datetime.datetime.now().isoformat(" ", "seconds"), "runs": args.runs,
            "viewport": dict(VIEWPORT), "poll_s": POLL_S, "drawn_rule": DRAWN, "rounds": []}
    print(f"machine: nproc {info['nproc']}, Streamlit {info['streamlit']}, {info['date']}")
    try:
        subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", db], cwd=ROOT, check=True,
                       capture_output=True)
        print(f"store built (not timed): {db}")
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)   # once, not timed
            info["loadavg_before"] = [round(x, 2) for x in os.getloadavg()]
            print(f"load average before: {' '.join(f'{x:.2f}' for x in info['loadavg_before'])}")
            print(f"{'round':>5s}  {'server':10s} {'healthy':>8s} {'drawn':>8s}  drawn by")
            for i in range(args.runs):
                for name in (DASHBOARD, BARE):
                    healthy, drawn, by = one_round(browser, name, db, tmp / f"{name.replace(' ', '_')}.log")
                    info["rounds"].append({"round": i + 1, "server": name, "healthy_s": healthy,
                                           "drawn_s": drawn, "drawn_by": by})
                    print(f"{i + 1:5d}  {name:10s} {fmt(healthy, '8.2f')} {fmt(drawn, '8.2f')}  {by}", flush=True)
            info["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
            browser.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"load average after:  {' '.join(f'{x:.2f}' for x in info['loadavg_after'])}")
    med = {(name, what): median([r[what] for r in info["rounds"] if r["server"] == name])
           for name in (DASHBOARD, BARE) for what in ("healthy_s", "drawn_s")}
    nan = {name: sum(math.isnan(r["drawn_s"]) for r in info["rounds"] if r["server"] == name)
           for name in (DASHBOARD, BARE)}
    info["median"] = {name: {what: med[name, what] for what in ("healthy_s", "drawn_s")} for name in (DASHBOARD, BARE)}
    info["ratio"] = {what: ratio(med[DASHBOARD, what], med[BARE, what]) for what in ("healthy_s", "drawn_s")}
    print(f"\nseconds since launch, median of {args.runs} rounds (NaN: nothing drawn within 90 s)")
    print(f"{'server':10s} {'healthy':>8s} {'drawn':>8s}  NaN")
    for name in (DASHBOARD, BARE):
        print(f"{name:10s} {fmt(med[name, 'healthy_s'], '8.2f')} {fmt(med[name, 'drawn_s'], '8.2f')}  {nan[name]:3d}")
    print(f"{'ratio':10s} {fmt(info['ratio']['healthy_s'], '7.2f')}x {fmt(info['ratio']['drawn_s'], '7.2f')}x"
          "  (dashboard / bare app, of the medians)")
    print("note: the dashboard's first page run includes its page imports (app.py's page half and the overview, "
          "bench/startup.py's `page` case); its 'drawn' counts them, its 'healthy' does not")
    if args.out:
        write_out(args.out, info)


if __name__ == "__main__":
    main()
