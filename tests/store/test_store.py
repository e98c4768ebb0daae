import time

import pytest

from evalcore.core.errors import StoreError
from evalcore.store import connect, resolve_db_path, schema_version, transaction
from evalcore.store.migrations import LATEST
from support import store_at_version


def test_new_store_is_at_latest_version(tmp_path):
    con = connect(tmp_path / "s.duckdb")
    assert schema_version(con) == LATEST
    con.close()
    con = connect(tmp_path / "s.duckdb")  # reopening migrates nothing and keeps one version row
    assert con.execute("SELECT count(*) FROM schema_version").fetchall()[0][0] == LATEST
    con.close()


def test_store_from_newer_version_is_refused(tmp_path):
    con = connect(tmp_path / "s.duckdb")
    con.execute("INSERT INTO schema_version VALUES (?, 'm999_future', current_timestamp, '9.9')", [LATEST + 1])
    con.close()
    with pytest.raises(StoreError, match=r"newer evalcore.*Upgrade evalcore"):
        connect(tmp_path / "s.duckdb")


def test_db_path_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "env.duckdb"))
    assert resolve_db_path(tmp_path / "arg.duckdb") == tmp_path / "arg.duckdb"
    assert resolve_db_path(None) == tmp_path / "env.duckdb"
    monkeypatch.delenv("EVALCORE_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert resolve_db_path(None) == tmp_path / "xdg" / "evalcore" / "evalcore.duckdb"


def test_transaction_rolls_back_on_error(con):
    with pytest.raises(RuntimeError):
        with transaction(con):
            con.execute("INSERT INTO datasets (dataset) VALUES ('x')")
            raise RuntimeError("boom")
    assert con.execute("SELECT count(*) FROM datasets").fetchall()[0][0] == 0


def test_read_only_open_of_missing_store_says_what_to_do(tmp_path):
    with pytest.raises(StoreError, match="evalcore init"):
        connect(tmp_path / "missing.duckdb", read_only=True)


def test_a_db_that_is_not_a_store_is_refused_untouched(tmp_path, capsys):

    from evalcore.cli import main

    csv = tmp_path / "existing.csv"
    csv.write_text("item_id,response\nt1,hi\n", encoding="utf-8")
    before = csv.read_bytes()
    assert main(["summary", "--db", str(csv)]) != 0
    err = capsys.readouterr().err
    assert f"{csv} is a text file, not a DuckDB store; --db expects a DuckDB store file" in err
    assert csv.read_bytes() == before
    assert main(["summary", "--db", str(tmp_path)]) != 0
    assert f"{tmp_path} is a directory; --db expects a DuckDB store file" in capsys.readouterr().err
    empty = tmp_path / "empty.duckdb"
    empty.write_bytes(b"")
    assert main(["summary", "--db", str(empty)]) != 0
    assert "is an empty file, not a DuckDB store" in capsys.readouterr().err


def test_a_command_waits_for_a_store_another_process_holds(tmp_path):
    """DuckDB lets one process write: a command waits (saying so) until the holder lets go, and gives
    up with a message naming the setting after EVALCORE_LOCK_WAIT seconds."""
    import os
    import subprocess
    import sys

    from evalcore.store import connect

    db = tmp_path / "s.duckdb"
    connect(db).close()
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, sys; c = duckdb.connect({str(db)!r}); "
                               "print('held', flush=True); sys.stdin.readline(); c.close()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    command = [sys.executable, "-m", "evalcore", "summary", "--db", str(db)]
    env = {**os.environ, "EVALCORE_LOCK_WAIT": "0.5"}
    quick = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    # one sentence naming the holder and the setting, not DuckDB's text (the holder's executable, a docs link)
    told = quick.stderr.strip().splitlines()[-1]
    assert quick.returncode == 1 and told.startswith(
        f"error: another process (pid {holder.pid}) held the store s.duckdb longer than this waits (0.5 s), so "
        "nothing was done; try again when it has finished"), quick.stderr
    assert "EVALCORE_LOCK_WAIT" in told and "IO Error" not in quick.stderr and "Traceback" not in quick.stderr
    env["EVALCORE_LOCK_WAIT"] = "60"
    patient = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    while "waiting for" not in (line := patient.stderr.readline()):
        assert line, "the command never said it was waiting"
    holder.communicate("go\n", timeout=30)   # the holder lets go: the waiting command gets in
    out, err = patient.communicate(timeout=60)
    assert patient.returncode == 0, err
    assert "another process is using it" in line


def test_the_stamp_pages_cache_on_moves_with_the_data_and_per_dataset(con, tmp_path):
    """Pages' caches are keyed on store.stamp, read without opening the store: a write to dataset b leaves
    dataset a's stamp as it was; a write to a moves a's; a write not confined to one dataset moves both; the
    whole-store stamp moves with every write; a job's progress (no revision bump) moves none."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.services import jobs
    from evalcore.store import bump_revision, stamp
    from support import write_jsonl

    path = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]

    def items(dataset: str, n: int) -> None:
        import_items(con, write_jsonl(tmp_path / f"{dataset}{n}.jsonl", [
            {"item_id": f"{dataset}{n}", "dataset": dataset, "track": f"{dataset}/chitchat", "context": ["你好"],
             "references": ["好"]}]))

    items("a", 1)
    items("b", 1)
    a, b, every = stamp(path, "a"), stamp(path, "b"), stamp(path)
    items("b", 2)
    assert stamp(path, "a") == a and stamp(path, "b") != b and stamp(path) != every
    a, b, every = stamp(path, "a"), stamp(path, "b"), stamp(path)
    items("a", 2)
    assert stamp(path, "a") != a and stamp(path, "b") == b and stamp(path) != every
    a, b, every = stamp(path, "a"), stamp(path, "b"), stamp(path)
    job = jobs.create(con, "a", [])
    jobs.set_fields(con, job, progress=0.5, detail="half way")   # committed, but no data changed
    assert (stamp(path, "a"), stamp(path, "b"), stamp(path)) == (a, b, every)
    with transaction(con):
        bump_revision(con)   # anything may have changed (an undo, a model deleted everywhere)
    assert stamp(path, "a") != a and stamp(path, "b") != b and stamp(path) != every
    a = stamp(path, "a")
    try:
        with transaction(con):
            bump_revision(con, "a")
            raise RuntimeError("rolled back")
    except RuntimeError:
        pass
    assert stamp(path, "a") == a   # nothing committed: nothing marked


def test_the_catalog_and_global_stamps_move_only_with_what_they_name(con, tmp_path):
    """stamp(scope="catalog") moves when a dataset or track is added, not with writes into tracks that exist;
    stamp(scope="global") moves with a write not confined to one dataset, not with one that is."""
    from evalcore.ingest.formats.items import import_items
    from evalcore.store import bump_revision, stamp
    from support import write_jsonl

    path = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]

    def items(name: str, track: str) -> None:
        import_items(con, write_jsonl(tmp_path / f"{name}.jsonl", [
            {"item_id": name, "dataset": track.split("/")[0], "track": track, "context": ["你好"], "references": ["好"]}]))

    items("a1", "a/chitchat")
    catalog, whole, everywhere = stamp(path, scope="catalog"), stamp(path, scope="global"), stamp(path)
    items("a2", "a/chitchat")   # one more item of a track that exists
    assert stamp(path, scope="catalog") == catalog and stamp(path, scope="global") == whole and stamp(path) != everywhere
    items("a3", "a/knowledge")   # a new track
    assert stamp(path, scope="catalog") != catalog and stamp(path, scope="global") == whole
    catalog = stamp(path, scope="catalog")
    items("b1", "b/chitchat")   # a new dataset
    assert stamp(path, scope="catalog") != catalog and stamp(path, scope="global") == whole
    catalog = stamp(path, scope="catalog")
    with transaction(con):
        bump_revision(con)   # a write not confined to one dataset (an undo, an external metric registered)
    assert stamp(path, scope="global") != whole and stamp(path, scope="catalog") == catalog
    with pytest.raises(ValueError):
        stamp(path, "a", scope="catalog")


def test_storage_says_what_takes_the_space(toy):
    """evalcore storage: every used and free block of the file is accounted for, per table and column."""
    from evalcore.scoring import score
    from evalcore.store.queries import storage

    score(toy, dataset="toy", progress=False)
    toy.execute("CHECKPOINT")   # written to the file's blocks
    out = storage(toy)
    size = toy.execute("PRAGMA database_size").df().iloc[0]
    assert out["bytes"].sum() == (size["used_blocks"] + size["free_blocks"]) * size["block_size"]
    cols = out.set_index(["table", "column"])
    assert cols.loc[("metric_scores", "text_key"), "rows"] == toy.execute("SELECT count(*) FROM metric_scores").fetchall()[0][0]
    assert cols.loc[("responses", "text"), "rows"] == 3 and cols.loc[("responses", "text"), "bytes"] > 0


def test_the_value_cache_keeps_one_row_per_key_without_an_index(tmp_path):
    """metric_scores has no index (migration 15: DuckDB holds a written table's whole index in memory); its
    writer keeps (signature, text_key) unique: a key stored already, or repeated in one write, is one row."""
    import pandas as pd

    from evalcore.store import insert_frame

    con = connect(tmp_path / "s.duckdb")
    assert con.execute("SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'metric_scores' "
                       "AND constraint_type = 'PRIMARY KEY'").fetchall()[0][0] == 0
    first = pd.DataFrame({"signature": ["s", "s"], "text_key": ["a", "b"], "value": [0.5, 0.25]})
    assert insert_frame(con, "metric_scores", first, ignore=True) == 2
    # a and b stored already (their stored values stand); c twice in this write; d once; c under another signature
    second = pd.DataFrame({"signature": ["s", "s", "s", "s", "s", "t"], "text_key": ["a", "b", "c", "c", "d", "c"],
                           "value": [9.0, 9.0, 0.75, 0.75, 1.0, 0.5]})
    assert insert_frame(con, "metric_scores", second, ignore=True) == 3
    assert con.execute("SELECT signature, text_key, value FROM metric_scores ORDER BY ALL").fetchall() == [
        ("s", "a", 0.5), ("s", "b", 0.25), ("s", "c", 0.75), ("s", "d", 1.0), ("t", "c", 0.5)]
    con.close()


def test_migration_15_moves_the_value_cache_out_of_its_index(tmp_path):
    """A store at schema 14 (the value cache under a primary key) opened by this version: the same rows, no
    index, grouped by signature."""
    from evalcore.store.migrations import all_migrations

    path = tmp_path / "old.duckdb"
    old = store_at_version(path, 14)
    rows = [("BLEU|x", "k2", 0.5, [1.0, 2.0], None), ("F1|x", "k1", None, None, "no reference"),
            ("BLEU|x", "k1", 0.25, [3.0], None)]
    old.executemany("INSERT INTO metric_scores VALUES (?, ?, ?, ?, ?)", rows)
    old.close()

    con = connect(path)
    assert schema_version(con) == len(all_migrations()) >= 15
    assert con.execute("SELECT * FROM metric_scores").fetchall() == [  # one signature after the other
        ("BLEU|x", "k2", 0.5, [1.0, 2.0], None), ("BLEU|x", "k1", 0.25, [3.0], None), ("F1|x", "k1", None, None, "no reference")]
    assert con.execute("SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'metric_scores' "
                       "AND constraint_type = 'PRIMARY KEY'").fetchall()[0][0] == 0
    con.close()


def test_a_memory_limit_for_duckdb_comes_from_the_environment(tmp_path, monkeypatch):
    """EVALCORE_DUCKDB_MEMORY bounds DuckDB's memory (its cache of read blocks included) in this process; a value
    that is not a size is refused with the variable's name, before any SQL sees it."""
    monkeypatch.setenv("EVALCORE_DUCKDB_MEMORY", "300MB")
    con = connect(tmp_path / "s.duckdb")
    assert con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] == "286.1 MiB"   # 300e6 / 2**20
    con.close()
    monkeypatch.setenv("EVALCORE_DUCKDB_MEMORY", "1GB'; SELECT 1; --")
    with pytest.raises(StoreError, match="EVALCORE_DUCKDB_MEMORY"):
        connect(tmp_path / "s.duckdb")


def test_the_scoring_commands_hold_duckdb_to_a_gigabyte_unless_told_otherwise(tmp_path, monkeypatch):
    """`score` and `worker` open stores under 1GB (DuckDB's default let the 10M scoring reach 6 GB by caching
    what it read); other commands keep DuckDB's default; EVALCORE_DUCKDB_MEMORY overrides both, `default`
    meaning DuckDB's own. An upgrade runs under DuckDB's default and the limit holds again after it."""
    from evalcore import cli
    from evalcore.cli import running
    from evalcore.store import memory_limit
    from evalcore.store import opening as store_module

    monkeypatch.delenv("EVALCORE_DUCKDB_MEMORY", raising=False)
    seen = {}
    monkeypatch.setattr(running, "run", lambda args: seen.setdefault(args.command, memory_limit()) and 0)
    db = str(tmp_path / "s.duckdb")
    cli.main(["score", "--db", db])
    cli.main(["worker", "--db", db])
    cli.main(["leaderboard", "--db", db, "--dataset", "d"])
    assert seen == {"score": "1GB", "worker": "1GB", "leaderboard": ""}
    assert memory_limit() == ""   # not left behind for the next command in this process
    monkeypatch.setenv("EVALCORE_DUCKDB_MEMORY", "default")
    seen.clear()
    cli.main(["score", "--db", db])
    assert seen == {"score": ""}

    monkeypatch.delenv("EVALCORE_DUCKDB_MEMORY")
    old = tmp_path / "old.duckdb"
    store_at_version(old, 13).close()
    during, real_migrate = [], store_module.run_migrations
    monkeypatch.setattr(store_module, "run_migrations", lambda con, pending: during.append(
        con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]) or real_migrate(con, pending))

    def upgraded(args):
        con = connect(old)
        seen["upgraded"] = [con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0], schema_version(con)]
        con.close()
        return 0

    monkeypatch.setattr(running, "run", upgraded)
    cli.main(["score", "--db", str(old)])
    assert during and during[0] != "953.6 MiB"   # the upgrade under DuckDB's default
    assert seen["upgraded"] == ["953.6 MiB", LATEST]   # 1e9 / 2**20, once migrated 13 -> latest


