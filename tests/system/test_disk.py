"""The store's disk misbehaving, on real file systems: a read-only mount still serves the read commands (and a
server, read-only), and a full disk (a small tmpfs: a real ENOSPC from the kernel) is one sentence that is true.

What DuckDB 2.0 guarantees, and what the tests below prove for evalcore's writes (evalcore.store.NEVER_SKIP_WAL,
store_error): a COMMIT writes the transaction to the write-ahead log and fsyncs it before it counts; a failure
up to there (a statement, the bulk blocks flushed at commit, the log write) rolls it back, and then "nothing of
this write was stored" must leave every table as it was. A commit that makes DuckDB checkpoint (the log past 16 MiB)
checkpoints after the log is written; when that checkpoint fails DuckDB says the commit "succeeded and is durable",
and then "this write was stored" must leave every table as a run with room leaves it. Each outcome is checked as a
user would: the store opened read-only on the still-full disk, then opened again after space is freed (the log
replayed and merged), against the store before and the store a roomy run made. Mounting needs root (mount(8)); the
tests skip without it."""
from __future__ import annotations

import asyncio
import csv
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from evalcore.cli import main
from evalcore.core.errors import DiskFull, ReadOnlyStore, StoreError
from evalcore.store import connect, lease, stamp, transaction
from support import ROOT, copy_default_store, free_port

NOTHING = "error: the disk holding the store is full: nothing of this write was stored, and the store is as it was"
STORED = "error: this write was stored: it is in the store's write-ahead log"


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"mount {' '.join(args)} is not allowed here: {done.stderr.strip()}")


@contextmanager
def mounted(*args: str, where: Path):
    where.mkdir(parents=True, exist_ok=True)
    _mount(*args, str(where))
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.fixture
def needs_root():
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a read-only or a small file system needs mount(8) as root")


def leave_free(disk: Path, free: int) -> Path:
    """Fill `disk` (a tmpfs) until `free` bytes are left; the filler's path (unlink it to free the space)."""
    filler = disk / "filler"
    filler.unlink(missing_ok=True)
    room = shutil.disk_usage(disk).free - free
    assert room > 0, (disk, free)
    with open(filler, "wb") as fh:
        os.posix_fallocate(fh.fileno(), 0, room)
    return filler


def snapshot(db: Path, *, read_only: bool = False) -> dict[str, tuple[int, int, int]]:
    """{table: (rows, hash of every row, hash of every row without its TIMESTAMP columns)} over every table of
    the store, opened as a command opens it (read-write replays and merges the log; read-only replays it)."""
    con = connect(db, read_only=read_only, wait=30)
    try:
        out = {}
        for schema, table in con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE NOT temporary "
                                          "ORDER BY 1, 2").fetchall():
            cols = con.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = ? "
                               "AND table_name = ? ORDER BY ordinal_position", [schema, table]).fetchall()
            every = ", ".join(f'"{c}"' for c, _ in cols)
            stable = ", ".join(f'"{c}"' for c, t in cols if not t.upper().startswith("TIMESTAMP")) or "1"
            out[table] = tuple(con.execute(
                f"SELECT count(*), coalesce(sum(hash(struct_pack({every}))::HUGEINT), 0), "
                f'coalesce(sum(hash(struct_pack({stable}))::HUGEINT), 0) FROM "{schema}"."{table}"').fetchall()[0])
        return out
    finally:
        con.close()


def same(snap: dict, other: dict, *, timestamps: bool = True) -> bool:
    """Every table equal: all columns (the store before), or all but the times a run writes (a roomy run's store)."""
    return snap.keys() == other.keys() and all(
        (snap[t][0], snap[t][1 if timestamps else 2]) == (other[t][0], other[t][1 if timestamps else 2]) for t in snap)


def _sizes(db: Path) -> tuple[int, int]:
    wal = Path(f"{db}.wal")
    return db.stat().st_size, wal.stat().st_size if wal.exists() else 0


