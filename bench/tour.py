"""The quick tour's screenshots (docs/guide/tour.md, README), taken in Chromium at 1400 px.

    python bench/tour.py [--out docs/img/tour]

A fresh store (`evalcore init`); a model's responses to demo-zh's lccc/chitchat made from the track's own
template (the references reversed, a stand-in for a real model's file), imported and scored with the tour's
commands; then `python app.py` on that store and, in headless Chromium: the Upload page on that track, the
Leaderboard with the new model, Metric trust and Correlations as they open, and the "Link to this view" box.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.annotate import ARGS, CHROMIUM, free_port  # noqa: E402
from bench.browser import Server  # noqa: E402
from bench.screenshots import Shots  # noqa: E402

TRACK = "lccc/chitchat"


def evalcore(*args: str, cwd: Path) -> None:
    subprocess.run([sys.executable, "-m", "evalcore", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})


def upload_a_model(tmp: Path) -> Path:
    """The tour's first job from the command line: template, a filled file, import, score."""
    db = tmp / "lab.duckdb"
    evalcore("init", "--db", str(db), cwd=tmp)
    evalcore("template", "--db", str(db), "--dataset", "demo-zh", "--track", TRACK, "--out", "my-model.csv", cwd=tmp)
    filled = pd.read_csv(tmp / "my-model.csv")
    filled["response"] = filled["reference"].astype(str).str[::-1]
    filled.to_csv(tmp / "my-model.csv", index=False)
    evalcore("import", "responses", "--db", str(db), "--dataset", "demo-zh", "--track", TRACK, "--model", "my-model",
             "my-model.csv", cwd=tmp)
    evalcore("score", "--db", str(db), "--dataset", "demo-zh", "--track", TRACK, "--metrics", "lexical", cwd=tmp)
    return db


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "img" / "tour"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-tour-"))
    db = upload_a_model(tmp)
    server = Server(str(db), free_port(), tmp / "server.log")
    server.start()
    shot = Shots(out, settle_ms=1500)

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            track = TRACK.replace("/", "%2F")
            page.goto(f"{server.base}/upload?dataset=demo-zh&track={track}")
            shot(page, "1-upload")
            page.goto(f"{server.base}/leaderboard?dataset=demo-zh&track={track}")
            shot(page, "2-leaderboard")
            page.goto(f"{server.base}/trust")
            shot(page, "3-metric-trust")
            page.goto(f"{server.base}/correlations")
            shot(page, "4-correlations")
            page.goto(f"{server.base}/leaderboard?dataset=demo-zh&track={track}")
            page.get_by_text("Link to this view").click()
            shot(page, "5-link")
            browser.close()
    finally:
        server.stop()
    for path in shot.wrote:
        print(path)


if __name__ == "__main__":
    main()
