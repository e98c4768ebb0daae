"""Benchmark: what writing every commit to the write-ahead log first costs an import (evalcore.store.NEVER_SKIP_WAL).

    python bench/durable_commit.py [--runs 3] [--keep DIR]

DuckDB's default (auto_checkpoint_skip_wal_threshold = 100 kB) lets a large commit that makes it checkpoint skip the
log and write its rows only through that checkpoint; evalcore holds the threshold out of reach, so the commit is in
the log, fsynced, before the checkpoint (a full disk then loses nothing that was said to be stored: tests/system/test_disk.py).
Each import runs as `python -m evalcore import ...` on a fresh copy of the default store (`evalcore init`), with the
threshold as evalcore sets it and with DuckDB's default, alternately, --runs times each; reported: the median wall
seconds of each, their ratio, and the bytes the store's file grew. The imports (a large vote import and a large ratings import):
55,722 votes and 111,444 ratings on demo-zh (the log holds them whole), 130,000 items (row groups written into the
file before the commit; the log holds pointers to them), and the MSDE release (96,760 responses; skipped when
../shared/data/msde is absent).
"""
from __future__ import annotations

import argparse
import csv
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MSDE = ROOT.parent / "shared" / "data" / "msde"
RUN = ("import sys; import evalcore.store.opening as s; s.NEVER_SKIP_WAL = int(sys.argv[1]); from evalcore.cli import main; "
       "sys.exit(main(sys.argv[2:]))")
DUCKDB_DEFAULT = 100_000


def files(tmp: Path, store: Path) -> dict[str, list[str]]:
    import duckdb

    con = duckdb.connect(str(store), read_only=True)
    items = con.execute("SELECT r.item_id, i.track FROM responses r JOIN items i USING (dataset, item_id) WHERE "
                        "r.dataset = 'demo-zh' GROUP BY ALL HAVING count(*) = 2 ORDER BY 1 LIMIT 9287").fetchall()
    con.close()
    votes, ratings, new = tmp / "votes.csv", tmp / "ratings.csv", tmp / "items.jsonl"
    with open(votes, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["item_id", "model_a", "model_b", "winner", "annotator", "dimension"])
        out.writerows([i, "tfidf-retrieval", "bm25-retrieval", ("a", "b", "tie")[n % 3], who, dim]
                      for n, (i, _) in enumerate(items) for who in ("ann1", "ann2", "ann3") for dim in ("Info", "Coh"))
    with open(ratings, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["item_id", "model", "annotator", "dimension", "score", "track"])
        out.writerows([i, m, who, dim, n % 3, t] for n, (i, t) in enumerate(items)
                      for m in ("tfidf-retrieval", "bm25-retrieval") for who in ("ann1", "ann2", "ann3")
                      for dim in ("Info", "Coh"))
    with open(new, "w", encoding="utf-8") as fh:
        for i in range(130_000):
            fh.write(json.dumps({"item_id": f"n{i:06d}", "dataset": "bulk", "track": "bulk/chitchat",
                                 "context": [f"你好 {i}", f"今天 天气 不错 {i}"], "references": [f"好的 {i}"]},
                                ensure_ascii=False) + "\n")
    cases = {"votes 55,722": ["import", "votes", str(votes), "--dataset", "demo-zh"],
             "ratings 111,444": ["import", "ratings", str(ratings), "--dataset", "demo-zh"],
             "items 130,000": ["import", "items", str(new)]}
    if (MSDE / "data").is_dir():
        cases["msde release"] = ["import", "msde", str(MSDE)]
    return cases


def once(store: Path, work: Path, argv: list[str], threshold: int) -> tuple[float, int]:
    db = work / "store.duckdb"
    for p in work.glob("store.duckdb*"):
        p.unlink()
    shutil.copyfile(store, db)
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", RUN, str(threshold), *argv, "--db", str(db)], cwd=ROOT,
                         capture_output=True, text=True)
    took = time.perf_counter() - start
    if run.returncode:
        sys.exit(f"{argv} failed:\n{run.stderr[-2000:]}")
    return took, db.stat().st_size - store.stat().st_size


def main() -> None:
    from evalcore.store import NEVER_SKIP_WAL

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep")
    args = ap.parse_args()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="evalcore-durable-"))
    tmp.mkdir(parents=True, exist_ok=True)
    store = tmp / "default.duckdb"
    if not store.exists():
        subprocess.run([sys.executable, "-m", "evalcore", "init", "--db", str(store)], cwd=ROOT, check=True,
                       capture_output=True)
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    for name, argv in files(tmp, store).items():
        times: dict[int, list[float]] = {NEVER_SKIP_WAL: [], DUCKDB_DEFAULT: []}
        grew = {}
        for _ in range(args.runs):
            for threshold in times:   # alternately: a busy machine's drift falls on both
                took, grew[threshold] = once(store, work, argv, threshold)
                times[threshold].append(took)
        ours, theirs = statistics.median(times[NEVER_SKIP_WAL]), statistics.median(times[DUCKDB_DEFAULT])
        print(json.dumps({"import": name, "log_first_s": round(ours, 2), "duckdb_default_s": round(theirs, 2),
                          "ratio": round(ours / theirs, 2), "grew_mb": round(grew[NEVER_SKIP_WAL] / 2**20, 1),
                          "grew_mb_default": round(grew[DUCKDB_DEFAULT] / 2**20, 1), "runs": args.runs}), flush=True)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
