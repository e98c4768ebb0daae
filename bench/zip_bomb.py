"""Benchmark: peak memory and time to refusal of `import responses` on two zip bombs.

    python bench/zip_bomb.py [--keep DIR] [--only one-member|many-rows]

Builds, in a temporary folder (never committed), a store with dataset `d`, track `c/s` and one item, and two
archives whose one member `c_s.csv` is named after that track:

- one-member: a ~2 MB zip holding one 2 GiB member of repeated bytes (no newline);
- many-rows: a ~15 KB zip of 4 million short CSV rows (`x,y`; the issue's was 41 KB of slightly longer rows);
- under-limit (only with --only under-limit; it unpacks 900 MiB to the temp folder): a ~0.9 MB zip of one
  900 MiB member without a newline, under the 1 GiB archive limit, so it is unpacked as a stream and refused
  by the line limit.

Each is imported with `python -m evalcore import responses BOMB.zip --db store --dataset d --model m` in a
child process run under /usr/bin/time -v; prints its exit code, wall time, peak resident memory (the child's
"Maximum resident set size") and the first line of its message, one JSON line per bomb.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_store(tmp: Path) -> Path:
    db, items = tmp / "store.duckdb", tmp / "items.jsonl"
    db.unlink(missing_ok=True)
    items.write_text(json.dumps({"item_id": "x", "dataset": "d", "track": "c/s", "context": ["hi"],
                                 "references": ["hello"]}) + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "evalcore", "import", "items", str(items), "--db", str(db)],
                   cwd=ROOT, check=True, capture_output=True)
    return db


def one_member(path: Path, size: int = 2 << 30) -> None:
    block = b"a" * (1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        with z.open("c_s.csv", "w", force_zip64=True) as out:
            for _ in range(size // len(block)):
                out.write(block)


def many_rows(path: Path, rows: int = 4_000_000) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        with z.open("c_s.csv", "w", force_zip64=True) as out:
            out.write(b"item_id,response\n")
            chunk = b"x,y\n" * 100_000
            for _ in range(rows // 100_000):
                out.write(chunk)


def measure(db: Path, bomb: Path) -> dict:
    start = time.perf_counter()
    run = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "evalcore", "import", "responses", str(bomb),
                          "--db", str(db), "--dataset", "d", "--model", "m"], cwd=ROOT, capture_output=True, text=True)
    took = time.perf_counter() - start
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr)
    message = [line for line in (run.stdout + run.stderr).splitlines()
               if line.strip() and "\t" not in line and "Command being timed" not in line]
    return {"bomb": bomb.name, "zip_kb": round(bomb.stat().st_size / 1024, 1), "exit": run.returncode,
            "seconds": round(took, 1), "peak_rss_mb": round(int(peak.group(1)) / 1024, 1) if peak else None,
            "message": message[:3]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep")
    ap.add_argument("--only", choices=["one-member", "many-rows", "under-limit"])
    args = ap.parse_args()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="evalcore-bomb-"))
    tmp.mkdir(parents=True, exist_ok=True)
    under = lambda path: one_member(path, 900 << 20)  # noqa: E731
    for name, build in (("one-member", one_member), ("many-rows", many_rows), ("under-limit", under)):
        if args.only != name and (args.only or name == "under-limit"):
            continue
        bomb = tmp / f"{name}.zip"
        if not bomb.exists():
            build(bomb)
        db = build_store(tmp)
        print(json.dumps(measure(db, bomb), ensure_ascii=False), flush=True)
    if not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
