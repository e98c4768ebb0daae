"""The judge audit on real human ratings, with the test suite's deterministic judge server standing in for an LLM.

    python bench/judge_audit.py [--out docs/img/screens] [--msde-track lic2021/knowledge]

Data (read from ../shared/data, never shipped): USR-TopicalChat (60 contexts x 6 responses, three annotators
on six dimensions, English) and one track of the MSDE release (Info, Coh, Know; one score per response,
Chinese). The judges (tests/support/judge_server.py): a toy rating judge that scores by the answer's length (G-Eval
0-2 on MSDE, MT-Bench 1-10 on USR), asked under two judge-model names (drift); pairwise against USR's
"Original Ground Truth", one judge that prefers the longer answer and one that always picks the first. People's
pairwise preferences on the same pairs come from their Overall ratings (the higher mean wins; equal means tie).
Prints each audit table, then screenshots the Judge audit page at 1400 and 800 px.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from bench.annotate import ARGS, CHROMIUM, free_port  # noqa: E402
from bench.browser import Server  # noqa: E402
from support.judge_server import JudgeServer  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
USR_SCALES = {"Understandable": (0, 1), "Natural": (1, 3), "Maintains Context": (1, 3), "Engaging": (1, 3),
              "Uses Knowledge": (0, 1), "Overall": (1, 5)}
BASELINE = "Original Ground Truth"


def cli(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "evalcore", *args], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    if out.returncode:
        raise SystemExit(f"evalcore {' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return out.stdout


def usr_files(tmp: Path) -> tuple[Path, Path]:
    """USR-TopicalChat in the DSTC10 shape, and people's votes against the ground truth derived from Overall."""
    raw = json.loads((SHARED / "usr" / "tc_usr_data.json").read_text(encoding="utf-8"))
    entries, votes = [], []
    for n, dialogue in enumerate(raw):
        truth = [r for r in dialogue["responses"] if r["model"] == BASELINE][0]
        for r in dialogue["responses"]:
            entries.append({"dialogue_id": f"tc-{n:03d}", "model": r["model"], "context": dialogue["context"],
                            "response": r["response"], "reference": [truth["response"]],
                            "annotations": {dim: r[dim] for dim in USR_SCALES}})
            if r["model"] != BASELINE:
                mine, theirs = sum(r["Overall"]) / 3, sum(truth["Overall"]) / 3
                votes.append({"item_id": f"tc-{n:03d}", "model_a": BASELINE, "model_b": r["model"],
                              "winner": "a" if theirs > mine else "b" if mine > theirs else "tie",
                              "annotator": "usr-overall-mean", "dimension": "overall"})
    path = tmp / "usr.json"
    path.write_text(json.dumps(entries, ensure_ascii=False), encoding="utf-8")
    pd.DataFrame(votes).to_csv(tmp / "votes.csv", index=False)
    return path, tmp / "votes.csv"


def judge(srv: JudgeServer, db: Path, dataset: str, metrics: str, model: str, track: str | None = None) -> float:
    start = time.perf_counter()
    cli("score", "--db", str(db), "--dataset", dataset, *(["--track", track] if track else []), "--metrics", metrics,
        "--judge-base-url", srv.url, "--judge-model", model, "--judge-baseline", BASELINE,
        "--judge-concurrency", "16", "--judge-retries", "1")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "img" / "screens"))
    parser.add_argument("--msde-track", default="lic2021/knowledge")
    args = parser.parse_args()
    if not (SHARED / "usr").exists() or not (SHARED / "msde").exists():
        raise SystemExit(f"needs ../shared/data/usr and ../shared/data/msde beside the project ({SHARED})")
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-judges-"))
    db = tmp / "store.duckdb"
    usr, votes = usr_files(tmp)
    cli("import", "dstc10", str(usr), "--db", str(db), "--dataset", "usr", "--track", "usr-topicalchat/knowledge",
        "--language", "en", *[a for k, (lo, hi) in USR_SCALES.items() for a in ("--scale", f"{k}={lo}:{hi}")])
    cli("import", "votes", str(votes), "--db", str(db), "--dataset", "usr")
    cli("import", "msde", str(SHARED / "msde"), "--db", str(db))
    took = {}
    with JudgeServer(rate="length") as srv:
        took["usr MT-Bench (toy-length)"] = judge(srv, db, "usr", "Judge-MTBench", "toy-length")
        took["usr MT-Bench (toy-length-b)"] = judge(srv, db, "usr", "Judge-MTBench", "toy-length-b")
        took[f"msde {args.msde_track} G-Eval x3"] = judge(srv, db, "msde", "Judge-Info,Judge-Coh,Judge-Know",
                                                         "toy-length", args.msde_track)
    with JudgeServer(prefer="longer") as srv:
        took["usr pairwise (toy-longer)"] = judge(srv, db, "usr", "Judge-Pairwise", "toy-longer")
    with JudgeServer(prefer="first") as srv:
        took["usr pairwise (toy-first)"] = judge(srv, db, "usr", "Judge-Pairwise", "toy-first")
    for step, seconds in took.items():
        print(f"scored {step}: {seconds:.1f} s")
    for dataset, part in (("usr", "headline"), ("msde", "headline"), ("usr", "pairwise"), ("usr", "length-controlled"),
                          ("usr", "drift")):
        start = time.perf_counter()
        table = cli("judge-audit", "--db", str(db), "--dataset", dataset, "--part", part, "--bootstrap", "200",
                    "--format", "csv")
        print(f"\n== judge-audit --dataset {dataset} --part {part} ({time.perf_counter() - start:.1f} s)\n{table}")
    shots(db, Path(args.out), tmp)


def shots(db: Path, out: Path, tmp: Path) -> None:
    from playwright.sync_api import sync_playwright

    server = Server(str(db), free_port(), tmp / "server.log")
    server.start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for width, dataset in ((1400, "usr"), (800, "usr"), (1400, "msde")):
                page = browser.new_context(viewport={"width": width, "height": 2400}).new_page()
                start = time.perf_counter()
                page.goto(f"{server.base}/judges?dataset={dataset}")
                page.wait_for_function("document.querySelector('[data-testid=\"stApp\"]')?.dataset.testScriptState "
                                       "=== 'notRunning'", timeout=120_000)
                page.wait_for_timeout(1500)
                path = out / f"6-judge-audit-{dataset}-{width}px.png"
                page.screenshot(path=str(path))
                print(f"{path} (drawn in {time.perf_counter() - start:.1f} s)")
            browser.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
