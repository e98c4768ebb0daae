"""Benchmark: `score` for BLEU4, ROUGE and CIDEr on the 16,000 CPC pairs vs pycocoevalcap.

    python bench/lexical.py [--msde ../shared/data/msde]

Builds a fresh store from the MSDE release (not timed), then in separate child processes:
1. evalcore: the whole `score` command (`evalcore.cli.main`, store reads and writes included) for
   BLEU4, ROUGE and CIDEr on lic2021/persona with char tokens (the default flavor);
2. pycocoevalcap: Bleu(4), Rouge and Cider on the same pairs, char tokens joined by spaces (its
   tokenization not timed), one call per model so CIDEr's document frequencies are the track's refs.
Both run --rounds times (default 3), alternating, each in a fresh process on a fresh store copy;
the medians give the ratio (this machine's speed varies by 2x from run to run). Prints each
child's peak resident memory too. Needs pycocoevalcap (pip install -r tests/requirements.txt).
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TRACK = "lic2021/persona"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_evalcore(db: str, out) -> None:
    import evalcore.scoring  # noqa: F401  (library imports are not the command's work)
    from evalcore.cli import main

    start = time.perf_counter()
    code = main(["score", "--db", db, "--dataset", "msde", "--track", TRACK, "--metrics", "BLEU4,ROUGE,CIDEr"])
    out.put(("evalcore", time.perf_counter() - start, _peak_mb(), code))


def run_coco(db: str, out) -> None:
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    from evalcore.core.tokenize import char_tokens
    from evalcore.scoring import load_track
    from evalcore.store import connect

    con = connect(db)
    data = load_track(con, "msde", TRACK)
    con.close()
    per_model = {}
    for model, group in data.groupby("model"):
        hyps = {i: [" ".join(char_tokens(t))] for i, t in enumerate(group["text"])}
        refs = {i: [" ".join(char_tokens(r)) for r in rs] for i, rs in enumerate(group["refs"])}
        per_model[model] = (hyps, refs)
    pairs = sum(len(h) for h, _ in per_model.values())
    start = time.perf_counter()
    for hyps, refs in per_model.values():
        Bleu(4).compute_score(refs, hyps, verbose=0)
        Rouge().compute_score(refs, hyps)
        Cider().compute_score(refs, hyps)
    out.put(("pycocoevalcap", time.perf_counter() - start, _peak_mb(), pairs))


def child(target, db: str):
    queue = mp.get_context("spawn").Queue()
    proc = mp.get_context("spawn").Process(target=target, args=(db, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--msde", default=str(ROOT.parent / "shared" / "data" / "msde"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from evalcore.ingest.formats.msde import import_msde
    from evalcore.store import connect

    tmp = Path(tempfile.mkdtemp(prefix="evalcore-bench-"))
    ours, cold, coco = [], [], []
    try:
        base = tmp / "base.duckdb"
        con = connect(base)
        import_msde(con, args.msde, progress=False)
        con.close()
        for _ in range(args.rounds):
            fresh = tmp / "fresh.duckdb"
            shutil.copy(base, fresh)
            ours.append(child(run_evalcore, str(fresh)))
            shutil.copy(base, fresh)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "evalcore", "score", "--db", str(fresh), "--dataset", "msde",
                            "--track", TRACK, "--metrics", "BLEU4,ROUGE,CIDEr"], cwd=ROOT, check=True,
                           capture_output=True)
            cold.append(time.perf_counter() - start)
            coco.append(child(run_coco, str(base)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    t_ours = statistics.median(r[1] for r in ours)
    t_coco = statistics.median(r[1] for r in coco)
    t_cold = statistics.median(cold)
    print(f"pairs: {coco[0][3]} ({TRACK}, 4 models x 4,000), char tokens; metrics BLEU4, ROUGE-L, CIDEr")
    print(f"rounds: {args.rounds}; seconds per round: evalcore {[round(r[1], 2) for r in ours]}, "
          f"pycocoevalcap {[round(r[1], 2) for r in coco]}")
    print(f"evalcore score (whole command, fresh store): {t_ours:6.2f} s median, "
          f"peak RSS {max(r[2] for r in ours):5.0f} MB")
    print(f"pycocoevalcap Bleu+Rouge+Cider (per model):  {t_coco:6.2f} s median, "
          f"peak RSS {max(r[2] for r in coco):5.0f} MB")
    print(f"speed-up: {t_coco / t_ours:.1f}x")
    print(f"(as a fresh `python -m evalcore score` process, interpreter start and imports included: "
          f"{t_cold:.2f} s median, {t_coco / t_cold:.1f}x)")


if __name__ == "__main__":
    main()
