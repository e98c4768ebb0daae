"""Benchmark: annotation under load, and how quickly the Annotate page draws the next unit after a click.

    python bench/annotate.py [--annotators 10] [--seconds 120] [--clicks 20] [--skip-browser]

1. Concurrency. A store built with `evalcore init`, a task of 3,000 demo-zh responses (Info and Coh, K = 2).
   N simulated annotators, one thread each on the process's one DuckDB instance (as the dashboard's
   sessions share it), take the next unit and rate it, again and again, for --seconds; each keeps its own
   log of the answers it was told were stored. Then: lost = logged answers missing from the store (or with
   another value); duplicated = units with more than K annotators, or an annotator with two ratings of one
   unit and dimension among the answers that count.
2. Click to next unit (Chromium). `python app.py` on that store; an annotator's session in headless Chromium
   rates units; timed from the click on the last dimension until the next unit's caption is drawn. In the
   same loop, a bare Streamlit app whose segmented control reruns it and draws a new caption: the ratio of
   the medians is the Annotate page's cost over Streamlit's own rerun. A third app draws the Annotate page's
   layout with no store behind it: what the page's size alone costs.

Since issue 64 a task has a language (a demo-zh task is zh-CN by default) and every page of the dashboard has a
language switch (a segmented control) beside its title: both tasks here are made in English (lang="en"; the clicks
and the caption read the English page), and the Annotate page's rating controls are found without the switch (GROUPS).
The bare and layout apps have no switch. The measurement is unchanged.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
# The dashboard page's segmented controls and pills, the language switch beside its title left out (it is a segmented
# control too): the same selector as tests/support/browser.py's GROUPS.
GROUPS = '[data-testid="stElementContainer"]:not([class*="st-key-lang-switch-"]) > [data-testid="stButtonGroup"]'
# The text of the caption that names the unit on screen ("Unit 12"), or null.
CAPTION = """() => { for (const el of document.querySelectorAll('[data-testid="stCaptionContainer"]'))
  if (/^Unit \\d+$/.test(el.innerText.trim())) return el.innerText.trim(); return null; }"""
# The Annotate page's layout (a fragment with eight turns, the response, two rating controls, buttons,
# expanders) with no store behind it: what Streamlit and the browser cost for a page of that size.
LAYOUT = '''import streamlit as st
st.title("Annotate")
n = st.session_state.get("n", 0)
st.text("Demo task: absolute, Info, Coh")
@st.fragment
def panel():
    n = st.session_state.get("n", 0)
    st.progress(0.3, text=f"{n} rated by you; 10 units in the task")
    with st.expander("Guidelines"):
        st.text("guidelines " * 20)
    st.caption(f"Unit {n}")
    for i in range(8):
        with st.chat_message("user" if i % 2 else "assistant"):
            st.text(f"第{i}句 知道《眼泪》这首歌吗？ {n}")
    with st.expander("Grounding: knowledge"):
        st.text("a | b | c")
    with st.container(border=True):
        st.caption("Response")
        st.text("有些了解，是台湾小有名气的一位女歌手与音乐制作人。")
    for d in ("Info", "Coh"):
        st.text(f"{d} (0 to 2)")
        st.caption("丰富度 " * 30)
        def bump(d=d):
            if d == "Coh":
                st.session_state["n"] = n + 1
        st.segmented_control(d, [0.0, 1.0, 2.0], format_func=lambda v: f"{v:g}", key=f"{d}{n}", on_change=bump,
                             label_visibility="collapsed")
    c1, c2, c3 = st.columns(3)
    c1.button("Skip this unit", key=f"s{n}"); c2.button("Back", key=f"b{n}")
    with st.expander("Flag a problem with this unit"):
        st.text_area("What is wrong", key=f"f{n}")
panel()
'''
BARE = '''import streamlit as st
st.title("bare")
n = st.session_state.get("n", 0)
st.caption(f"Unit {n}")
def bump():
    st.session_state["n"] = n + 1
st.segmented_control("x", [0, 1, 2], key=f"x{n}", on_change=bump, label_visibility="collapsed")
'''


def concurrency(db: Path, annotators: int, seconds: float) -> dict:
    from evalcore.services.tasks import create_task
    from evalcore.store import connect
    from evalcore.store import tasks as stored

    con = connect(db)
    task = stored.get(con, create_task(con, lang="en", dataset="demo-zh", mode="absolute", dimensions=["Info", "Coh"],
                                       items=3000, per_item=2, seed=7, name="bench"))
    logs: dict[str, list[tuple[int, str, float]]] = {}
    errors: list[str] = []
    stop = time.monotonic() + seconds

    def annotate(name: str) -> None:
        cur = con.cursor()
        rng = random.Random(name)
        log = logs.setdefault(name, [])
        try:
            while time.monotonic() < stop:
                unit = stored.next_unit(cur, task, name)
                if unit is None:
                    return
                for dim in ("Info", "Coh"):
                    value = float(rng.randint(0, 2))
                    stored.answer(cur, task, unit, name, dim, value)
                    log.append((unit, dim, value))
        except Exception as exc:   # counted, not hidden
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
        finally:
            cur.close()

    threads = [threading.Thread(target=annotate, args=(f"sim-{i}",)) for i in range(annotators)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - start
    latest = stored.latest(con, task.task_id)
    got = {(r.annotator, r.unit, r.dimension): r.value for r in latest.itertuples()}
    logged = {(name, u, d): v for name, log in logs.items() for u, d, v in log}
    lost = sum(1 for k, v in logged.items() if got.get(k) != v)
    over_k = int((latest.groupby("unit")["annotator"].nunique() > task.per_item).sum())
    twice = int(latest.duplicated(["annotator", "unit", "dimension"]).sum())
    ratings = con.execute("SELECT count(*) FROM human_ratings WHERE origin = ?", [task.origin]).fetchall()[0][0]
    con.close()
    return {"annotators": annotators, "seconds": round(took, 1), "answers": sum(len(v) for v in logs.values()),
            "answers_per_s": round(sum(len(v) for v in logs.values()) / took, 1), "lost": lost,
            "units_over_K": over_k, "duplicated": twice, "human_ratings_rows": ratings,
            "distinct_answers": len(logged), "errors": errors[:5]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(args: list[str], env: dict, cwd: Path, log: Path | None = None) -> tuple[subprocess.Popen, str]:
    """`python ARGS` as a Streamlit server on a free port, once it answers its health check: (process, base URL)."""
    port = free_port()
    out = open(log, "a") if log else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, *args, "--server.port", str(port), "--server.headless", "true",
                             "--browser.gatherUsageStats", "false"], cwd=cwd, env=env,
                            stdout=out, stderr=subprocess.STDOUT if log else subprocess.DEVNULL)
    if healthy(f"http://localhost:{port}"):
        return proc, f"http://localhost:{port}"
    proc.kill()
    raise SystemExit("a server did not start")


def healthy(base: str, tries: int = 240) -> bool:
    """Whether the Streamlit server at `base` answers its health check within `tries` half-seconds."""
    for _ in range(tries):
        try:
            urllib.request.urlopen(f"{base}/_stcore/health", timeout=1)
            return True
        except OSError:
            time.sleep(0.5)
    return False


def _idle(page) -> None:
    page.wait_for_timeout(50)
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden", timeout=60_000)


def english(page) -> None:
    """On a page drawn in Chinese (a zh-CN task's Annotate or Chat page), a click on the switch's "English": a person's
    pick overrides the task's language for the rest of this session (a new page.goto is a new session). A page drawn
    in English is left as it is (a click on the selected option would deselect it)."""
    page.locator('[class*="st-key-lang-switch-"]').first.wait_for(timeout=60_000)
    zh = page.locator('[class*="st-key-lang-switch-zh-CN"]')
    if zh.count():
        zh.get_by_role("radio", name="English", exact=True).click()
        page.locator('[class*="st-key-lang-switch-en"]').first.wait_for(timeout=60_000)
        _idle(page)


def clicks(db: Path, n: int) -> dict:
    from playwright.sync_api import sync_playwright

    from evalcore.services.tasks import create_task
    from evalcore.store import connect
    from evalcore.store import tasks as stored

    con = connect(db)
    task = stored.get(con, create_task(con, lang="en", dataset="demo-zh", mode="absolute", dimensions=["Info", "Coh"],
                                       items=200, per_item=1, seed=11, name="bench-clicks"))
    con.close()
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-bare-"))
    (tmp / "bare.py").write_text(BARE, encoding="utf-8")
    (tmp / "layout.py").write_text(LAYOUT, encoding="utf-8")
    app, app_url = serve(["app.py"], {**os.environ, "EVALCORE_DB": str(db)}, ROOT)
    bare, bare_url = serve(["-m", "streamlit", "run", str(tmp / "bare.py")], dict(os.environ), tmp)
    layout, layout_url = serve(["-m", "streamlit", "run", str(tmp / "layout.py")], dict(os.environ), tmp)
    ours, theirs, shaped = [], [], []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.goto(f"{app_url}/annotate?task={task.task_id}")
            page.get_by_label("Your name").fill("bench")
            page.get_by_label("Access code").fill(task.access_code)
            page.get_by_role("button", name="Start rating").click()
            page.get_by_role("button", name="I have kept my key: start rating").click(timeout=60_000)   # first entry
            _idle(page)
            mock = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            mock.goto(layout_url)
            mock.wait_for_function(f"({CAPTION})() !== null", timeout=60_000)
            other = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            other.goto(bare_url)
            other.get_by_text("Unit 0").wait_for(timeout=60_000)
            for _ in range(n):
                old = page.evaluate(CAPTION)
                groups = page.locator(GROUPS)   # Info, Coh (the language switch left out)
                groups.nth(0).locator("button").nth(1).click()
                _idle(page)
                start = time.perf_counter()
                groups.nth(1).locator("button").nth(2).click()
                page.wait_for_function(f"old => ({CAPTION})() !== old && ({CAPTION})() !== null", arg=old)
                ours.append(time.perf_counter() - start)
                _idle(page)
                old = other.evaluate(CAPTION)
                start = time.perf_counter()
                other.locator('[data-testid="stButtonGroup"]').locator("button").nth(1).click()
                other.wait_for_function(f"old => ({CAPTION})() !== old && ({CAPTION})() !== null", arg=old)
                theirs.append(time.perf_counter() - start)
                _idle(other)
                old = mock.evaluate(CAPTION)
                mock.locator('[data-testid="stButtonGroup"]').nth(0).locator("button").nth(1).click()
                _idle(mock)
                start = time.perf_counter()
                mock.locator('[data-testid="stButtonGroup"]').nth(1).locator("button").nth(1).click()
                mock.wait_for_function(f"old => ({CAPTION})() !== old && ({CAPTION})() !== null", arg=old)
                shaped.append(time.perf_counter() - start)
                _idle(mock)
            browser.close()
    finally:
        for proc in (app, bare, layout):
            proc.terminate()
            proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    med_ours, med_bare = statistics.median(ours), statistics.median(theirs)
    med_shaped = statistics.median(shaped)
    return {"clicks": n, "annotate_median_s": round(med_ours, 3), "bare_median_s": round(med_bare, 3),
            "ratio": round(med_ours / med_bare, 2), "annotate_max_s": round(max(ours), 3),
            "same_layout_no_store_median_s": round(med_shaped, 3), "layout_ratio": round(med_shaped / med_bare, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--annotators", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--clicks", type=int, default=20)
    parser.add_argument("--skip-browser", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-annotate-"))
    db = tmp / "store.duckdb"
    subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", str(db)], cwd=ROOT, check=True,
                   capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    print("concurrency:", concurrency(db, args.annotators, args.seconds), flush=True)
    if not args.skip_browser:
        print("click to next unit:", clicks(db, args.clicks), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