def test_a_page_run_told_the_store_is_busy_is_not_made_to_wait_again(tmp_path, monkeypatch):
    """Issue 46, item 12: an annotator's click while another process held the store waited out PAGE_WAIT in the click
    and again in the page after it (62 s) before a traceback. A run's cursor that could not be had is refused at once
    for the rest of that run with the same one sentence (StoreBusy, naming the holder), and waited for anew in the
    next run."""
    import subprocess
    import sys
    import time

    from evalcore.core.errors import StoreBusy
    from evalcore.store import connect
    from pages.kit import runtime
    from support import ROOT

    db = tmp_path / "s.duckdb"
    connect(db).close()
    monkeypatch.setenv("EVALCORE_DB", str(db))
    monkeypatch.setenv("EVALCORE_JOB_CHECK", "3600")
    monkeypatch.setattr(runtime, "PAGE_WAIT", 0.5)
    runtime.cursor().execute("SELECT 1")   # the store prepared (once per process) while it is free
    runtime.release()
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, sys; c = duckdb.connect({str(db)!r}); "
                               "print('held', flush=True); sys.stdin.readline(); c.close()"],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        con = runtime.cursor()
        began = time.perf_counter()
        with pytest.raises(StoreBusy) as first:
            con.execute("SELECT 1")   # the click: waits PAGE_WAIT
        waited = time.perf_counter() - began
        began = time.perf_counter()
        with pytest.raises(StoreBusy) as again:
            con.execute("SELECT 1")   # the page after it, in the same run: told at once
        assert time.perf_counter() - began < 0.2 <= waited
        assert str(again.value) == str(first.value)
        assert str(first.value).startswith(f"another process (pid {holder.pid}) held the store s.duckdb longer than "
                                           "this waits (0.5 s), so nothing was done")
        runtime.release()   # the run ends; the next one waits again
        began = time.perf_counter()
        with pytest.raises(StoreBusy):
            runtime.cursor().execute("SELECT 1")
        assert time.perf_counter() - began >= 0.4
    finally:
        holder.communicate("go\n", timeout=30)
        runtime.release()
    assert runtime.cursor().execute("SELECT 1").fetchall() == [(1,)]
    runtime.release()


