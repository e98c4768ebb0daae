"""Benchmark: the correlation engine on one track of 100,000 responses.

    python bench/stats.py [--msde ../shared/data/msde] [--responses 100000]

Builds a scale store from real texts by repetition and sampling (not timed): items cycle through the
4,000 CPC items of the MSDE release (context and reference kept), each answered by the 4 released
models with one of that model's real CPC responses drawn at random, and every response gets Info,
Coh, Know and Rec scores (0-2) drawn from the release's real human-score distribution. It scores
the 10 lexical metrics (char tokens) and 6 more under the msde flavor (whitespace tokens): 16
metric columns. Then it times:
1. the full turn-level matrix, 16 metrics x 4 dimensions x 3 methods, without bootstrap
   (evalcore.analysis.correlate.correlation_matrix on the loaded columns);
2. 1,000 bootstrap resamples of one cell, per method;
3. the whole `correlate --level turn` command (store reads included), for reference.
Medians of --repeat runs (this machine's speed varies run to run).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODELS = ("baichuan", "chatglm", "llama", "qianwen")
DIMS = ("Info", "Coh", "Know", "Rec")


def build(con, msde: Path, n_responses: int, seed: int = 0, dims: tuple[str, ...] = DIMS) -> None:
    from evalcore.ingest.batch import Batch
    from evalcore.ingest.formats.msde import read_workbook

    folder = msde / "data" / "Lic 2021_CPC"
    source = [json.loads(line) for line in (folder / "Lic 2021_CPC.txt").read_text("utf-8").splitlines()]
    books = {m: read_workbook(folder / f"{m}.xlsx") for m in MODELS}
    scores = {d: [] for d in dims}
    for path in sorted((msde / "data").glob("*/*.xlsx")):
        for _, _, _, rated in read_workbook(path).human:
            for d, v in rated.items():
                if d in scores:
                    scores[d].append(v)
    rng = np.random.default_rng(seed)
    batch = Batch()
    batch.dataset("scale", language="zh", description="bench/stats.py scale store")
    batch.track("scale", "lic2021/persona", corpus="CPC")
    for d in dims:
        batch.add("dimensions", dataset="scale", dimension=d, scale_min=0.0, scale_max=2.0)
    n_items = n_responses // len(MODELS)
    for i in range(n_items):
        src = source[i % len(source)]
        item = f"s-{i:06d}"
        batch.add("items", dataset="scale", item_id=item, track="lic2021/persona", context=json.dumps(src["history"]),
                  skill="persona", origin="bench")
        batch.add("item_references", dataset="scale", item_id=item, ref_index=0, text=src["response"])
    for m in MODELS:
        batch.model(m)
        texts = [r for _, r in books[m].generation]
        picks = rng.integers(0, len(texts), n_items)
        draws = {d: rng.choice(scores[d], n_items) for d in dims}
        for i in range(n_items):
            item = f"s-{i:06d}"
            batch.add("responses", dataset="scale", item_id=item, model=m, text=texts[picks[i]])
            for d in dims:
                batch.add("human_ratings", dataset="scale", track="lic2021/persona", target="response",
                          item_id=item, model=m, annotator="sampled", dimension=d, score=float(draws[d][i]))
    batch.write(con)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--msde", default=str(ROOT.parent / "shared" / "data" / "msde"))
    parser.add_argument("--responses", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from evalcore.analysis.correlate import correlation_matrix, human_scores, metric_scores
    from evalcore.analysis.stats import Prepared, correlate_prepared
    from evalcore.cli import main as cli
    from evalcore.core.malloc import tune
    from evalcore.scoring import score
    from evalcore.store import connect

    tune()
    db = Path(tempfile.mkdtemp(prefix="evalcore-bench-")) / "scale.duckdb"
    con = connect(db)
    start = time.perf_counter()
    build(con, Path(args.msde), args.responses)
    score(con, dataset="scale", metrics="lexical", progress=False)
    score(con, dataset="scale", metrics="F1,BLEU1,BLEU2,DIST1,DIST2,METEOR", flavor="msde", progress=False)
    print(f"scale store: {args.responses} responses, built and scored in {time.perf_counter() - start:.0f} s")

    track = "lic2021/persona"
    humans = human_scores(con, "scale", track, "turn").pivot_table(index="unit", columns="dimension", values="value")
    default = metric_scores(con, "scale", track, "turn", "computed", "default", None)
    msde = metric_scores(con, "scale", track, "turn", "computed", "msde", None)
    msde["metric"] = msde["metric"] + "(msde)"
    metrics = pd.concat([default, msde]).pivot_table(index="unit", columns="metric", values="value")
    print(f"matrix: {metrics.shape[0]} responses x {metrics.shape[1]} metrics x {humans.shape[1]} dimensions x 3 methods")
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        cells = correlation_matrix(metrics, humans, ["pearson", "spearman", "kendall"])
        times.append(time.perf_counter() - t)
    print(f"full matrix, no bootstrap: {statistics.median(times) * 1000:.0f} ms median of {args.repeat} "
          f"({len(cells)} correlations; runs {[round(x * 1000) for x in times]} ms)")
    most = max(metrics.columns, key=lambda c: metrics[c].nunique())  # the worst case for resampling
    for name in ("BLEU4", most):
        px = Prepared(metrics[name].to_numpy())
        py = Prepared(humans.loc[metrics.index, "Info"].to_numpy())
        for method in ("pearson", "spearman", "kendall"):
            t = time.perf_counter()
            c = correlate_prepared(method, px, py, bootstrap=1000, seed=1)
            print(f"1,000 bootstrap resamples, {name} ({px.n_groups} distinct values) x Info, {method:8s}: "
                  f"{time.perf_counter() - t:5.2f} s (r = {c.r:.4f}, 95% CI {c.ci_low:.4f} .. {c.ci_high:.4f})")
    con.close()
    import contextlib
    import io

    t = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        cli(["correlate", "--db", str(db), "--dataset", "scale", "--level", "turn", "--format", "csv"])
    print(f"whole `correlate --level turn` command (10 metrics, store reads included): {time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
