"""Benchmark: how long each dashboard page takes to draw in a real browser (headless Chromium).

    python bench/browser.py [--db PATH] [--runs 5] [--pages a,b,c] [--port P] [--cold] [--fresh] [--check-empty] [--out F]

Without --db, builds a store with `python -m evalcore init` (timed: "store build"). Starts
`python app.py` (streamlit run) on that store and waits for /_stcore/health. Pages are the url_path="..."
values in app.py (url_path "" is the overview, URL "/"); --pages keeps only the named ones.

What is timed, per load: a NEW browser context (empty cache, new Streamlit session), timer started
just before page.goto(url), stopped when the first "main content" element is visible inside the
main area ([data-testid="stMain"]): a Vega-Lite chart (its canvas or SVG) or a Plotly chart with its
SVG drawn, a dataframe grid's canvas, a static table (stTable) or a metric (stMetric). The script need not have
finished: this is time to the first table/chart/metric, not to a complete page. A load that draws
nothing within 90 s is a timeout ("timeout"), recorded as NaN; so is a page whose script has
finished and whose main area then stays unchanged for 10 s with nothing of the kind on it ("none").

  first   the first visit of each page, in order, right after the server came up (Python caches
          cold; with --cold the server is restarted before each page, so every page starts cold)
  median/min/max  over the --runs later visits (server warm, browser cold)

A "Page not found" dialog (which `streamlit run` shows on a first deep link; `python app.py` does not) is closed,
never counted as drawn. --check-empty also records the text of every stAlert on the page (after the
last timed load has drawn and the script has finished, at most 15 s more) to spot pages that open empty.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 90_000
DRAWN = ['[data-testid="stVegaLiteChart"] canvas', '[data-testid="stVegaLiteChart"] svg',
         '[data-testid="stPlotlyChart"] .main-svg', '[data-testid="stDataFrame"] canvas',
         '[data-testid="stTable"] table', '[data-testid="stMetric"]']
# The first DRAWN selector with a visible element in the main area; 'none' once the script has
# finished (stApp's data-test-script-state) and the main area has not changed for 10 s (charts and
# grids are mounted lazily, after the script ends); else false.
DRAWN_JS = """(sels) => {
  const main = document.querySelector('[data-testid="stMain"], section.stMain');
  if (!main) return false;
  for (const s of sels) for (const el of main.querySelectorAll(s)) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden') return s;
  }
  const app = document.querySelector('[data-testid="stApp"]'), n = main.getElementsByTagName('*').length;
  if (app?.dataset.testScriptState !== 'notRunning' || n !== window.__n) {
    [window.__n, window.__since] = [n, performance.now()];
    return false;
  }
  return performance.now() - window.__since > 10000 ? 'none' : false;
}"""
FINISHED_JS = "() => document.querySelector('[data-testid=\"stApp\"]')?.dataset.testScriptState === 'notRunning'"

def discover_pages() -> dict[str, str]:
    """{name: url path} from the dashboard's page list (pages.PAGES); "" is the overview."""
    from pages import PAGES

    return {p.url_path or "overview": "/" + p.url_path for p in PAGES}


