"""bench/generate.py runs: a short run against its fixed-delay endpoint prints a share of the ideal (the figures
themselves are the benchmark's, in docs/development/benchmarks.md, not a test's)."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT


def test_a_short_generation_benchmark_runs(tmp_path):
    out = tmp_path / "gen.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "generate.py"), "--concurrency", "8", "--requests", "200",
                           "--delay", "0.02", "--stream", "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [row] = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert row["requests"] == 200 and row["failed"] == 0
    assert 0 < row["share_of_ideal"] <= 1.05 and row["cpu_ms_per_request"] > 0
