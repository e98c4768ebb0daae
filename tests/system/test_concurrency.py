"""Writes that never collide, one database instance per process, an import's job in its own transaction,
one server per store (issue 29)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

import duckdb
import pytest

from bench.annotate import healthy
from evalcore.ingest.formats.responses import import_responses
from evalcore.services import jobs
from evalcore.store import (
    ServerLockHeld,
    Shared,
    WriteConflict,
    connect,
    lease,
    retrying,
    server_lock,
    transaction,
)
from support import ROOT, free_port


def _db(con) -> str:
    return con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]


def test_many_threads_open_and_close_cursors_never_meet_a_closing_instance(toy):
    """8 threads x 200 open/query/close on the shared instance: the instance opens and closes many times
    (the count of users goes to 0 between bursts) and never meets its own closing file ('already
    attached'); the store's own handover retry is not used on this path."""
    db = _db(toy)
    toy.close()
    errors: list[BaseException] = []
    opened = []
    start = threading.Barrier(8)

    def work():
        start.wait()
        for i in range(200):
            try:
                c = lease(db, wait=30)
                try:
                    opened.append(c.execute("SELECT count(*) FROM responses").fetchall()[0][0])
                finally:
                    c.close()
                if i % 7 == 0:
                    time.sleep(0.001)  # let the count fall to 0 now and then: the instance closes and reopens
            except BaseException as exc:  # noqa: BLE001 - every failure counts
                errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, f"{len(errors)} failures, first: {errors[0]!r}"
    assert opened == [3] * 1600
    shared = Shared.of(db)
    assert shared.users == 0 and not shared.is_open   # the last one closed it: the file is free again
    # another process can take the file now (a CLI command between page loads)
    out = subprocess.run([sys.executable, "-m", "evalcore", "summary", "--db", db, "--format", "csv"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_a_lease_dropped_without_close_is_given_back(toy):
    db = _db(toy)
    toy.close()

    def forget():
        lease(db).execute("SELECT 1").fetchall()   # the lease is dropped at once, never closed

    t = threading.Thread(target=forget)
    t.start()
    t.join()
    import gc
    gc.collect()
    assert Shared.of(db).users == 0 and not Shared.of(db).is_open


def _model_file(path: Path, model: str) -> Path:
    path.write_text(f"item_id,model,response\nt1,{model},天气不错 {model}\nt2,{model},你好 {model}\n", encoding="utf-8")
    return path


def test_two_threads_importing_into_one_track_at_once_both_land(toy, tmp_path):
    """Two page runs (threads of one server) import different models into the same track at the same
    moment, each recording its scoring job in the import's transaction: 10 rounds, every upload lands
    (or is told to retry), nothing is lost, no raw exception."""
    db = _db(toy)
    toy.close()
    outcome: dict[str, str] = {}
    for r in range(10):
        go = threading.Barrier(2)

        def upload(model: str):
            f = _model_file(tmp_path / f"{model}.csv", model)
            c = lease(db, wait=30)
            try:
                go.wait()
                retrying(import_responses, c, f, dataset="toy", track="toy/chitchat",
                         then=lambda cc, tracks: jobs.create(cc, "toy", jobs.scoring_steps(cc, "toy", tracks),
                                                             model=model))
                outcome[model] = "landed"
            except WriteConflict:
                outcome[model] = "retry"
            except BaseException as exc:  # noqa: BLE001 - a traceback on the page
                outcome[model] = f"error: {exc!r}"
            finally:
                c.close()

        pair = [f"r{r}-a", f"r{r}-b"]
        threads = [threading.Thread(target=upload, args=(m,)) for m in pair]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    assert not [v for v in outcome.values() if v.startswith("error")], outcome
    con = connect(db)
    try:
        stored = dict(con.execute("SELECT model, count(*) FROM responses WHERE model LIKE 'r%' GROUP BY 1").fetchall())
        queued = dict(con.execute("SELECT model, count(*) FROM jobs WHERE state = 'queued' GROUP BY 1").fetchall())
    finally:
        con.close()
    landed = {m for m, v in outcome.items() if v == "landed"}
    assert len(outcome) == 20 and set(stored) == landed   # told to retry: nothing written; landed: all of it
    assert all(n == 2 for n in stored.values())
    assert {m for m, n in queued.items() if n == 1} == landed   # each landed upload with exactly its one job
    print(f"concurrent imports: {len(landed)} of 20 landed, {20 - len(landed)} told to retry")


def test_a_write_conflict_is_retried_then_reported_never_raised(toy):
    calls = []

    def collide():
        calls.append(1)
        raise duckdb.TransactionException("TransactionContext Error: Conflict on update!")

    with pytest.raises(WriteConflict, match="nothing of it was written. Try again"):
        retrying(collide, backoff=0.001)
    assert len(calls) == 4
    calls.clear()

    def once():
        calls.append(1)
        if len(calls) == 1:
            raise duckdb.TransactionException("TransactionContext Error: Conflict on update!")
        return "ok"

    assert retrying(once, backoff=0.001) == "ok" and len(calls) == 2
    with pytest.raises(duckdb.TransactionException, match="other"):   # not a conflict: not retried
        retrying(lambda: (_ for _ in ()).throw(duckdb.TransactionException("other")), backoff=0.001)


def test_writes_of_one_process_wait_for_each_other(toy):
    """transaction() holds the process's write lock: a second writer waits for the first's COMMIT."""
    db = _db(toy)
    toy.close()
    a, b = lease(db), lease(db)
    order = []
    inside = threading.Event()

    def second():
        inside.wait()
        with transaction(b):
            order.append("b")
            b.execute("UPDATE revision SET n = n + 1")

    t = threading.Thread(target=second)
    t.start()
    with transaction(a):
        a.execute("UPDATE revision SET n = n + 1")
        inside.set()
        time.sleep(0.3)   # without the lock, b's update of the same row would be 'Conflict on update!'
        order.append("a")
    t.join(timeout=30)
    assert order == ["a", "b"]
    a.close()
    b.close()


KILLED_IMPORT = textwrap.dedent("""
    import os, signal, sys
    from evalcore.services import jobs
    from evalcore.ingest.formats.responses import import_responses
    from evalcore.store import connect
    con = connect(sys.argv[1])
    def then(c, tracks):
        jobs.create(c, "toy", jobs.scoring_steps(c, "toy", tracks), model="killed")
    import_responses(con, sys.argv[2], dataset="toy", track="toy/chitchat", then=then)
    if sys.argv[3] == "after-commit":
        os.kill(os.getpid(), signal.SIGKILL)   # dies right after the commit: the job was never started
    """)


def _big_file(path: Path, models: int) -> Path:
    lines = ["item_id,model,response"] + [f"{i},killed-{m},回答 {m} {i}" for m in range(models) for i in ("t1", "t2")]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow   # SIGKILLs an import at six moments (12 s): the slow set's kind of test
def test_a_killed_import_leaves_its_job_queued_and_a_server_start_runs_it(toy, tmp_path):
    db = _db(toy)
    toy.close()
    # SIGKILL at moments spread over an import of 8,000 rows: responses stored <=> their job recorded
    big = _big_file(tmp_path / "big.csv", 4000)
    seen = set()
    for delay in (0.5, 1.0, 1.5, 2.0, 2.5, 3.5):
        proc = subprocess.Popen([sys.executable, "-c", KILLED_IMPORT, db, str(big), "run"], cwd=ROOT)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        con = connect(db)
        try:
            stored = con.execute("SELECT count(*) FROM responses WHERE model LIKE 'killed-%'").fetchall()[0][0]
            recorded = con.execute("SELECT count(*) FROM jobs").fetchall()[0][0]
            if stored:
                con.execute("DELETE FROM responses WHERE model LIKE 'killed-%'")  # the next round starts clean
                con.execute("DELETE FROM jobs")
        finally:
            con.close()
        assert (stored, recorded) in {(0, 0), (8000, 1)}
        seen.add(stored)
    print(f"killed imports: outcomes {sorted(seen)}")
    # killed right after the commit: its job stands queued (shown as interrupted) until a server runs it
    one = _model_file(tmp_path / "one.csv", "killed")
    out = subprocess.run([sys.executable, "-c", KILLED_IMPORT, db, str(one), "after-commit"], cwd=ROOT)
    assert out.returncode == -signal.SIGKILL
    con = connect(db)
    try:
        row = jobs.listing(con).iloc[0]
        assert (row["model"], row["state"]) == ("killed", "interrupted")
        assert con.execute("SELECT count(*) FROM system_scores WHERE model = 'killed'").fetchall()[0][0] == 0
    finally:
        con.close()
    started = jobs.recover(db)   # what the server does at start (app.py) and every EVALCORE_JOB_CHECK s
    assert len(started) == 1
    started[0].join(timeout=120)
    assert jobs.recover(db) == []    # done: nothing left to pick up
    con = connect(db)
    try:
        row = jobs.listing(con).iloc[0]
        assert (row["model"], row["state"]) == ("killed", "done")
        assert con.execute("SELECT count(*) FROM system_scores WHERE model = 'killed'").fetchall()[0][0] > 0
    finally:
        con.close()


def test_a_job_is_started_once_however_often_it_is_asked(toy):
    db = _db(toy)
    job = jobs.create(toy, "toy", jobs.scoring_steps(toy, "toy", ["toy/chitchat"]), model="m1")
    toy.close()
    first = jobs.start(db, job)
    assert jobs.start(db, job) is first and jobs.recover(db) == []
    first.join(timeout=120)


HOLD = ("import sys, time; from evalcore.store import server_lock; server_lock(sys.argv[1]); print('held', flush=True); "
        "time.sleep(60)")


def test_a_second_server_on_a_store_is_refused(toy):
    """One server per store: <store>.server.lock, an OS lock held for the server's life; a CLI command
    is no server and goes on using the store."""
    db = _db(toy)
    toy.close()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, db], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ServerLockHeld, match=f"another dashboard server \\(pid {holder.pid}\\) already serves "):
            server_lock(db)
        out = subprocess.run([sys.executable, "-m", "evalcore", "summary", "--db", db, "--format", "csv"],
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "toy/chitchat" in out.stdout
    finally:
        holder.kill()
        holder.wait()
    assert server_lock(db) == Path(f"{db}.server.lock")   # the holder is gone (killed): the lock went with it
    assert server_lock(db) == Path(f"{db}.server.lock")   # taken again by its holder: no-op


@pytest.mark.slow
def test_a_server_start_runs_a_killed_imports_job_and_a_second_server_is_refused(toy, tmp_path):
    db = _db(toy)
    toy.close()
    one = _model_file(tmp_path / "one.csv", "killed")
    subprocess.run([sys.executable, "-c", KILLED_IMPORT, db, str(one), "after-commit"], cwd=ROOT)
    env = {**os.environ, "EVALCORE_DB": db}
    port = free_port()
    log = open(tmp_path / "server.log", "w")
    first = subprocess.Popen([sys.executable, "app.py", "--server.port", str(port), "--server.headless", "true",
                              "--browser.gatherUsageStats", "false"], cwd=ROOT, env=env, stdout=log,
                             stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        state = None
        while time.monotonic() < deadline:   # no visitor: the server's own start runs the queued job
            con = connect(db, read_only=True, wait=30)
            try:
                state = jobs.listing(con).iloc[0]["state"]
            finally:
                con.close()
            if state == "done":
                break
            time.sleep(1)
        assert state == "done", (tmp_path / "server.log").read_text()
        healthy(f"http://localhost:{port}", tries=60)
        second = subprocess.run([sys.executable, "app.py", "--server.port", str(free_port()),
                                 "--server.headless", "true"], cwd=ROOT, env=env, capture_output=True,
                                text=True, timeout=120)
        assert second.returncode == 2
        assert f"another dashboard server (pid {first.pid}) " in second.stderr and "Traceback" not in second.stderr
    finally:
        first.terminate()
        first.wait(timeout=30)
        log.close()


def _loads(base: str, pages: list[tuple[str, str]]) -> list[tuple[float, str | None, bytes]]:
    """Page loads over Streamlit's protocol, all at once (bench/protocol.py's client): (seconds, error, content)."""
    import asyncio

    from bench.protocol import load

    async def every():
        return await asyncio.gather(*(load(base, page, query, content=True) for page, query in pages))

    return asyncio.run(every())


@pytest.mark.slow   # three servers and a CLI import: ~40 s
def test_two_page_servers_share_one_store_and_a_third_is_refused(default_store_file, tmp_path):
    """`evalcore app --processes 2`: two page-serving processes on one store (README, "More than one page-serving
    process"). Both serve every page at once without an error; a model the CLI imports meanwhile is on both
    servers' Upload page ("Already in lccc/chitchat") at their next load; a further server on the store is
    refused; SIGTERM to the group stops both."""
    from support import copy_default_store

    db = str(copy_default_store(default_store_file, tmp_path / "store.duckdb"))
    port = free_port()
    while free_port() == port + 1:   # the second server's port must be free too
        port = free_port()
    log = open(tmp_path / "group.log", "w")
    group = subprocess.Popen([sys.executable, "-m", "evalcore", "app", "--db", db, "--port", str(port),
                              "--processes", "2"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    bases = [f"http://localhost:{port}", f"http://localhost:{port + 1}"]
    try:
        for base in bases:
            if not healthy(base):
                pytest.fail((tmp_path / "group.log").read_text())
        mix = [("", ""), ("leaderboard", "dataset=msde-paper&track=luge%2Fchitchat"), ("trust", "dataset=msde-paper"),
               ("correlations", "dataset=msde-paper&track=luge%2Fchitchat"), ("human", "dataset=engagement-en")]
        out = [_loads(base, mix * 2) for base in bases]
        assert [e for runs in out for _, e, _ in runs if e] == []
        csv = tmp_path / "new.csv"
        con = connect(db, wait=60)
        try:
            items = [r[0] for r in con.execute("SELECT item_id FROM items WHERE dataset = 'demo-zh' AND "
                                               "track = 'lccc/chitchat' ORDER BY item_id LIMIT 5").fetchall()]
        finally:
            con.close()
        csv.write_text("item_id,response\n" + "".join(f"{i},好的 {i}\n" for i in items), encoding="utf-8")
        cli = subprocess.run([sys.executable, "-m", "evalcore", "import", "responses", str(csv), "--db", db,
                              "--dataset", "demo-zh", "--track", "lccc/chitchat", "--model", "second-process-model"],
                             cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert cli.returncode == 0, cli.stderr
        for base in bases:
            (_, error, content), = _loads(base, [("upload", "dataset=demo-zh&track=lccc%2Fchitchat")])
            assert error is None and b"second-process-model" in content
        third = subprocess.run([sys.executable, "app.py", "--server.port", str(free_port()), "--server.headless", "true"],
                               cwd=ROOT, env={**os.environ, "EVALCORE_DB": db}, capture_output=True, text=True, timeout=120)
        holders = sorted([group.pid, *_children(group.pid)])   # the group's parent and its two servers, all alive
        assert len(holders) == 3
        assert third.returncode == 2 and f"another dashboard server (pids {', '.join(map(str, holders))}) already " \
            "serves" in third.stderr, third.stderr
    finally:
        group.send_signal(signal.SIGTERM)
        code = group.wait(timeout=60)
        log.close()
    assert code == 0, (tmp_path / "group.log").read_text()
    for base in bases:
        with pytest.raises(OSError):
            urllib.request.urlopen(f"{base}/_stcore/health", timeout=1)


def _children(pid: int) -> list[int]:
    return [int(k) for k in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _gone(pid: int) -> bool:
    """No thread of the process runs (a process whose main thread ended shows Z while its other threads run on)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for task in tasks:
        try:
            if Path(f"/proc/{pid}/task/{task}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z":
                return False
        except (OSError, IndexError):
            continue
    return True


@pytest.mark.slow   # a group of two servers, then one more: ~30 s
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the group's servers from Linux's /proc")
def test_a_killed_group_takes_its_servers_with_it(default_store_file, tmp_path):
    """Item 23: SIGKILL to `evalcore app --processes 2` (no signal reaches its servers from it) ends both servers
    within moments (PR_SET_PDEATHSIG, and their thread watching the parent), so their ports close, nothing holds
    the store's server lock, and a new `evalcore app` on the store starts (before: both kept serving, orphaned,
    and the new one was refused naming the dead parent)."""
    from support import copy_default_store

    db = str(copy_default_store(default_store_file, tmp_path / "store.duckdb"))
    port = free_port()
    while free_port() == port + 1:
        port = free_port()
    with open(tmp_path / "group.log", "w") as log:
        group = subprocess.Popen([sys.executable, "-m", "evalcore", "app", "--db", db, "--port", str(port),
                                  "--processes", "2"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    bases = [f"http://localhost:{port}", f"http://localhost:{port + 1}"]
    servers = []
    try:
        for base in bases:
            assert healthy(base), (tmp_path / "group.log").read_text()
        servers = _children(group.pid)
        assert len(servers) == 2
        group.kill()
        group.wait(timeout=30)
        deadline = time.monotonic() + 30
        while not all(_gone(pid) for pid in servers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert all(_gone(pid) for pid in servers), (tmp_path / "group.log").read_text()
        for base in bases:
            with pytest.raises(OSError):
                urllib.request.urlopen(f"{base}/_stcore/health", timeout=1)
        assert server_lock(db) == Path(f"{db}.server.lock")   # free: nobody holds it
    finally:
        for pid in servers:
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)


GROUP_HOLD = ("import os, subprocess, sys; from evalcore.store import server_lock, lock_descriptor; "
              "fd = lock_descriptor(server_lock(sys.argv[1])); "
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], pass_fds=(fd,), "
              "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
              "print(child.pid, flush=True); os._exit(0)")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the holders are read from Linux's /proc")
def test_a_refusal_names_the_live_holders_not_a_dead_parent(toy):
    """Item 23: a server refused because the lock is held names the processes that hold it now. Here the process
    that took the lock is gone and a child it handed the lock's open file to holds it: the child is named, and
    the dead process, whose pid the lock file records, is not."""
    db = _db(toy)
    toy.close()
    taker = subprocess.run([sys.executable, "-c", GROUP_HOLD, db], cwd=ROOT, capture_output=True, text=True, timeout=60)
    child = int(taker.stdout.strip())
    try:
        recorded = int(Path(f"{db}.server.lock").read_text().split()[0])   # the process that took it: gone
        assert recorded != child and _gone(recorded)
        with pytest.raises(ServerLockHeld, match=f"another dashboard server \\(pid {child}\\) already serves "):
            server_lock(db)
    finally:
        os.kill(child, signal.SIGKILL)
        while not _gone(child):
            time.sleep(0.05)
    assert server_lock(db) == Path(f"{db}.server.lock")


def test_evalcore_app_says_at_start_when_more_processes_would_use_the_cores(monkeypatch, capsys):
    """Item 5: one page-serving process uses one core. `evalcore app` keeps one process by default (its other
    servers would be reachable only through a proxy) and says at start, on a machine with more cores, how many to
    run; with as many processes as cores, or on one core, it says nothing."""
    from evalcore import cli
    from evalcore.cli import serve

    ran = []
    monkeypatch.setattr(serve, "run_app", lambda *a: ran.append(("app", a)) or 0)
    monkeypatch.setattr(serve, "run_group", lambda *a: ran.append(("group", a)) or 0)
    monkeypatch.setattr(serve, "cores", lambda: 4)
    assert cli.main(["app", "--db", "x.duckdb"]) == 0
    err = capsys.readouterr().err
    assert err == ("evalcore: 1 page-serving process on 4 cores: one process serves pages on one core, so with many "
                   "users at once (docs/operations/lab-server.md, \"More than one page-serving process\") run "
                   "`evalcore app --processes 4`, "
                   "one per core, behind a proxy that keeps each browser on one server\n"), err
    assert cli.main(["app", "--db", "x.duckdb", "--processes", "2"]) == 0
    assert "2 page-serving processes on 4 cores" in capsys.readouterr().err
    assert cli.main(["app", "--db", "x.duckdb", "--processes", "4"]) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(serve, "cores", lambda: 1)
    assert cli.main(["app", "--db", "x.duckdb"]) == 0
    assert capsys.readouterr().err == ""
    assert [kind for kind, _ in ran] == ["app", "group", "group", "app"]


def test_a_busy_server_lets_a_waiting_process_in(toy):
    """A server with a page run always in flight (six threads whose leases overlap) keeps its instance open
    for good; another process that waits for the file (a second server, a worker, the CLI) marks it, the
    busy one stops handing out cursors until its runs end, and the waiter gets in within moments (before:
    never, until its wait ran out)."""
    db = _db(toy)
    toy.close()
    stop = threading.Event()

    def busy(k: int):
        time.sleep(k * 0.02)   # staggered: some run always holds a cursor
        while not stop.is_set():
            with lease(db, wait=30) as con:
                con.execute("SELECT count(*) FROM items").fetchall()
                time.sleep(0.1)

    threads = [threading.Thread(target=busy, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    try:
        script = ("import sys, time; from evalcore.store import connect; t = time.monotonic(); "
                  "connect(sys.argv[1], wait=20).close(); print(round(time.monotonic() - t, 2))")
        out = subprocess.run([sys.executable, "-c", script, db], cwd=ROOT, capture_output=True, text=True, timeout=60)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) < 5, out.stdout
