"""Scoring after an upload runs as a job the store records: every flavor the track was scored with,
progress per batch, state visible to `evalcore jobs`; a job whose process died shows as interrupted."""
from __future__ import annotations

import io

import pandas as pd

from evalcore.cli import main
from evalcore.ingest.responses import import_responses
from evalcore.scoring import score
from evalcore.services import jobs


def _computed(con, model: str) -> set[tuple[str, str]]:
    return set(con.execute("SELECT name, flavor FROM system_scores WHERE model = ? AND origin = 'computed'",
                           [model]).fetchall())


def test_a_new_model_is_scored_under_every_flavor_the_track_has(toy, tmp_path):
    score(toy, dataset="toy", track="toy/chitchat", metrics="F1,BLEU4", progress=False)
    score(toy, dataset="toy", track="toy/chitchat", metrics="F1", flavor="msde", progress=False)
    (tmp_path / "new.csv").write_text("item_id,response\nt1,天气不错\nt2,你好啊\n", encoding="utf-8")
    import_responses(toy, tmp_path / "new.csv", dataset="toy", track="toy/chitchat", model="new")
    steps = jobs.scoring_steps(toy, "toy", ["toy/chitchat", "toy/knowledge"])
    assert [(s["track"], s["flavor"], s["metrics"]) for s in steps] == [
        ("toy/chitchat", "default", ["BLEU4", "F1"]), ("toy/chitchat", "msde", ["F1"]),
        ("toy/knowledge", "default", ["lexical"])]   # never scored: the default metrics
    job = jobs.create(toy, "toy", steps[:2], model="new")
    seen = []
    original = jobs.set_fields

    def spy(con, job_id, **values):
        if "progress" in values:
            seen.append(values["progress"])
        original(con, job_id, **values)

    jobs.set_fields = spy
    try:
        jobs.run(toy, job)
    finally:
        jobs.set_fields = original
    assert _computed(toy, "new") == {("F1", "default"), ("BLEU4", "default"), ("F1", "msde")}
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) >= 4   # per step and per batch, then done
    row = jobs.listing(toy, "toy").iloc[0]
    assert (row["job_id"], row["state"], row["progress"], row["model"]) == (job, "done", 1.0, "new")


def test_a_failed_job_says_why_and_a_dead_one_is_interrupted(toy):
    bad = jobs.create(toy, "toy", [{"track": "toy/chitchat", "flavor": "nope", "tokenizer": None, "metrics": ["F1"]}])
    jobs.run(toy, bad)
    row = jobs.listing(toy).set_index("job_id").loc[bad]
    assert row["state"] == "failed" and "nope" in row["detail"]
    dead = jobs.create(toy, "toy", [])
    toy.execute("UPDATE jobs SET state = 'running', pid = 999999999 WHERE job_id = ?", [dead])
    assert jobs.listing(toy).set_index("job_id").loc[dead, "state"] == "interrupted"


def test_background_job_and_cli_listing(toy, tmp_path, capsys):
    job = jobs.create(toy, "toy", jobs.scoring_steps(toy, "toy", ["toy/chitchat"]), model="m1")
    db = toy.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]
    jobs.start(db, job).join(timeout=120)   # its own connection: the same process shares the database
    assert ("F1", "default") in _computed(toy, "m1")
    toy.close()
    assert main(["jobs", "--db", db, "--format", "csv"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert frame.loc[0, "state"] == "done" and frame.loc[0, "tracks"] == "toy/chitchat"
    assert frame.loc[0, "model"] == "m1"


def test_the_job_check_ends_cleanly_when_the_process_exits(tmp_path):
    """The orphaned-job check runs in a daemon thread; at interpreter exit it must be out of DuckDB before
    Python tears down, or the process aborts (exit 134, seen at the end of a CI test run)."""
    import subprocess
    import sys

    from conftest import ROOT
    from evalcore.store import connect

    db = tmp_path / "w.duckdb"
    connect(db).close()
    script = ("import sys, time; from evalcore.services import jobs; jobs.watch(sys.argv[1], every=0.001); time.sleep(0.3)")
    codes = [subprocess.run([sys.executable, "-c", script, str(db)], cwd=ROOT, capture_output=True).returncode
             for _ in range(5)]
    assert codes == [0] * 5  # before the fix: 134 in 10 of 10 runs
