"""Benchmark: how long each dashboard page takes to draw in a real browser (headless Chromium).

    python bench/browser.py [--db PATH] [--runs 5] [--pages a,b,c] [--port P] [--cold] [--fresh] [--check-empty] [--out F]
                            [--width 1400] [--baseline] [--floor] [--screenshots DIR] [--locale en-US]

Without --db, builds a store with `python -m evalcore init` (timed: "store build"). Starts
`python app.py` (streamlit run) on that store and waits for /_stcore/health. Pages are the url_path="..."
values in app.py (url_path "" is the overview, URL "/"); --pages keeps only the named ones. A name may
carry a query, e.g. --pages overview,annotate?task=1 (loads /annotate?task=1; reported as "annotate?task=1").

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

--locale TAG sets the browser's language (navigator.language; default en-US): zh-CN draws every page in Chinese, as a
person whose browser is set to Chinese sees it; the bare app and the floor are drawn in the same browser.
--width W sets the browser viewport's width (default 1400; height 1000, or 900 when --width is given).
--baseline also starts bench/bare_app.py (a title and one 10x3 st.dataframe) with `streamlit run` on
another free port, loads it in every round right after the pages (same fresh context, same "drawn"
rule; its first visit too), and prints per page its median, the bare app's median and their ratio:
the project's rule is that pages are measured as a ratio to a bare Streamlit app in the same loop.
With --baseline the timed visits go round by round (every page once, then the bare app, then again)
instead of page by page, so that load on the machine hits pages and baseline alike.
--floor (with --baseline): also each page's floor, bench/floor_app.py: the same navigation and the same elements
with their data, recorded from the page's first run on the same store (AppTest) and sent back as they are, with
none of the dashboard's work; timed in the same rounds as "floor NAME". The table then splits each page's ratio to
the bare app in two: floor / bare (Streamlit and the browser drawing those elements, whoever computes them) and
page / floor (the dashboard's own work: the store, the computing, building the elements).
--screenshots DIR: after the timed loads, one PNG per page (and the bare app) into DIR, taken in a
fresh context at the viewport width once the page has drawn and its script has finished (at most
15 s more) plus 2 s; the viewport is then made as tall as Streamlit's scrolling pane, so the PNG
shows the whole page (at most 8000 px).
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

    def command(self) -> list[str]:
        return [sys.executable, "app.py"]

    def start(self) -> None:
        out = open(self.log, "a")
        self.proc = subprocess.Popen(
            [*self.command(), "--server.port", str(self.port),
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
        sys.exit(f"{' '.join(self.command()[1:])} did not start; its log ends:\n{self.log.read_text(errors='replace')[-3000:]}")

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


VIEWPORT = {"width": 1400, "height": 1000}
LOCALE = {"locale": "en-US"}   # the browser's language (--locale): the dashboard draws its pages in it


class BareServer(Server):
    """bench/bare_app.py under `streamlit run` (the --baseline reference)."""

    def command(self) -> list[str]:
        return [sys.executable, "-m", "streamlit", "run", str(ROOT / "bench" / "bare_app.py")]


class FloorServer(Server):
    """bench/floor_app.py under `streamlit run`, serving the recording in `self.db` (--floor)."""

    def command(self) -> list[str]:
        return [sys.executable, "-m", "streamlit", "run", str(ROOT / "bench" / "floor_app.py")]

    def env(self) -> dict[str, str]:
        return {**{k: v for k, v in os.environ.items() if k != "EVALCORE_DB"}, "FLOOR_FILE": self.db}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def screenshot(browser, url: str, path: Path) -> str:
    """A PNG of the whole page at the viewport width; returns what was drawn first."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    context = browser.new_context(viewport=dict(VIEWPORT), **LOCALE)
    page = context.new_page()
    try:
        page.goto(url, wait_until="commit", timeout=TIMEOUT_MS)
        try:
            drawn = page.wait_for_function(DRAWN_JS, arg=DRAWN, timeout=TIMEOUT_MS, polling=50).json_value()
        except PlaywrightTimeout:
            drawn = "timeout"
        dialog = page.get_by_text("Page not found")
        if dialog.count() and dialog.first.is_visible():
            page.keyboard.press("Escape")
        try:
            page.wait_for_function(FINISHED_JS, timeout=15_000)
        except PlaywrightTimeout:
            pass
        page.wait_for_timeout(2000)
        # Streamlit scrolls inside its own pane: make the window as tall as that pane's content.
        height = page.evaluate("""() => Math.max(document.documentElement.scrollHeight,
            ...[...document.querySelectorAll('[data-testid="stMain"], [data-testid="stAppViewContainer"], section.stMain')]
               .map(e => e.scrollHeight))""")
        page.set_viewport_size({"width": VIEWPORT["width"], "height": int(min(max(height, VIEWPORT["height"]), 8000))})
        page.wait_for_timeout(1000)
        page.screenshot(path=str(path), full_page=True)
        return drawn.split('"')[1] if '"' in drawn else drawn
    finally:
        context.close()


