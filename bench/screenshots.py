"""The docs' screenshots of a human evaluation, from creating a task to the trust view, taken in Chromium.

    python bench/screenshots.py [--out docs/img/screens]

A fresh store (`evalcore init`: the embedded data and its demo task, ten demo-zh responses rated on Info and
Coh by K = 2 annotators). Two simulated annotators (seeded scores near a model's quality) rate through the
store's own calls: one every unit, one six. Then `python app.py` on that store, and in headless Chromium:
the Rating tasks page with its create form (1400 px), an annotator signing in and rating the units left to
her on the Annotate page (800 px, as on a laptop's half screen), the task's live results, a side-by-side
task's unit, and Metric trust on demo-zh with the task's ratings as the human scores. Every file is a PNG
under --out; the script prints what it wrote.

The pages are in English (issue 64 made them bilingual): the browser is set to en-US (the Rating tasks and Metric trust
pages follow it), the side-by-side task is made in English (lang="en"), and on the demo task (zh-CN, drawn in Chinese
whatever the browser says) the annotator first clicks "English" on the language switch beside the title. Her rating
clicks find the rating controls without that switch (a segmented control too).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.annotate import ARGS, CHROMIUM, GROUPS, english, free_port  # noqa: E402
from bench.browser import Server  # noqa: E402


class Shots:
    """Window PNGs under `out`, each taken once the page's script has finished and its charts had `settle_ms` to draw
    (Streamlit scrolls inside its own pane: a tall window shows a whole page)."""

    def __init__(self, out: Path, settle_ms: int):
        self.out, self.settle_ms, self.wrote = out, settle_ms, []

    def __call__(self, page, name: str) -> None:
        page.wait_for_function("document.querySelector('[data-testid=\"stApp\"]')?.dataset.testScriptState "
                               "=== 'notRunning'", timeout=60_000)
        page.wait_for_timeout(self.settle_ms)
        path = self.out / f"{name}.png"
        page.screenshot(path=str(path))
        self.wrote.append(str(path))


def simulated(db: Path) -> tuple[int, str]:
    """The demo task rated by two simulated annotators; a pairwise task created. (pairwise id, demo's code)"""
    from evalcore.services.tasks import create_task
    from evalcore.store import connect
    from evalcore.store import tasks as stored

    con = connect(db)
    task = stored.get(con, 1)
    rng = np.random.default_rng(0)
    units = stored.units(con, task.task_id).set_index("unit")
    quality = {m: q for q, m in enumerate(sorted(units["model_a"].unique()))}
    for who, rounds in (("ann", 10), ("bo", 6)):
        for _ in range(rounds):
            unit = stored.next_unit(con, task, who)
            base = quality[units.loc[unit, "model_a"]] % 3
            for dim in ("Info", "Coh"):
                value = float(np.clip(base + rng.integers(-1, 2) * (rng.random() < 0.3), 0, 2))
                stored.answer(con, task, unit, who, dim, value)
    pair = create_task(con, lang="en", dataset="demo-zh", mode="pairwise", dimensions=["Info", "Coh"], items=6, per_item=2,
                       seed=1, name="Side by side: Info and Coh")
    code = task.access_code
    con.close()
    return pair, code


def sign_in(page, url: str, name: str, code: str, shown: str) -> None:
    """An annotator opens a task's link, gives a name and the access code, and waits for the unit (`shown`)."""
    page.goto(url)
    english(page)   # the demo task is zh-CN: the person's pick of English overrides it (a no-op on an English page)
    page.get_by_label("Your name").fill(name)
    page.get_by_label("Access code").fill(code)
    page.get_by_role("button", name="Start rating").click()
    # a first entry: the personal key is shown once; the annotator keeps it and starts
    page.get_by_role("button", name="I have kept my key: start rating").click(timeout=60_000)
    page.get_by_text(shown, exact=True).wait_for(timeout=60_000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "img" / "screens"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-shots-"))
    db = tmp / "store.duckdb"
    subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", str(db)], cwd=ROOT, check=True,
                   capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    pair, code = simulated(db)
    from evalcore.store import connect
    from evalcore.store import tasks as stored

    con = connect(db)
    pair_code = stored.get(con, pair).access_code
    con.close()
    server = Server(str(db), free_port(), tmp / "server.log")
    server.start()
    shot = Shots(out, settle_ms=1200)

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            wide = browser.new_context(viewport={"width": 1400, "height": 1900}, locale="en-US").new_page()
            wide.goto(f"{server.base}/tasks?task=1")
            wide.get_by_text("Create a task").click()
            shot(wide, "1-rating-tasks-create")

            narrow = browser.new_context(viewport={"width": 800, "height": 1000}, locale="en-US").new_page()
            sign_in(narrow, f"{server.base}/annotate?task=1", "cy", code, "Response")
            shot(narrow, "2-annotate-800px")
            narrow.get_by_role("button", name="Skip this unit").scroll_into_view_if_needed()
            shot(narrow, "2b-annotate-800px-rating")
            for _ in range(4):   # the units left to her: Info and Coh each, one click
                groups = narrow.locator(GROUPS)   # Info, Coh (the language switch left out)
                if not groups.count():
                    break
                groups.nth(0).locator("button").nth(1).click()
                narrow.wait_for_timeout(600)
                groups.nth(1).locator("button").nth(2).click()
                narrow.wait_for_timeout(1200)

            wide.goto(f"{server.base}/tasks?task=1")
            shot(wide, "3-task-results")

            side = browser.new_context(viewport={"width": 1400, "height": 1900}, locale="en-US").new_page()
            sign_in(side, f"{server.base}/annotate?task={pair}", "ann", pair_code, "Left response")
            shot(side, "4-side-by-side")

            wide.goto(f"{server.base}/trust?dataset=demo-zh")
            shot(wide, "5-metric-trust")
            browser.close()
    finally:
        server.stop()
    for path in shot.wrote:
        print(path)


if __name__ == "__main__":
    main()