def test_a_store_failure_in_a_fragment_is_its_sentence_and_the_cursor_goes_back(tmp_path, monkeypatch):
    """A fragment's rerun (the Annotate page's unit) runs without app.py around it: runtime.in_fragment shows a
    StoreError as its sentence instead of raising it, and gives back the run's cursor either way."""
    from evalcore.core.errors import DiskFull
    from evalcore.store import Shared, connect
    from pages.kit import runtime

    db = tmp_path / "s.duckdb"
    connect(db).close()
    monkeypatch.setenv("EVALCORE_DB", str(db))
    monkeypatch.setenv("EVALCORE_JOB_CHECK", "3600")
    shown = []
    monkeypatch.setattr(runtime, "store_trouble", shown.append)

    def click():
        runtime.cursor().execute("SELECT 1")
        raise DiskFull("the disk holding the store is full: nothing of this write was stored")

    runtime.in_fragment(click)
    assert [str(e) for e in shown] == ["the disk holding the store is full: nothing of this write was stored"]
    deadline = time.monotonic() + 60   # the job check's first look (jobs.watch, started with the first cursor)
    while Shared.of(db).users and time.monotonic() < deadline:   # holds a cursor of its own for a moment
        time.sleep(0.05)
    assert Shared.of(db).users == 0
    with pytest.raises(ValueError):   # anything else is raised as it is
        runtime.in_fragment(lambda: (_ for _ in ()).throw(ValueError("a bug")))