def measure(template: Path, argv: list[str], where: Path, monkeypatch, capsys) -> dict:
    """The import run with room to spare, in two steps so its needs show: committed with DuckDB's checkpoints held
    off (`blocks`: what it wrote into the store file before the commit, bulk row groups; `log`: its write-ahead
    log), then merged by the next opening (`merge`: what that checkpoint added to the file). And the store it
    leaves (`after`)."""
    import duckdb

    db = where / "reference.duckdb"
    shutil.copyfile(template, db)
    base = db.stat().st_size
    opened = duckdb.connect

    def held_off(path, read_only=False, **kwargs):
        con = opened(path, read_only=read_only, **kwargs)
        if not read_only:
            con.execute("SET checkpoint_threshold = '1TB'")
            con.execute("PRAGMA disable_checkpoint_on_shutdown")
        return con

    with monkeypatch.context() as m:
        m.setattr(duckdb, "connect", held_off)
        code = main([*argv, "--db", str(db)])
        err = capsys.readouterr().err
        assert code == 0, err
    size, log = _sizes(db)
    after = snapshot(db)   # opened and closed normally: the log merged
    assert not Path(f"{db}.wal").exists()
    return {"blocks": size - base, "log": log, "merge": max(db.stat().st_size - size, 0), "after": after}


def attempt(template: Path, argv: list[str], disk: Path, free: int, before: dict, after: dict, capsys) -> str:
    """The import on a copy of `template` on `disk` with `free` bytes left: its outcome ('nothing', 'stored' or
    'imported'), after checking that what it said is what the store holds, on the full disk and after space is
    freed. The copy and the filler are removed after."""
    db = disk / "store.duckdb"
    shutil.copyfile(template, db)
    filler = leave_free(disk, free)
    marks = stamp(db)
    try:
        code = main([*argv, "--db", str(db)])
        err = capsys.readouterr().err
        assert "Traceback" not in err, err
        said = [line for line in err.splitlines() if line.startswith("error:")]
        if code == 0:
            outcome = "imported"
        else:
            assert code == 1 and len(said) == 1, err
            outcome = "nothing" if said[0].startswith(NOTHING) else "stored" if said[0].startswith(STORED) else err
        assert outcome in ("nothing", "stored", "imported"), outcome
        # what it said, as the store is seen on the still-full disk and after space is freed
        expected = before if outcome == "nothing" else after
        assert same(snapshot(db, read_only=True), expected, timestamps=outcome == "nothing"), (outcome, err)
        if outcome != "nothing":
            assert stamp(db) != marks, "pages would not see what the store holds"
        filler.unlink()
        assert same(snapshot(db), expected, timestamps=outcome == "nothing"), (outcome, err)
        assert not Path(f"{db}.wal").exists(), "the next opening with room merges the log into the store"
        return outcome
    finally:
        filler.unlink(missing_ok=True)
        for path in disk.iterdir():
            path.unlink()


def ladder(needs: dict) -> dict[str, int]:
    """Free space that stops the import before its log is written, between the log and the checkpoint after it,
    and none at all (room for everything, twice)."""
    written = needs["blocks"] + needs["log"]
    return {"nothing": written // 2, "stored": written + max(needs["merge"] // 3, 512 * 1024),
            "imported": 2 * (written + needs["merge"]) + (8 << 20)}


def votes_file(template: Path, path: Path) -> Path:
    """55,722 votes as in issue 46: 9,287 items of demo-zh that both its models answered, 3 annotators, 2 dimensions."""
    con = connect(template, read_only=True)
    try:
        items = [i for (i,) in con.execute("SELECT item_id FROM responses WHERE dataset = 'demo-zh' GROUP BY item_id "
                                           "HAVING count(*) = 2 ORDER BY item_id LIMIT 9287").fetchall()]
    finally:
        con.close()
    assert len(items) == 9287
    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["item_id", "model_a", "model_b", "winner", "annotator", "dimension"])
        for n, item in enumerate(items):
            for annotator in ("ann1", "ann2", "ann3"):
                for dim in ("Info", "Coh"):
                    out.writerow([item, "tfidf-retrieval", "bm25-retrieval", ("a", "b", "tie")[n % 3], annotator, dim])
    return path


