"""Benchmark: BS-F1 on 4,000 real CPC pairs, `evalcore score` locally and with `--engine ray`.

    python bench/ray.py [--msde ../shared/data/msde] [--items 1000] [--actors 2] [--gpus-per-actor 0]

Builds a store from the MSDE release (not timed) and keeps the first --items items of the CPC track
(lic2021/persona) with their four models' responses: 4,000 pairs by default. Then times the whole
command, `python -m evalcore score --metrics BS-F1` in a fresh process on a fresh copy of the store,
once with the local engine and once with `--engine ray --actors N` (a local Ray started and stopped
by the command, model loading in each actor, Parquet export and write-back all counted), and checks
that both stored the same values. Needs `pip install 'ray[data]==2.60.0'`.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TRACK = "lic2021/persona"


def build(msde: Path, db: Path, items: int) -> int:
    from evalcore.ingest.formats.msde import import_msde
    from evalcore.store import connect

    con = connect(db)
    import_msde(con, msde, progress=False)
    # the bench's own store: keep the first `items` items of the track, every model's answer to them
    con.execute("""
        DELETE FROM responses WHERE dataset = 'msde' AND item_id NOT IN (
            SELECT item_id FROM items WHERE dataset = 'msde' AND track = ? ORDER BY item_id LIMIT ?)
    """, [TRACK, items])
    n = con.execute("SELECT count(*) FROM responses").fetchone()[0]
    con.execute("CHECKPOINT")
    con.close()
    return n


def run(db: Path, extra: list[str]) -> float:
    cmd = [sys.executable, "-m", "evalcore", "score", "--db", str(db), "--metrics", "BS-F1", "--track", TRACK, *extra]
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    took = time.perf_counter() - start
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    print("   ", out.stdout.strip().replace("\n", "\n    "))
    return took


def values(db: Path):
    from evalcore.store import connect

    con = connect(db, read_only=True)
    try:
        return con.execute("SELECT signature, text_key, value FROM metric_scores ORDER BY 1, 2").df()
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--msde", default=str(ROOT.parent / "shared" / "data" / "msde"))
    ap.add_argument("--items", type=int, default=1000, help="items of the CPC track (4 responses each)")
    ap.add_argument("--actors", type=int, default=2)
    ap.add_argument("--gpus-per-actor", type=float, default=0.0)
    args = ap.parse_args(argv)
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.duckdb"
        n = build(Path(args.msde), base, args.items)
        print(f"{n} responses of {TRACK} ({args.items} items)")
        times = {}
        for name, extra in (("local", []), ("ray", ["--engine", "ray", "--actors", str(args.actors),
                                                    "--gpus-per-actor", str(args.gpus_per_actor)])):
            db = Path(tmp) / f"{name}.duckdb"
            shutil.copyfile(base, db)
            print(f"{name}:")
            times[name] = run(db, extra)
            print(f"    {times[name]:.1f} s, {n / times[name]:.1f} responses/s")
        a, b = values(Path(tmp) / "local.duckdb"), values(Path(tmp) / "ray.duckdb")
        same = a["text_key"].tolist() == b["text_key"].tolist() and a["signature"].tolist() == b["signature"].tolist()
        diff = float(np.nanmax(np.abs(a["value"].to_numpy() - b["value"].to_numpy()))) if same else float("nan")
        print(f"same keys and signatures: {same}; largest difference {diff:.2e}")
        print(f"ray / local time: {times['ray'] / times['local']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
