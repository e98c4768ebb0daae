"""Benchmark: a store of 10,000,000 responses, imported, scored and served.

    python bench/scale.py [--msde ../shared/data/msde] [--responses 10000000] [--tracks 20] [--models 10]
                          [--rated-items 1000] [--keep DIR] [--skip-pages] [--served]

Texts are real and repeated with perturbation: items cycle through the 4,000 CPC items of the MSDE
release (context and reference kept), spread over --tracks tracks of the five skills; each of
--models models answers every item with a real response (the CPC models' answers and references)
drawn at random, and half of the answers get one character replaced at a random place, so most
(response, reference) pairs are new. The first --rated-items items of each track are rated by one
annotator on Info and Coh (0-2, drawn at random): people rate a sample, not ten million answers.

Files are written first (not timed); then each step runs as the user runs it, one command in a fresh
process, with its wall time and peak resident memory (ru_maxrss of that process):
1. `evalcore import items` (one JSONL), `import responses` (one CSV per track), `import ratings`;
2. `evalcore score --metrics lexical` (the 10 lexical metrics, every track);
3. the store's size on disk, and what takes it (`evalcore storage`);
4. every page's server-side run (Streamlit AppTest, as bench/dashboard.py): 'cold' the first run in a
   fresh process, 'warm' the median of the next ones (--pages-only --keep DIR: again on a kept store);
5. with --served, each page's first view as a lab sees it: `python app.py` started on the store, one page
   loaded first (the server's own imports), then each page twice over Streamlit's protocol (bench/protocol.py),
   timed from the rerun request to script_finished.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SKILLS = ("chitchat", "knowledge", "recommendation", "persona", "task-oriented")
MODELS = ("baichuan", "chatglm", "llama", "qianwen")
DATASET = "scale"


def write_files(msde: Path, out: Path, responses: int, n_tracks: int, n_models: int, rated: int, seed: int = 0):
    """The dataset's items, one responses CSV per track and a ratings CSV; the track names."""
    from evalcore.ingest.formats.msde import read_workbook

    folder = msde / "data" / "Lic 2021_CPC"
    source = [json.loads(line) for line in (folder / "Lic 2021_CPC.txt").read_text("utf-8").splitlines()]
    pool = [r for m in MODELS for _, r in read_workbook(folder / f"{m}.xlsx").generation] + [s["response"] for s in source]
    pool = [p for p in pool if p]
    alphabet = sorted({ch for text in pool for ch in text})
    rng = np.random.default_rng(seed)
    per_track = responses // (n_tracks * n_models)
    tracks = [f"c{t:02d}/{SKILLS[t % len(SKILLS)]}" for t in range(n_tracks)]
    with open(out / "items.jsonl", "w", encoding="utf-8") as f:
        for t, track in enumerate(tracks):
            for i in range(per_track):
                src = source[(i + t * 37) % len(source)]
                f.write(json.dumps({"item_id": f"{t:02d}-{i:07d}", "dataset": DATASET, "track": track,
                                    "context": src["history"] or [""], "references": [src["response"]],
                                    "language": "zh"}, ensure_ascii=False) + "\n")
    models = [f"model-{k:02d}" for k in range(n_models)]
    for t, track in enumerate(tracks):
        picks = rng.integers(0, len(pool), per_track * n_models)
        edit = rng.random(per_track * n_models) < 0.5
        places = rng.random(per_track * n_models)
        chars = rng.integers(0, len(alphabet), per_track * n_models)
        with open(out / f"responses-{t:02d}.csv", "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f)
            w.writerow(["item_id", "model", "response"])
            for k in range(per_track * n_models):
                text = pool[picks[k]]
                if edit[k]:
                    at = int(places[k] * len(text))
                    text = text[:at] + alphabet[chars[k]] + text[at + 1:]
                w.writerow([f"{t:02d}-{k % per_track:07d}", models[k // per_track], text])
    for t in range(n_tracks):
        with open(out / f"ratings-{t:02d}.csv", "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f)
            w.writerow(["item_id", "model", "annotator", "dimension", "score"])
            for i in range(min(rated, per_track)):
                for m in models:
                    for d in ("Info", "Coh"):
                        w.writerow([f"{t:02d}-{i:07d}", m, "a1", d, int(rng.choice(3, p=(0.3, 0.4, 0.3)))])
    return tracks, per_track * n_tracks * n_models


def child(args: list[str]) -> None:
    """Run one evalcore command in this process; print its peak memory last."""
    from evalcore.cli import main

    rc = main(args)
    # the largest child process's peak too (a scoring run's forked helpers, EVALCORE_SCORING_PROCESSES)
    print(f"PEAK_MB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} "
          f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f}")
    sys.exit(rc or 0)


def step(label: str, args: list[str], log: list) -> tuple[float, float]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, cwd=ROOT)
    took = time.perf_counter() - start
    if out.returncode:
        raise SystemExit(f"{label} failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    peak, helper = (float(x) for x in out.stdout.strip().splitlines()[-1].split()[1:3])
    print(f"{label:40s} {took:8.1f} s   peak {peak:7.0f} MB" + (f" (its largest child process {helper:.0f} MB, "
          "pages they share counted in both)" if helper else ""), flush=True)
    log.append((label, took, peak))
    return took, peak


def pages(db: str, track: str, runs: int) -> None:
    """Every page's server-side run, cold (first run in a fresh process) and warm, on the first track."""
    at = {"dataset": DATASET, "track": track}
    views = [("overview", {"dataset": DATASET}), ("trust", {"dataset": DATASET, "level": "system"}),
             ("leaderboard", at),
             ("correlations", {**at, "method": "spearman", "level": "system", "origin": "computed"}),
             ("drilldown", at),   # its first view: the responses to the items a person rated
             ("drilldown", {**at, "rated": "0"}),   # every response of the track
             ("human", at), ("ensemble", at), ("compare", at), ("judges", at), ("tasks", {}),
             ("upload", {"dataset": DATASET})]
    for page, query in views:
        print(f"{page} {query}", flush=True)
        code = (f"import sys, resource; sys.path.insert(0, {str(ROOT)!r}); from bench.dashboard import time_page; "
                f"time_page({db!r}, {page!r}, {runs}, {query!r}); "
                "print(f'  peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB')")
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def served(db: str, track: str) -> None:
    """Each page's first view and the next on one running server (its imports paid by a first load)."""
    import asyncio

    from bench.protocol import load, serve_app

    at = f"dataset={DATASET}&track={quote(track, safe='')}"
    views = [("", f"dataset={DATASET}"), ("leaderboard", at), ("trust", f"dataset={DATASET}&level=system"),
             ("correlations", f"{at}&method=spearman&level=system&origin=computed"), ("drilldown", at),
             ("drilldown", f"{at}&rated=0"), ("human", at), ("ensemble", at), ("compare", at), ("judges", at)]
    proc, base = serve_app(Path(db), False, Path(tempfile.mkdtemp(prefix="evalcore-scale-")) / "streamlit.log")

    async def run() -> None:
        seconds, error = await load(base, "tasks", "")
        print(f"served: the server's first load (tasks) {seconds:.2f} s {error or ''}", flush=True)
        for page, query in views:
            first, again = await load(base, page, query, timeout=300), await load(base, page, query, timeout=300)
            print(f"{page or 'overview':13s} {query[len(at) if query.startswith(at) else 0:]:45s} "
                  f"first {first[0]:6.2f} s  again {again[0]:5.2f} s {first[1] or again[1] or ''}", flush=True)

    try:
        asyncio.run(run())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def storage(db: str) -> None:
    """What takes the space in the store's file (evalcore storage)."""
    out = subprocess.run([sys.executable, "-m", "evalcore", "storage", "--db", db], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    print(out.stdout, flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--msde", default=str(ROOT.parent / "shared" / "data" / "msde"))
    ap.add_argument("--responses", type=int, default=10_000_000)
    ap.add_argument("--tracks", type=int, default=20)
    ap.add_argument("--models", type=int, default=10)
    ap.add_argument("--rated-items", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=6, help="page runs: the first is cold")
    ap.add_argument("--keep", help="build in this folder and keep it (default: a temporary folder)")
    ap.add_argument("--skip-pages", action="store_true")
    ap.add_argument("--pages-only", action="store_true", help="time the pages of the store built in --keep DIR")
    ap.add_argument("--served", action="store_true", help="also time each page's first view on a running server")
    args = ap.parse_args()
    if args.pages_only:
        db = str(Path(args.keep) / "scale.duckdb")
        storage(db)
        pages(db, "c00/chitchat", args.runs)
        if args.served:
            served(db, "c00/chitchat")
        return
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="evalcore-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    tracks, n = write_files(Path(args.msde), folder, args.responses, args.tracks, args.models, args.rated_items)
    print(f"{n:,} responses in {len(tracks)} tracks x {args.models} models; files written in "
          f"{time.perf_counter() - start:.0f} s (not timed) in {folder}", flush=True)
    db = str(folder / "scale.duckdb")
    log: list = []
    step("import items", ["import", "items", str(folder / "items.jsonl"), "--db", db], log)
    for t, track in enumerate(tracks):
        step(f"import responses {track}", ["import", "responses", str(folder / f"responses-{t:02d}.csv"), "--db", db,
                                           "--dataset", DATASET, "--track", track], log)
    for t, track in enumerate(tracks):
        step(f"import ratings {track}", ["import", "ratings", str(folder / f"ratings-{t:02d}.csv"), "--db", db,
                                         "--dataset", DATASET, "--track", track, "--scale", "Info=0:2",
                                         "--scale", "Coh=0:2"], log)
    imported = [x for x in log if x[0].startswith("import")]
    print(f"import total: {sum(x[1] for x in imported):.0f} s, peak {max(x[2] for x in imported):.0f} MB", flush=True)
    step("score --metrics lexical (all tracks)", ["score", "--db", db, "--dataset", DATASET, "--metrics", "lexical"], log)
    size = sum(p.stat().st_size for p in folder.glob("scale.duckdb*"))
    print(f"store on disk: {size / 1e9:.2f} GB", flush=True)
    storage(db)
    if not args.skip_pages:
        pages(db, tracks[0], args.runs)
    if args.served:
        served(db, tracks[0])
    if not args.keep:
        for p in folder.iterdir():
            p.unlink()
        os.rmdir(folder)


if __name__ == "__main__":
    main()
