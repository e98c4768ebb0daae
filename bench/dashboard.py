"""Benchmark: server-side run time of the leaderboard and correlations pages on a big store.

    python bench/dashboard.py [--msde ../shared/data/msde] [--responses 1000000]

Builds (not timed) a store of 1,000,000 responses from real texts, as bench/stats.py does (CPC
items repeated, each of the 4 released models answering with one of its real CPC responses drawn at
random, Info and Coh scores drawn from the release's human scores), scores 8 lexical metrics on all
of them (F1, BLEU1, BLEU2, BLEU4, DIST1, DIST2, ROUGE, METEOR), then runs each page through
Streamlit's AppTest against that store: 'cold' is the first run in a fresh process (connection
opened, caches empty), 'warm' the median of the next runs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGES = {"leaderboard": {"dataset": "scale", "track": "lic2021/persona"},
         "correlations": {"dataset": "scale", "track": "lic2021/persona", "method": "spearman", "level": "system",
                          "origin": "computed"}}
METRICS = "F1,BLEU1,BLEU2,BLEU4,DIST1,DIST2,ROUGE,METEOR"


def time_page(db: str, page: str, runs: int, params: dict | None = None) -> list[float]:
    """In a fresh process: time the page `runs` times (query parameters `params`, default PAGES');
    print cold and warm; the times in seconds."""
    os.environ["EVALCORE_DB"] = db
    from streamlit.components.v2.component_manager import BidiComponentManager
    from streamlit.testing.v1 import AppTest

    # A server scans the installed packages for components once, at start; AppTest does it on every run of a
    # new AppTest (0.15-0.2 s of reading package metadata), which no page view of a running server pays.
    components = BidiComponentManager()
    components.discover_and_register_components(start_file_watching=False)
    times = []
    for _ in range(runs):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at._bidi_component_manager = components
        at.switch_page(f"pages/views/{page}.py")
        for k, v in (PAGES[page] if params is None else params).items():
            at.query_params[k] = v
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
        assert not at.exception, [e.value for e in at.exception]
    print(f"{page:12s} cold {times[0] * 1000:7.0f} ms   warm {statistics.median(times[1:]) * 1000:7.0f} ms "
          f"(median of {runs - 1}; runs {[round(t * 1000) for t in times]})")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--msde", default=str(ROOT.parent / "shared" / "data" / "msde"))
    parser.add_argument("--responses", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--db", help="reuse a store built by an earlier run")
    parser.add_argument("--page", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.page:
        time_page(args.db, args.page, args.runs)
        return
    db = args.db
    if not db:
        from bench.stats import build
        from evalcore.core.malloc import tune
        from evalcore.scoring import score
        from evalcore.store import connect

        tune()
        db = str(Path(tempfile.mkdtemp(prefix="evalcore-dash-")) / "scale.duckdb")
        con = connect(db)
        start = time.perf_counter()
        build(con, Path(args.msde), args.responses, dims=("Info", "Coh"))
        built = time.perf_counter() - start
        score(con, dataset="scale", metrics=METRICS, progress=True)
        print(f"store {db}: {args.responses:,} responses; built in {built:.0f} s, "
              f"scored ({METRICS}) in {time.perf_counter() - start - built:.0f} s")
        con.close()
    for page in PAGES:
        subprocess.run([sys.executable, __file__, "--db", db, "--page", page, "--runs", str(args.runs)], check=True)


if __name__ == "__main__":
    main()