class Server:
    def __init__(self, db: str | None, port: int, log: Path, xdg: Path | None = None):
        """db None: no EVALCORE_DB, so the dashboard builds its default store under `xdg` on first visit."""
        self.db, self.port, self.log, self.proc, self.xdg = db, port, log, None, xdg
        self.base = f"http://localhost:{port}"

    def start(self) -> None:
        out = open(self.log, "a")
        self.proc = subprocess.Popen(
            [sys.executable, "app.py", "--server.port", str(self.port),
             "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=self.env(), stdout=out, stderr=subprocess.STDOUT)
        out.close()
        for _ in range(240):
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.base}/_stcore/health", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        sys.exit(f"streamlit did not start; its log ends:\n{self.log.read_text(errors='replace')[-3000:]}")

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "EVALCORE_DB"}
        if self.db:
            env["EVALCORE_DB"] = self.db
        if self.xdg:
            env["XDG_DATA_HOME"] = str(self.xdg)
        return env

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def load(browser, url: str, check_empty: bool = False, context=None) -> tuple[float, str, list[str] | None]:
    """One visit in a fresh context, or in a new tab of `context` (a returning visitor: the browser's
    cache is warm): (seconds to drawn or NaN, what was drawn, alert texts or None)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    own = context is None
    context = context or browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        start = time.perf_counter()
        page.goto(url, wait_until="commit", timeout=TIMEOUT_MS)
        try:
            left = max(1, TIMEOUT_MS - (time.perf_counter() - start) * 1000)
            # Polled every 50 ms, not every animation frame: the check forces a layout, and with many
            # tabs on two cores checking 60 times a second slowed what it measures.
            drawn = page.wait_for_function(DRAWN_JS, arg=DRAWN, timeout=left, polling=50).json_value()
            seconds = math.nan if drawn == "none" else time.perf_counter() - start
        except PlaywrightTimeout:
            drawn, seconds = "timeout", math.nan
        dialog = page.get_by_text("Page not found")  # Streamlit quirk, see tests/test_browser.py
        if dialog.count() and dialog.first.is_visible():
            page.keyboard.press("Escape")
        alerts = None
        if check_empty:
            try:  # let the script finish, at most 15 s more
                page.wait_for_function(FINISHED_JS, timeout=15_000)
            except PlaywrightTimeout:
                pass
            alerts = [" ".join(t.split()) for t in page.locator('[data-testid="stAlert"]').all_inner_texts()]
        return seconds, drawn.split('"')[1] if '"' in drawn else drawn, alerts
    finally:
        (context if own else page).close()


def fmt(x: float) -> str:
    return "   NaN" if math.isnan(x) else f"{x:6.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", help="an existing store (default: build one with `evalcore init`)")
    parser.add_argument("--runs", type=int, default=5, help="timed visits per page after the first")
    parser.add_argument("--pages", help="comma-separated page names (overview = url_path \"\")")
    parser.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    parser.add_argument("--cold", action="store_true", help="restart the server before each page's first visit")
    parser.add_argument("--check-empty", action="store_true", help="record the stAlert texts of each page")
    parser.add_argument("--fresh", action="store_true",
                        help="first measure a fresh machine: no store yet, the dashboard builds its default store "
                             "on the first visit of / (reported as 'fresh first visit')")
    parser.add_argument("--out", help="also write the results as JSON here")
    args = parser.parse_args()

    pages = discover_pages()
    if args.pages:
        wanted = [p.strip() for p in args.pages.split(",") if p.strip()]
        if unknown := [p for p in wanted if p not in pages]:
            sys.exit(f"unknown page(s) {unknown}; app.py has {list(pages)}")
        pages = {p: pages[p] for p in wanted}
    if not args.port:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            args.port = s.getsockname()[1]
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-browser-"))
    server = Server(args.db or str(tmp / "store.duckdb"), args.port, tmp / "streamlit.log")
    info = {"nproc": len(os.sched_getaffinity(0)), "streamlit": version("streamlit"),
            "date": datetime.datetime.now().isoformat(" ", "seconds"), "runs": args.runs, "cold": args.cold,
            "store_build_s": None, "pages": []}
    print(f"machine: nproc {info['nproc']}, Streamlit {info['streamlit']}, {info['date']}")
    try:
        if not args.db:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", server.db], cwd=ROOT, check=True,
                           capture_output=True)
            info["store_build_s"] = round(time.perf_counter() - start, 2)
            print(f"store build: {info['store_build_s']:.1f} s ({server.db})")
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            if args.fresh:
                fresh = Server(None, args.port, tmp / "fresh.log", xdg=tmp / "xdg")
                fresh.start()
                try:
                    info["fresh_first_visit_s"] = load(browser, fresh.base + "/")[0]
                finally:
                    fresh.stop()
                print(f"fresh first visit of / (store built by the dashboard): {info['fresh_first_visit_s']:.2f} s")
            server.start()
            first = {}
            for name, path in pages.items():
                if args.cold and first:
                    server.stop()
                    server.start()
                first[name] = load(browser, server.base + path)[0]
            for name, path in pages.items():
                times, drawn, alerts = [], set(), None
                for i in range(args.runs):
                    t, d, a = load(browser, server.base + path, args.check_empty and i == args.runs - 1)
                    times.append(t)
                    drawn.add(d)
                    alerts = a if a is not None else alerts
                ok = [t for t in times if not math.isnan(t)]
                row = {"page": name, "url": path, "first": first[name], "runs": times,
                       "median": statistics.median(ok) if ok else math.nan, "min": min(ok, default=math.nan),
                       "max": max(ok, default=math.nan), "nan": len(times) - len(ok),
                       "drawn_by": sorted(drawn), "alerts": alerts}
                info["pages"].append(row)
                print(f"  measured {name}: first {fmt(row['first']).strip()} s, runs {[round(t, 2) for t in times]}",
                      flush=True)
            browser.close()
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    head = f"{'page':14s} {'first':>7s} {'median':>7s} {'min':>7s} {'max':>7s}  {'NaN':>3s}  drawn by"
    print(f"\nseconds to first table/chart/metric; median/min/max of {args.runs} visits; "
          "NaN = timeout (90 s) or nothing drawn")
    print(head + ("  | alerts" if args.check_empty else ""))
    for r in info["pages"]:
        line = (f"{r['page']:14s} {fmt(r['first']):>7s} {fmt(r['median']):>7s} {fmt(r['min']):>7s} "
                f"{fmt(r['max']):>7s}  {r['nan']:3d}  {','.join(r['drawn_by']):20s}")
        if args.check_empty:
            line += "  | " + (" / ".join(r["alerts"] or []) or "-")[:80]
        print(line)
    if args.out:
        clean = json.loads(json.dumps(info), parse_constant=lambda c: None)  # NaN -> null
        Path(args.out).write_text(json.dumps(clean, indent=2, ensure_ascii=False))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