def test_a_full_disk_is_one_true_sentence_at_each_stage(tmp_path, default_store_file, needs_root, monkeypatch,
                                                         capsys):
    """Issue 46's case: 55,722 votes into the 28 MB default store. Too little room for the log: nothing stored, every
    table as before; room for the log but not the checkpoint after it: stored, every table as a roomy run leaves it
    (before the fix it said "committed to the store's log" with no log and no rows: DuckDB had skipped the log for a
    checkpoint that failed); room for both: imported."""
    template = copy_default_store(default_store_file, tmp_path / "template.duckdb")
    argv = ["import", "votes", str(votes_file(template, tmp_path / "votes.csv")), "--dataset", "demo-zh"]
    before = snapshot(template)
    needs = measure(template, argv, tmp_path, monkeypatch, capsys)
    assert needs["log"] > 1 << 20 and needs["merge"] > 1 << 20, needs   # both stages are reached at these sizes
    levels = ladder(needs)
    size = template.stat().st_size + levels["imported"] + (16 << 20)
    with mounted("-t", "tmpfs", "-o", f"size={size}", "tmpfs", where=tmp_path / "small") as small:
        got = {want: attempt(template, argv, small, free, before, needs["after"], capsys)
               for want, free in levels.items()}
    assert got == {"nothing": "nothing", "stored": "stored", "imported": "imported"}, (got, levels, needs)


def _task_store(default_store_file, path: Path) -> tuple[Path, int]:
    from evalcore.services.tasks import create_task

    db = copy_default_store(default_store_file, path)
    con = connect(db)
    try:
        task_id = create_task(con, lang="en", dataset="demo-zh", mode="absolute", dimensions=["Info", "Coh"], items=4, per_item=2)
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return db, task_id


def test_annotate_clicks_on_a_full_disk_are_one_sentence_and_change_nothing(tmp_path, default_store_file, needs_root):
    """Every write of the Annotate page on a full disk (the login's claim of a unit, a rating, Skip, Flag), through
    the dashboard's own connection (store.lease): DiskFull with the one sentence, the store as it was. Then a write
    that was stored but left DuckDB's instance invalidated (its checkpoint failed): the next click is a sentence,
    never DuckDB's FatalException, and once the page's cursors are back the instance is opened anew and a click
    works again when there is room."""
    from evalcore.pagedata import annotation as ann

    template, task_id = _task_store(default_store_file, tmp_path / "template.duckdb")
    with mounted("-t", "tmpfs", "-o", "size=160m", "tmpfs", where=tmp_path / "small") as small:
        db = small / "store.duckdb"
        shutil.copyfile(template, db)
        con = lease(db, wait=5)
        task = ann.task(con, task_id)
        unit = ann.next_unit(con, task, "alice")   # claimed while there is room
        con.close()
        before = snapshot(db)
        filler = leave_free(small, 0)
        clicks = {"login": lambda c: ann.next_unit(c, task, "bob"),
                  "rating": lambda c: ann.answer(c, task, unit, "alice", "Info", 2.0),
                  "skip": lambda c: ann.skip(c, task, unit, "alice"),
                  "flag": lambda c: ann.flag(c, task, unit, "alice", "the context is cut")}
        for name, click in clicks.items():
            con = lease(db, wait=5)
            try:
                with pytest.raises(DiskFull) as told:
                    click(con)
            finally:
                con.close()
            assert str(told.value).startswith(NOTHING.removeprefix("error: ")) and not told.value.stored, name
            assert "\n" not in str(told.value) and str(small) not in str(told.value), name
            assert same(snapshot(db, read_only=True), before), name
        # a stored write whose checkpoint failed invalidates DuckDB's instance: a page run still holding a cursor
        filler.unlink()
        holder = lease(db, wait=5)
        votes = votes_file(template, tmp_path / "votes.csv")
        needs_log = 12 << 20   # the votes' log is 9.3 MB; the checkpoint after it needs more than the rest
        filler = leave_free(small, needs_log)
        from evalcore.ingest.formats.votes import import_votes

        writer = lease(db, wait=5)
        with pytest.raises(DiskFull) as told:
            import_votes(writer, votes, dataset="demo-zh")
        writer.close()
        assert told.value.stored, told.value
        with pytest.raises(StoreError) as refused:   # the page still holding its cursor clicks
            ann.answer(holder, task, unit, "alice", "Info", 2.0)
        assert "opened anew" in str(refused.value) and "FATAL" not in str(refused.value)
        with pytest.raises(StoreError, match="opened anew"):   # no new cursor of the spoiled instance meanwhile
            lease(db, wait=0.3)
        holder.close()
        filler.unlink()
        con = lease(db, wait=5)   # opened anew: the stored votes are there, and a click is written
        try:
            assert con.execute("SELECT count(*) FROM pairwise_judgments WHERE dataset = 'demo-zh'").fetchall() == [
                (55_722,)]
            ann.answer(con, task, unit, "alice", "Info", 2.0)
            assert ann.my_answers(con, task, unit, "alice") == {"Info": 2.0}
        finally:
            con.close()


