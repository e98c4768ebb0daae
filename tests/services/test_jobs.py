"""Scoring after an upload runs as a job the store records: every flavor the track was scored with,
progress per batch, state visible to `evalcore jobs`; a job whose process died shows as interrupted."""
from __future__ import annotations

import io
import os

import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.ingest.formats.responses import import_responses
from evalcore.scoring import score
from evalcore.services import jobs
from evalcore.store import connect


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


def test_an_upload_job_scores_its_model_only_and_as_a_whole_track_run_would(toy, tmp_path, monkeypatch):
    """A job recorded for one model (an upload's) reads and scores that model's responses only: its system scores
    equal those of `score` over the whole track, and the other models' rows stand untouched."""
    import shutil

    import evalcore.scoring.run as run

    score(toy, dataset="toy", track="toy/chitchat", metrics="lexical", progress=False)
    (tmp_path / "new.csv").write_text("item_id,response\nt1,天气不错呀\nt2,你好啊\n", encoding="utf-8")
    import_responses(toy, tmp_path / "new.csv", dataset="toy", track="toy/chitchat", model="new")
    others = toy.execute("SELECT * FROM system_scores WHERE model <> 'new' ORDER BY ALL").fetchall()
    db = toy.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]
    toy.execute("CHECKPOINT")
    shutil.copy(db, tmp_path / "whole.duckdb")
    job = jobs.create(toy, "toy", jobs.scoring_steps(toy, "toy", ["toy/chitchat"]), model="new")
    read, original = [], run.load_track

    def spy(*args, **kwargs):
        frame = original(*args, **kwargs)
        read.append(set(frame["model"]))
        return frame

    monkeypatch.setattr(run, "load_track", spy)
    jobs.run(toy, job)
    assert read == [{"new"}]
    assert toy.execute("SELECT * FROM system_scores WHERE model <> 'new' ORDER BY ALL").fetchall() == others
    whole = connect(tmp_path / "whole.duckdb")
    sql = "SELECT name, signature, value, n FROM system_scores WHERE model = 'new' ORDER BY name, signature"
    try:
        score(whole, dataset="toy", track="toy/chitchat", metrics="lexical", progress=False)
        expected = whole.execute(sql).fetchall()
    finally:
        whole.close()
    got = toy.execute(sql).fetchall()
    assert len(got) == 10 and got == expected


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
    toy.close()   # the job runs in a worker process: DuckDB lets one process at a time hold the file
    worker = jobs.start(db, job)
    worker.join(timeout=120)
    assert worker.proc.returncode == 0 and worker.pid != os.getpid()
    assert main(["jobs", "--db", db, "--format", "csv"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert frame.loc[0, "state"] == "done" and frame.loc[0, "tracks"] == "toy/chitchat"
    assert frame.loc[0, "model"] == "m1"
    con = connect(db)
    try:
        assert ("F1", "default") in _computed(con, "m1")
        assert con.execute("SELECT pid, attempts FROM jobs WHERE job_id = ?", [job]).fetchall() == [(worker.pid, 1)]
    finally:
        con.close()


@pytest.mark.slow   # 5 s or more on 2 cores: the fast set keeps tests under that
def test_the_job_check_ends_cleanly_when_the_process_exits(tmp_path):
    """The orphaned-job check runs in a daemon thread; at interpreter exit it must be out of DuckDB before
    Python tears down, or the process aborts (exit 134, seen at the end of a CI test run)."""
    import subprocess
    import sys

    from evalcore.store import connect
    from support import ROOT

    db = tmp_path / "w.duckdb"
    connect(db).close()
    script = ("import sys, time; from evalcore.services import jobs; jobs.watch(sys.argv[1], every=0.001); time.sleep(0.3)")
    codes = [subprocess.run([sys.executable, "-c", script, str(db)], cwd=ROOT, capture_output=True).returncode
             for _ in range(5)]
    assert codes == [0] * 5  # before the fix: 134 in 10 of 10 runs


def test_the_job_check_looks_at_the_store_only_after_a_commit(tmp_path):
    """jobs.watch: with nothing committed since its last look it leaves the store alone (a look takes the file,
    which a worker and the other page servers then wait for); a job recorded since (a commit) is seen at the
    next tick and run."""
    import time

    from evalcore.store import Shared, connect

    db = tmp_path / "check.duckdb"
    connect(db).close()
    jobs.watch(str(db), every=0.02)
    deadline = time.monotonic() + 60
    while Shared.of(db).generation == 0 and time.monotonic() < deadline:   # its first look (0.3 s on a quiet
        time.sleep(0.05)                                                      # machine, more on a busy one)
    before = Shared.of(db).generation
    assert before > 0
    time.sleep(0.5)   # 25 ticks, nothing committed
    assert Shared.of(db).generation == before
    con = connect(db)
    try:   # recorded by this process and not started (the page that recorded it was closed): an orphan
        job = jobs.create(con, "a", [])
    finally:
        con.close()
    deadline = time.monotonic() + 60
    state = None
    while state != "done" and time.monotonic() < deadline:
        time.sleep(0.2)
        con = connect(db, wait=30)
        try:
            state = con.execute("SELECT state FROM jobs WHERE job_id = ?", [job]).fetchall()[0][0]
        finally:
            con.close()
    assert state == "done"


SERVER = ("import sys, time; from evalcore.services import jobs; jobs.start(sys.argv[1], int(sys.argv[2])); "
          "print('started', flush=True); time.sleep(600)")


def _two_tracks(tmp_path, n: int) -> str:
    """A store with n one-turn items in each of two tracks and one model's responses to all of them."""
    from evalcore.ingest.formats.items import import_items
    from support import write_jsonl

    db = str(tmp_path / "two.duckdb")
    rows = [{"item_id": f"{t}-{i:05d}", "dataset": "big", "track": f"big/{t}", "context": [f"第 {i} 轮 {t}"],
             "references": [f"好 的 {i % 97} 呀"]} for t in ("a", "b") for i in range(n)]
    con = connect(db)
    try:
        import_items(con, write_jsonl(tmp_path / "items.jsonl", rows))
        (tmp_path / "r.csv").write_text("item_id,model,track,response\n" + "".join(
            f"{r['item_id']},new,{r['track']},好 的 呀 {i} 啊 {i % 89}\n" for i, r in enumerate(rows)), encoding="utf-8")
        import_responses(con, tmp_path / "r.csv", dataset="big")
    finally:
        con.close()
    return db


def _state(db: str, job: int) -> tuple:
    con = connect(db, wait=60)
    try:
        return con.execute("SELECT state, detail, pid, attempts FROM jobs WHERE job_id = ?", [job]).fetchall()[0]
    finally:
        con.close()


def _outcome(db: str) -> tuple[list, int, int]:
    con = connect(db, wait=60)
    try:
        system = con.execute("SELECT track, name, signature, count(*), min(value), max(value) FROM system_scores "
                             "WHERE model = 'new' GROUP BY ALL ORDER BY ALL").fetchall()
        values = con.execute("SELECT count(*) FROM metric_scores").fetchall()[0][0]
        return system, values, con.execute("SELECT n FROM revision").fetchall()[0][0]
    finally:
        con.close()


@pytest.mark.system
@pytest.mark.slow   # a page server SIGKILLed mid-job and started again
def test_a_job_cut_short_by_a_killed_server_is_resumed_once_after_the_restart(tmp_path):
    """The server (a process that started the job's worker, as the Upload page does) and the worker are
    both SIGKILLed while the job's second step runs, as a machine restart would; another job waits queued.
    On restart (jobs.recover: what the server does at start and every EVALCORE_JOB_CHECK s) both run to
    done. Nothing is scored twice: the first step's committed values are not written again (the store's
    revision, bumped by every scoring write, moves by exactly the second step's one write), and every
    system score is one row, equal to an uninterrupted run's on a copy of the store."""
    import shutil
    import signal
    import subprocess
    import sys
    import time

    from support import ROOT

    db = _two_tracks(tmp_path, 15_000)
    con = connect(db)
    try:
        steps = jobs.scoring_steps(con, "big", ["big/a", "big/b"])
        job = jobs.create(con, "big", steps, model="new")
        waiting = jobs.create(con, "big", steps, model="new")  # recorded by a server killed before it ran it
        con.execute("UPDATE jobs SET pid = 999999999 WHERE job_id = ?", [waiting])
    finally:
        con.close()
    reference = str(tmp_path / "reference.duckdb")
    shutil.copy(db, reference)
    con = connect(reference)
    try:
        jobs.run(con, job)   # the same job, never interrupted
    finally:
        con.close()
    before = _outcome(db)[2]

    server = subprocess.Popen([sys.executable, "-c", SERVER, db, str(job)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert server.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 120
    while True:   # until the worker is into the second step (the first one committed)
        state, detail, pid, attempts = _state(db, job)
        assert state == "queued" or state == "running", state
        if state == "running" and detail.startswith("step 2 of 2"):   # step 1's write is in
            break
        assert time.monotonic() < deadline, "the worker never reached its second step"
        time.sleep(0.05)
    server.kill()
    os.kill(pid, signal.SIGKILL)   # the worker, in its own session: killed too, as by a machine restart
    server.wait()
    time.sleep(0.2)
    at_kill = _outcome(db)[2]
    assert at_kill == before + 1, "killed after its second step was written: nothing left to resume"
    assert _state(db, job)[0] == "running"   # what the killed worker left: shown as interrupted
    con = connect(db)
    try:
        assert jobs.listing(con).set_index("job_id").loc[job, "state"] == "interrupted"
    finally:
        con.close()

    started = jobs.recover(db)   # the restarted server's check
    assert sorted(w.key[1] for w in started) == [job, waiting]
    for w in started:
        w.join(timeout=300)
        assert w.proc.returncode == 0
    assert _state(db, job)[0] == "done" and _state(db, job)[3] == 2   # resumed: its second claim
    assert _state(db, waiting)[0] == "done" and _state(db, waiting)[3] == 1
    system, values, rev = _outcome(db)
    ref_system, ref_values, _ = _outcome(reference)
    assert system == ref_system and all(row[3] == 1 for row in system)   # one row per score, the same values
    assert {row[0] for row in system} == {"big/a", "big/b"}
    assert values == ref_values   # each value cached once
    # one scoring write per step in all, as uninterrupted: the resumed job wrote step 2 only, and the
    # queued one found every value cached and wrote nothing
    assert rev == at_kill + 1 == before + 2
    assert jobs.recover(db) == []


def test_a_job_that_keeps_killing_its_worker_is_failed_with_the_reason(toy):
    job = jobs.create(toy, "toy", jobs.scoring_steps(toy, "toy", ["toy/chitchat"]), model="m1")
    toy.execute("UPDATE jobs SET state = 'running', pid = 999999999, attempts = ?, detail = 'step 1 of 1: toy/chitchat' "
                "WHERE job_id = ?", [jobs.MAX_ATTEMPTS, job])
    assert jobs.run(toy, job) is False
    state, detail = toy.execute("SELECT state, detail FROM jobs WHERE job_id = ?", [job]).fetchall()[0]
    assert state == "failed"
    assert detail == (f"interrupted {jobs.MAX_ATTEMPTS} times: its worker process ended before finishing each time "
                      "(killed, out of memory, or the machine restarted); last seen: step 1 of 1: toy/chitchat")
    assert _computed(toy, "m1") == set()
    live = jobs.create(toy, "toy", [], model="m1")   # running in a live process (this one): not taken again
    toy.execute("UPDATE jobs SET state = 'running', pid = 1 WHERE job_id = ?", [live])
    assert jobs.claim(toy, live) is False


def test_a_steps_progress_does_not_wait_for_a_store_page_runs_hold(toy, monkeypatch):
    """While the worker has let the store go to compute, a progress report within a step tries the store once:
    with another process holding it (page runs, 150 viewers) the report is skipped and the computing goes
    on, instead of waiting up to the handle's wait; the step's start and the job's end are still written."""
    import subprocess
    import sys
    import time

    from evalcore.store import Handle

    db = toy.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]
    job = jobs.create(toy, "toy", jobs.scoring_steps(toy, "toy", ["toy/chitchat"]), model="m1")
    handle = Handle(db, toy, wait=30)
    took = []

    def fake_score(con, **kw):   # the store let go while computing, as score() does for a large track
        with handle.let_go():
            holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, sys; c = duckdb.connect({db!r}); "
                                       "print('held', flush=True); sys.stdin.readline(); c.close()"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert holder.stdout.readline().strip() == "held"
            start = time.monotonic()
            kw["on_progress"](1, 4, "toy:toy/chitchat")
            kw["on_progress"](4, 4, "toy:toy/chitchat")
            took.append(time.monotonic() - start)
            holder.communicate("go\n", timeout=30)
        return type("Report", (), {"notes": []})()

    monkeypatch.setattr("evalcore.scoring.score", fake_score)   # what a job runs, read when it runs
    assert jobs.run(toy, job, handle=handle)
    assert took[0] < 5   # two tries, not two waits of up to 30 s
    row = handle.con.execute("SELECT state, progress FROM jobs WHERE job_id = ?", [job]).fetchall()
    assert row == [("done", 1.0)]
    handle.con.close()
