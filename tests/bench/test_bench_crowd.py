"""bench/crowd.py runs: twenty crowd workers (two careless, one trying a second identity) take a study through one
dashboard server at the protocol level, its waits cut to a twentieth, and the store keeps every rating once, no worker
above their share, no real unit above K, the careless and the second identity excluded and no one else, the second
identity refused, the codes right, and no platform identifier in what the page drew or in the server's log (the
figures themselves are the benchmark's, in docs/development/benchmarks.md, not a test's)."""
from __future__ import annotations

import json
import subprocess
import sys

from support import ROOT, copy_default_store


def test_a_short_crowd_burst_keeps_every_answer_once_and_excludes_the_planted(tmp_path, default_store_file):
    store = copy_default_store(default_store_file, tmp_path / "init.duckdb")
    out = tmp_path / "crowd.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "crowd.py"), "--workers", "20", "--enter-seconds", "3",
                           "--rate-minutes", "3", "--think-scale", "0.05", "--processes", "1", "--items", "200",
                           "--store", str(store), "--json", str(out)], capture_output=True, text=True, timeout=400,
                          cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    (s,) = json.loads(out.read_text(encoding="utf-8"))
    assert s["errors"] == 0 and s["click_errors"] == 0, s["error_samples"]
    assert s["workers_entered"] == s["workers_finished"] == s["codes_shown"] == 20
    assert s["ratings_logged"] == s["ratings_stored"] == 20 * 10 * 2
    assert s["lost"] == s["doubled"] == s["stored_not_logged"] == s["uncertain_clicks"] == 0
    assert s["most_units_per_worker"] == 10 and s["workers_over_units"] == 0 and s["real_units_over_k"] == 0
    assert s["planted_finished"] == 3 and s["excluded"] == 3 and s["excluded_equals_planted"]
    assert s["second_identities"] == s["second_identities_tried"] == s["second_identities_refused"] == 1
    assert s["wrong_codes"] == 0 and s["wrong_places"] == 0 and s["unit_other_than_shown"] == 0
    assert s["ids_in_page_content"] == 0 and s["ids_in_server_log"] == 0
    assert s["ok"] and s["rate"]["n"] == 400 and s["server_cpu_s_per_click"] > 0