def test_read_commands_work_on_a_read_only_store(tmp_path, default_store_file, needs_root, capsys):
    """Item 22: on a read-only mount every command that only reads works (task list, show and export among them),
    one that writes is refused with one sentence, `evalcore worker` too; the dashboard's shared instance opens it
    read-only and a write through it is refused with ReadOnlyStore."""
    from evalcore.pagedata import annotation as ann

    _task_store(default_store_file, tmp_path / "rw" / "store.duckdb")
    source = tmp_path / "rw"
    with mounted("--bind", str(source), where=tmp_path / "ro") as ro:
        _mount("-o", "remount,ro,bind", str(ro))
        store = str(ro / "store.duckdb")
        with pytest.raises(OSError):
            (ro / "probe").touch()  # the mount is really read-only
        con = connect(store, read_only=True)
        task_id = con.execute("SELECT max(task_id) FROM tasks").fetchall()[0][0]
        con.close()
        for command in (["summary"], ["models"], ["jobs"], ["submissions"],
                        ["leaderboard", "--dataset", "msde-paper"], ["trust", "--dataset", "msde-paper"],
                        ["correlate", "--dataset", "msde-paper", "--origin", "published"],
                        ["task", "list"], ["task", "show", str(task_id)], ["task", "export", str(task_id)]):
            assert main([*command, "--db", store]) == 0, (command, capsys.readouterr().err)
        capsys.readouterr()
        # a command that writes says why in one line, no traceback
        for command in (["delete-model", "bm25", "--yes"], ["task", "close", str(task_id)], ["worker"]):
            assert main([*command, "--db", store]) == 1, command
            err = capsys.readouterr().err
            assert err.startswith(f"error: {store} cannot be written here (a read-only file system"), err
            assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        # the dashboard's connection: pages read, a write is one sentence
        con = lease(store, wait=5)
        try:
            assert con.read_only
            task = ann.task(con, task_id)
            assert task_id in ann.open_tasks(con)["task_id"].tolist()
            with pytest.raises(ReadOnlyStore, match="^the store is open read-only here .*: nothing was stored$"):
                ann.next_unit(con, task, "alice")
            with pytest.raises(ReadOnlyStore):
                with transaction(con):
                    con.execute("UPDATE revision SET n = n + 1")
        finally:
            con.close()


@pytest.mark.slow   # a Streamlit server's start: ~10 s
def test_a_server_on_a_read_only_store_says_so_and_serves_its_pages(tmp_path, default_store_file, needs_root):
    """Item 22: `evalcore app` on a read-only mount starts (no OSError on its lock files), says at start that it
    serves the store read-only, serves pages without an error, and says so in every page's sidebar."""
    sys.path.insert(0, str(ROOT))
    from bench.protocol import load

    source = tmp_path / "rw"
    copy_default_store(default_store_file, source / "store.duckdb")
    with mounted("--bind", str(source), where=tmp_path / "ro") as ro:
        _mount("-o", "remount,ro,bind", str(ro))
        port = free_port()
        log = tmp_path / "server.log"
        with open(log, "w") as out:
            server = subprocess.Popen([sys.executable, "-m", "evalcore", "app", "--db", str(ro / "store.duckdb"),
                                       "--port", str(port)], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        try:
            from bench.annotate import healthy

            healthy(f"http://127.0.0.1:{port}", tries=120)
            took, error, content = asyncio.run(load(f"http://127.0.0.1:{port}", "leaderboard",
                                                    "dataset=msde-paper", content=True))
            assert error is None, error
            assert b"serves its store read-only" in content and b"BLEU" in content
        finally:
            server.terminate()
            server.wait(timeout=60)
        text = log.read_text()
        assert "cannot be written here (a read-only file system, or a file this user may not write): serving it " \
            "read-only" in text, text
        assert "Traceback" not in text and "OSError" not in text, text
