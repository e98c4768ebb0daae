"""Benchmark: peak memory of `import responses` against the size of the file.

    python bench/import_memory.py [--mb 300] [--items 16000] [--keep DIR]

Builds an empty store with --items items (dataset `mem`), writes a responses CSV of about --mb
megabytes (item_id, model, response; responses of real-looking Chinese text, many models), then
runs `python -m evalcore import responses` on it in a child process and reports its peak resident
memory (ru_maxrss of the child), the file's size, their ratio and the wall time.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS = "今天 天气 不错 我们 一起 去 公园 散步 吧 你 喜欢 看 电影 吗 这部 电影 的 导演 很 有名".split()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=300)
    ap.add_argument("--items", type=int, default=16_000)
    ap.add_argument("--keep")
    args = ap.parse_args()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="evalcore-mem-"))
    tmp.mkdir(parents=True, exist_ok=True)
    db, items, csv = tmp / "store.duckdb", tmp / "items.jsonl", tmp / "responses.csv"
    db.unlink(missing_ok=True)
    items.write_text("".join(json.dumps({"item_id": f"m-{i:06d}", "dataset": "mem", "track": "mem/chitchat",
                                         "context": ["你 好"], "references": ["好 的"]}, ensure_ascii=False) + "\n"
                             for i in range(args.items)), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "evalcore", "import", "items", str(items), "--db", str(db)],
                   cwd=ROOT, check=True, capture_output=True)
    target, size, model = args.mb * 1e6, 0, 0
    with csv.open("w", encoding="utf-8") as out:
        out.write("item_id,model,response\n")
        while size < target:
            for i in range(args.items):
                text = " ".join(WORDS[(i * 7 + k * 3 + model) % len(WORDS)] for k in range(120))
                line = f"m-{i:06d},model-{model:03d},{text}\n"
                out.write(line)
                size += len(line.encode("utf-8"))
            model += 1
    rows = model * args.items
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "evalcore", "import", "responses", str(csv), "--db", str(db),
                          "--dataset", "mem", "--track", "mem/chitchat"], cwd=ROOT, capture_output=True, text=True)
    took = time.perf_counter() - start
    if run.returncode:
        sys.exit(f"import failed:\n{run.stdout}\n{run.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB -> MiB, largest child
    mb = csv.stat().st_size / 2**20
    print(json.dumps({"file_mb": round(mb, 1), "rows": rows, "peak_rss_mb": round(peak, 1),
                      "peak_over_file": round(peak / mb, 2), "seconds": round(took, 1)}))


if __name__ == "__main__":
    main()