def load(browser, url: str, check_empty: bool = False, context=None) -> tuple[float, str, list[str] | None]:
    """One visit in a fresh context, or in a new tab of `context` (a returning visitor: the browser's
    cache is warm): (seconds to drawn or NaN, what was drawn, alert texts or None)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    own = context is None
    context = context or browser.new_context(viewport=dict(VIEWPORT), **LOCALE)
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
        dialog = page.get_by_text("Page not found")  # Streamlit quirk, see tests/system/test_browser.py
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


BARE = "bare app"


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
    parser.add_argument("--width", type=int, help="viewport width in px (default 1400; height 900 when given)")
    parser.add_argument("--baseline", action="store_true",
                        help="also time bench/bare_app.py (streamlit run, another port) in the same loop; "
                             "print each page's median as a ratio to the bare app's")
    parser.add_argument("--floor", action="store_true",
                        help="with --baseline: also time each page's floor (bench/floor_app.py) in the same rounds")
    parser.add_argument("--screenshots", metavar="DIR", help="after the timed loads, a full-page PNG per page here")
    parser.add_argument("--locale", default="en-US",
                        help="the browser's language (default en-US; zh-CN draws the dashboard in Chinese)")
    args = parser.parse_args()
    LOCALE["locale"] = args.locale

    if args.width:
        VIEWPORT.update(width=args.width, height=900)
    pages = discover_pages()
    if args.pages:
        wanted = [p.strip() for p in args.pages.split(",") if p.strip()]
        if unknown := [p for p in wanted if p.split("?")[0] not in pages]:
            sys.exit(f"unknown page(s) {unknown}; app.py has {list(pages)}")
        pages = {p: pages[p.split("?")[0]] + ("?" + p.split("?", 1)[1] if "?" in p else "") for p in wanted}
    if not args.port:
        args.port = free_port()
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-browser-"))
    server = Server(args.db or str(tmp / "store.duckdb"), args.port, tmp / "streamlit.log")
    bare = BareServer(None, free_port(), tmp / "bare.log") if args.baseline else None
    if args.floor and not args.baseline:
        sys.exit("--floor goes with --baseline")
    floor = FloorServer(str(tmp / "floor.pkl"), free_port(), tmp / "floor.log") if args.floor else None
    info = {"nproc": len(os.sched_getaffinity(0)), "streamlit": version("streamlit"),
            "date": datetime.datetime.now().isoformat(" ", "seconds"), "runs": args.runs, "cold": args.cold,
            "viewport": dict(VIEWPORT), "store_build_s": None, "pages": []}
    print(f"machine: nproc {info['nproc']}, Streamlit {info['streamlit']}, {info['date']}"
          + (f", viewport {VIEWPORT['width']}x{VIEWPORT['height']}" if args.width else ""))
    try:
        if not args.db:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", server.db], cwd=ROOT, check=True,
                           capture_output=True)
            info["store_build_s"] = round(time.perf_counter() - start, 2)
            print(f"store build: {info['store_build_s']:.1f} s ({server.db})")
        if floor:   # recorded before the server opens the store (one process at a time may hold it)
            subprocess.run([sys.executable, "bench/floor_app.py", "--record", floor.db, "--db", server.db,
                            "--pages", ",".join(p.split("?")[0] for p in pages)], cwd=ROOT, check=True,
                           capture_output=True)
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
            if bare:
                bare.start()
            if floor:
                floor.start()
            floors = {f"floor {n}": p.split("?")[0] for n, p in pages.items()} if floor else {}
            first = {}
            for name, path in pages.items():
                if args.cold and first:
                    server.stop()
                    server.start()
                first[name] = load(browser, server.base + path)[0]
            if bare:
                first[BARE] = load(browser, bare.base + "/")[0]
            for name, path in floors.items():
                first[name] = load(browser, floor.base + path)[0]
            results = {name: ([], set(), None) for name in pages}
            if bare:
                # Round by round: every page once, then the floors and the bare app, so all see the same machine load.
                results[BARE] = ([], set(), None)
                results |= {name: ([], set(), None) for name in floors}
                visits = ([(n, server.base, p) for n, p in pages.items()] + [(BARE, bare.base, "/")]
                          + [(n, floor.base, p) for n, p in floors.items()])
                for i in range(args.runs):
                    for name, base, path in visits:
                        t, d, a = load(browser, base + path, args.check_empty and i == args.runs - 1 and name in pages)
                        results[name][0].append(t)
                        results[name][1].add(d)
                        if a is not None:
                            results[name] = (*results[name][:2], a)
                    print(f"  round {i + 1}: " + ", ".join(f"{n} {fmt(r[0][-1]).strip()}" for n, r in results.items()),
                          flush=True)
            else:
                for name, path in pages.items():
                    times, drawn, alerts = [], set(), None
                    for i in range(args.runs):
                        t, d, a = load(browser, server.base + path, args.check_empty and i == args.runs - 1)
                        times.append(t)
                        drawn.add(d)
                        alerts = a if a is not None else alerts
                    results[name] = (times, drawn, alerts)
                    print(f"  measured {name}: first {fmt(first[name]).strip()} s, runs {[round(t, 2) for t in times]}",
                          flush=True)
            for name, (times, drawn, alerts) in results.items():
                path = ("/ (bare_app.py)" if name == BARE else f"{floors[name]} (floor_app.py)" if name in floors
                        else pages[name])
                ok = [t for t in times if not math.isnan(t)]
                row = {"page": name, "url": path, "first": first[name], "runs": times,
                       "median": statistics.median(ok) if ok else math.nan, "min": min(ok, default=math.nan),
                       "max": max(ok, default=math.nan), "nan": len(times) - len(ok),
                       "drawn_by": sorted(drawn), "alerts": alerts}
                info["pages"].append(row)
            if args.screenshots:
                out = Path(args.screenshots)
                out.mkdir(parents=True, exist_ok=True)
                shots = [(n, server.base + p) for n, p in pages.items()] + ([(BARE, bare.base + "/")] if bare else [])
                for name, url in shots:
                    stem = name.replace(" ", "_").replace("?", "_").replace("=", "").replace("&", "_").replace("/", "_")
                    file = out / (stem + ".png")
                    drawn = screenshot(browser, url, file)
                    print(f"  screenshot {file} ({drawn})", flush=True)
            browser.close()
    finally:
        server.stop()
        for other in (bare, floor):
            if other:
                other.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    w = max([14] + [len(r["page"]) for r in info["pages"]])
    head = f"{'page':{w}s} {'first':>7s} {'median':>7s} {'min':>7s} {'max':>7s}  {'NaN':>3s}  drawn by"
    print(f"\nseconds to first table/chart/metric; median/min/max of {args.runs} visits; "
          "NaN = timeout (90 s) or nothing drawn")
    print(head + ("  | alerts" if args.check_empty else ""))
    for r in info["pages"]:
        line = (f"{r['page']:{w}s} {fmt(r['first']):>7s} {fmt(r['median']):>7s} {fmt(r['min']):>7s} "
                f"{fmt(r['max']):>7s}  {r['nan']:3d}  {','.join(r['drawn_by']):20s}")
        if args.check_empty:
            line += "  | " + (" / ".join(r["alerts"] or []) or "-")[:80]
        print(line)
    if bare:
        base = next(r["median"] for r in info["pages"] if r["page"] == BARE)
        info["bare_median"] = base
        print(f"\nratio to the bare app (bench/bare_app.py, a title and a 10x3 st.dataframe), timed in the same loop"
              f" at {VIEWPORT['width']}x{VIEWPORT['height']}")
        medians = {r["page"]: r["median"] for r in info["pages"]}

        def ratio(a: float, b: float) -> float:
            return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan

        def show(x: float) -> str:
            return "    NaN" if math.isnan(x) else format(x, "7.2f")

        print(f"{'page':18s} {'median':>7s} {'bare':>7s} {'ratio':>7s}"
              + (f" {'floor':>7s} {'floor/bare':>10s} {'page/floor':>10s}" if floor else ""))
        for r in info["pages"]:
            if r["page"] in pages:
                r["ratio"] = ratio(r["median"], base)
                line = f"{r['page']:18s} {fmt(r['median']):>7s} {fmt(base):>7s} {show(r['ratio'])}"
                if floor:
                    f = medians[f"floor {r['page']}"]
                    r["floor"], r["floor_ratio"], r["over_floor"] = f, ratio(f, base), ratio(r["median"], f)
                    line += f" {fmt(f):>7s} {show(r['floor_ratio']):>10s} {show(r['over_floor']):>10s}"
                print(line)
    if args.out:
        write_out(args.out, info)


def write_out(path: str, info: dict) -> None:
    """The results as JSON (NaN written as null), and a line saying where."""
    clean = json.loads(json.dumps(info), parse_constant=lambda c: None)
    Path(path).write_text(json.dumps(clean, indent=2, ensure_ascii=False))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
