"""The docs' screenshots of a crowd study on the Rating tasks page (docs/guide/crowd.md, section 4), in Chromium.

    python bench/crowd_screenshots.py [--out docs/img/screens]

A fresh store (`evalcore init`), a rating task on demo-zh made in English and opened to Prolific (6 units per
worker, 2 of them gold, 1.20 GBP), two nonsense gold units and a comprehension question; six workers with made-up
Prolific identifiers enter and rate their share through the services: the fifth fails the comprehension question
twice, the sixth is careless (fast, the same answer everywhere, gold units wrong); both are excluded by the pass rule
when they finish, and the lab excludes the third by hand. Then `python app.py` on that store, and the Rating tasks
page of that task, scrolled to its crowd study, at 1400 and 800 px (the server allows writing, as a lab's own
does: the codes and the exclusion controls are shown). Every file is a PNG under --out; the script prints what it
wrote.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.annotate import ARGS, CHROMIUM, free_port  # noqa: E402
from bench.browser import Server  # noqa: E402
from bench.screenshots import Shots  # noqa: E402

WORKERS, FAILS_QUESTION, CARELESS, BY_HAND = 6, 4, 5, 2   # the lab excludes the third by hand


def study(db: Path) -> int:
    """The study and its workers, as the docstring says; the task's id."""
    from evalcore.services import crowd
    from evalcore.services import tasks as service
    from evalcore.store import connect
    from evalcore.store import crowd as crowd_store
    from evalcore.store import tasks as stored

    con = connect(db)
    task_id = service.create_task(con, dataset="demo-zh", mode="absolute", dimensions=["Info", "Coh"], items=24,
                                  per_item=3, lang="en", name="Crowd pilot: Info and Coh")
    opened = crowd.open_study(con, task_id, platform="prolific", completion_code="C1A2B3", failed_code="F9E8D7",
                              units=6, gold=2, pay=1.2, currency="GBP")
    crowd.make_gold(con, task_id, why="nonsense", dimension="Coh", low=0, count=2)
    crowd_store.add_question(con, task_id, "What do you rate?", ["Grammar only", "The reply in its context"], 1)
    task = stored.get(con, task_id)
    golds = crowd_store.gold(con, task_id).set_index(["unit", "dimension"])
    start = datetime.now().replace(microsecond=0) - timedelta(hours=1)
    names = {}
    for n in range(WORKERS):
        ids = crowd.Ids(f"6a{n:022x}", "65f0c0ffee", f"sess{n}")
        worker = crowd.enter(con, opened, ids, client=f"10.0.0.{n}|Firefox", now=start)
        names[n] = worker.annotator
        if n == FAILS_QUESTION:
            crowd.check(con, opened, worker.worker, [0])
            crowd.check(con, opened, worker.worker, [0])
            crowd.finish(con, opened, worker.worker, now=start)
            continue
        crowd.check(con, opened, worker.worker, [1])
        now, k = start, 0
        while (unit := crowd.next_unit(con, opened, task, worker.annotator, now=now)) is not None:
            now += timedelta(seconds=2 if n == CARELESS else 240 + 20 * n)   # careful: time to read any unit
            for d in task.dimensions:
                if n == CARELESS:
                    value = d.max
                elif (unit, d.dimension) in golds.index:
                    value = golds.loc[(unit, d.dimension), "low"]
                else:
                    value = float((unit + k + len(d.dimension)) % 3)
                stored.answer(con, task, unit, worker.annotator, d.dimension, value, now=now)
            k += 1
        crowd.finish(con, opened, worker.worker, now=now)
    crowd.exclude(con, task_id, names[BY_HAND], reason="answers unrelated to the text", by="lab")
    con.close()
    return task_id


def shoot(make_study, page_name: str, prefix: str) -> None:
    """A fresh store with the study `make_study(db)` makes (its task id), the page `page_name` on that task in Chromium
    at 1400 and 800 px, scrolled to its crowd part: docs/img/screens/<prefix>-<width>px.png (or --out)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "img" / "screens"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"evalcore-{prefix}-shots-"))
    db = tmp / "store.duckdb"
    subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", str(db)], cwd=ROOT, check=True,
                   capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    task_id = make_study(db)
    server = Server(str(db), free_port(), tmp / "server.log")
    server.start()
    shot = Shots(out, settle_ms=1500)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for width, height in ((1400, 1300), (800, 1500)):
                page = browser.new_context(viewport={"width": width, "height": height}, locale="en-US").new_page()
                page.goto(f"{server.base}/{page_name}?task={task_id}")
                heading = page.get_by_role("heading", name="Crowd study")
                heading.wait_for(timeout=120_000)
                page.wait_for_function("document.querySelector('[data-testid=\"stApp\"]')?.dataset.testScriptState "
                                       "=== 'notRunning'", timeout=60_000)
                page.wait_for_timeout(1500)   # the tables above drawn: the heading stays where it is scrolled to
                heading.evaluate("e => e.scrollIntoView({block: 'start'})")
                shot(page, f"{prefix}-{width}px")
            browser.close()
    finally:
        server.stop()
    for path in shot.wrote:
        print(path)


def main() -> None:
    shoot(study, "tasks", "crowd-tasks")


if __name__ == "__main__":
    main()
