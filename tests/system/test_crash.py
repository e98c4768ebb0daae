"""Crash safety: a command killed with SIGKILL at any moment leaves the store as it was or as it would be.

Three commands, 10 runs each (30 in all), each run started as `python -m evalcore ...` on a fresh copy of
a "before" store and killed (SIGKILL, to its whole process group) at a random moment of its uncrashed
duration. The kill moments are stratified: run i is killed at a time drawn uniformly from the i-th tenth
of the measured duration, so kills land early (interpreter start, reading), in the middle and late
(the writing transaction, its commit, the checkpoint at close). After every kill:

  * the store opens (evalcore.store.connect, the way every command opens it, replaying the WAL);
  * the whole store is in exactly one of two states, over every table (duckdb_tables(), not only
    DATA_TABLES): "before" (every table's row count and full content equal the template's) or
    "after" (every table's row count equals that of a complete, uncrashed run, and so does its content
    apart from TIMESTAMP columns, which hold the wall-clock time of the run). A mix of the two, a
    table from one state and another from the other, fails;
  * the same command run again (after all the kills, two re-runs at a time) completes: exit 0 and the
    store in the "after" state. A kill that came after the commit leaves an import already complete; its
    re-run is then refused as a duplicate (exit 2, "already imported" / "already answered") and must
    leave the "after" state untouched: that counts as complete, the store being where a complete run puts it.

No table is ignored: `revision` (a one-row counter each write bumps) and `schema_version` are
compared like the others after the kill; revision's content (n) says which state it is in, so it must
agree with every other table. Only after the re-run is revision compared on its own (see below).

The commands, as bench/load.py runs them:
  1. import msde <../shared/data/msde>   on a store holding the `load` dataset (16,000 items)
  2. import responses <16,000-row CSV> --dataset load --track load/chitchat --model crash
                                          on that same store
  3. score --dataset load --track load/chitchat   once the 16,000 responses are in (lexical metrics)

Counts are printed (pytest -s) and written to tests/artifacts/crash.json.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from evalcore.store import connect
from support import ROOT, shared

pytestmark = pytest.mark.slow   # SIGKILLs of real commands, 2-3 minutes: `python -m pytest -m slow` (CI's second step)

RUNS = 10
SEED = 20240611
N = 16_000
ARTIFACT = ROOT / "tests" / "artifacts" / "crash.json"
MODEL = "crash"
RERUN_WORKERS = 2  # re-runs are not timed: two at a time on the two cores


def evalcore(*args: str) -> list[str]:
    return [sys.executable, "-m", "evalcore", *args]


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.pop("EVALCORE_DB", None)  # every command gets --db; nothing may touch a user's store
    e["EVALCORE_LOCK_WAIT"] = "30"
    return e


def run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=False, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=600)


def copy_store(src: Path, dst: Path) -> None:
    for p in (dst, Path(f"{dst}.wal")):
        p.unlink(missing_ok=True)
    assert not Path(f"{src}.wal").exists(), f"{src} was not closed cleanly: a .wal lies beside it"
    shutil.copyfile(src, dst)


def snapshot(db: Path, *, read_only: bool = False) -> dict[str, tuple[int, int, int]]:
    """{table: (row count, hash of every row, hash of every row without its TIMESTAMP columns)} over
    every table of the store. Opening it the way the commands do (read-write) replays a WAL."""
    con = connect(db, read_only=read_only, wait=30)
    try:
        tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE NOT temporary "
                             "ORDER BY 1, 2").fetchall()
        out = {}
        for schema, table in tables:
            cols = con.execute("SELECT column_name, data_type FROM information_schema.columns "
                               "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
                               [schema, table]).fetchall()
            stable = [f'"{c}"' for c, t in cols if not t.upper().startswith("TIMESTAMP")]
            everything = ", ".join(f'"{c}"' for c, _ in cols)
            out[f"{schema}.{table}" if schema != "main" else table] = tuple(con.execute(
                f"SELECT count(*), coalesce(sum(hash(struct_pack({everything}))::HUGEINT), 0), "
                f"coalesce(sum(hash(struct_pack({', '.join(stable) or '1'}))::HUGEINT), 0) "
                f'FROM "{schema}"."{table}"').fetchall()[0])
        return out
    finally:
        con.close()


def counts(snap: dict) -> dict[str, int]:
    return {t: v[0] for t, v in snap.items()}


def state_of(snap: dict, before: dict, after: dict, skip: tuple[str, ...] = ()) -> str | None:
    tables = snap.keys() - set(skip)
    if snap.keys() == before.keys() and all(snap[t][:2] == before[t][:2] for t in tables):
        return "before"
    if snap.keys() == after.keys() and all((snap[t][0], snap[t][2]) == (after[t][0], after[t][2]) for t in tables):
        return "after"
    return None


def revision_n(db: Path) -> int:
    con = connect(db, read_only=True)
    try:
        return con.execute("SELECT n FROM revision").fetchall()[0][0]
    finally:
        con.close()


def describe(snap: dict, before: dict, after: dict) -> str:
    lines = []
    for t in sorted(set(snap) | set(before) | set(after)):
        s, b, a = snap.get(t), before.get(t), after.get(t)
        mark = ("=before" if s and b and s[:2] == b[:2] else "=after" if s and a and (s[0], s[2]) == (a[0], a[2])
                else "NEITHER")
        lines.append(f"  {t}: rows {s and s[0]} (before {b and b[0]}, after {a and a[0]}) {mark}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """Template stores, built once and closed (checkpointed: no .wal), per command."""
    tmp = tmp_path_factory.mktemp("crash")
    items = tmp / "items.jsonl"
    items.write_text("".join(json.dumps({"item_id": f"load-{i:06d}", "dataset": "load", "track": "load/chitchat",
                                         "context": [f"你 好 ， 今 天 第 {i} 次 聊 天"],
                                         "references": [f"好 的 {i % 97}"]}, ensure_ascii=False) + "\n"
                             for i in range(N)), encoding="utf-8")
    csv = tmp / "responses.csv"
    csv.write_text("item_id,response\n" + "".join(f"load-{i:06d},好 的 呀 {i % 89}\n" for i in range(N)),
                   encoding="utf-8")
    built: dict[str, Path] = {}

    def load_store() -> Path:
        if "load" not in built:
            db = tmp / "load.duckdb"
            connect(db).close()
            done = run(evalcore("import", "items", str(items), "--db", str(db)))
            assert done.returncode == 0, done.stderr
            built["load"] = db
        return built["load"]

    def responses_cmd(db: Path) -> list[str]:
        return evalcore("import", "responses", str(csv), "--db", str(db), "--dataset", "load",
                        "--track", "load/chitchat", "--model", MODEL)

    def template(command: str) -> tuple[Path, callable]:
        if command == "import msde":
            msde = shared("msde")
            return load_store(), lambda db: evalcore("import", "msde", str(msde), "--db", str(db))
        if command == "import responses":
            return load_store(), responses_cmd
        if command == "score":
            if "scored" not in built:
                db = tmp / "responded.duckdb"
                copy_store(load_store(), db)
                done = run(responses_cmd(db))
                assert done.returncode == 0, done.stderr
                built["scored"] = db
            return built["scored"], lambda db: evalcore("score", "--db", str(db), "--dataset", "load",
                                                        "--track", "load/chitchat")
        raise ValueError(command)

    template.tmp = tmp
    return template


def kill_at(args: list[str], seconds: float, log: Path) -> bool:
    """Start the command, SIGKILL its process group `seconds` after the start; False when it had
    already exited by then (no crash happened)."""
    with open(log, "wb") as out:
        start = time.monotonic()
        proc = subprocess.Popen(args, cwd=ROOT, env=env(), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            delay = start + seconds - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if proc.poll() is not None:
                return False
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=60)
            # it may have exited on its own between poll() and the kill: then no crash happened
            return proc.returncode == -signal.SIGKILL
        finally:
            if proc.poll() is None:  # only on an error above: never leave the child behind
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def record(command: str, summary: dict) -> None:
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = json.loads(ARTIFACT.read_text())
    except (OSError, ValueError):
        data = {}
    data[command] = summary
    ARTIFACT.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


@pytest.mark.parametrize("command", [
    pytest.param("import msde", marks=pytest.mark.slow),  # ~10 s a run, about two minutes in all
    "import responses",
    "score",
])
def test_sigkill_leaves_before_or_after_and_a_rerun_completes(stores, command):
    started = time.perf_counter()
    template, cmd = stores(command)
    work = stores.tmp / command.replace(" ", "-")
    work.mkdir(exist_ok=True)
    before = snapshot(template, read_only=True)

    # the uncrashed run: its duration bounds the kill moments, its store is the "after" state
    ref = work / "reference.duckdb"
    copy_store(template, ref)
    t0 = time.monotonic()
    done = run(cmd(ref))
    duration = time.monotonic() - t0
    assert done.returncode == 0, done.stdout + done.stderr
    after, after_revision = snapshot(ref), revision_n(ref)
    changed = {t for t in after if after[t][0] != before.get(t, (None,))[0]}
    assert changed, f"{command} changed no table's row count: before and after could not be told apart"

    # the kills, one at a time (their moments are timed against the measured duration)
    rng = random.Random(f"{SEED}:{command}")
    runs, problems = [], []
    for i in range(RUNS):
        db = work / f"run{i}.duckdb"
        moment = rng.uniform(i * duration / RUNS, (i + 1) * duration / RUNS)
        for _ in range(8):  # the command may end sooner than in the measured run: kill earlier then
            copy_store(template, db)
            if kill_at(cmd(db), moment, work / f"run{i}.log"):
                break
            moment *= 0.9
        else:
            pytest.fail(f"{command}: run {i} ended before every kill moment down to {moment:.2f} s")
        # how far it got: the last thing it printed (tqdm's progress, or the report once the write is done)
        said = (work / f"run{i}.log").read_bytes().decode("utf-8", "replace").replace("\r", "\n").split("\n")
        entry = {"run": i, "kill_s": round(moment, 3), "db": db,
                 "last_output": next((x for x in reversed(said) if x.strip()), "")}
        runs.append(entry)
        try:
            snap = snapshot(db)
        except Exception as exc:  # noqa: BLE001  the store does not open: the worst outcome, reported precisely
            entry["state"] = f"does not open: {type(exc).__name__}: {exc}"
            problems.append(f"{command}, killed at {moment:.3f} s of {duration:.2f} s: store does not open: {exc}")
            continue
        state = state_of(snap, before, after)
        entry["state"] = state or "neither"
        entry["counts"] = counts(snap)
        if state is None:
            problems.append(f"{command}, killed at {moment:.3f} s of {duration:.2f} s: neither before nor after\n"
                            + describe(snap, before, after))

    # the re-runs, RERUN_WORKERS at a time (nothing is timed here): each must complete
    def rerun(entry: dict) -> str | None:
        db = entry.pop("db")
        done = run(cmd(db))
        output = done.stdout + done.stderr
        refused = (entry["state"] == "after" and done.returncode == 2
                   and ("already imported" in output or "already answered" in output))
        entry["rerun_exit"] = done.returncode
        final = snapshot(db)
        # revision is compared on its own here (an imports' refused re-run and a score with nothing
        # left to write leave it as it was); every other table must be exactly in the "after" state
        bumps = revision_n(db) - after_revision
        entry["rerun_revision_bumps"] = bumps
        entry["rerun_completed"] = ((done.returncode == 0 or refused) and final["revision"][0] == 1
                                    and bumps == 0
                                    and state_of(final, before, after, skip=("revision",)) == "after")
        for p in (db, Path(f"{db}.wal")):
            p.unlink(missing_ok=True)
        if not entry["rerun_completed"]:
            return (f"{command}, killed at {entry['kill_s']:.3f} s ({entry['state']}): the re-run did not complete "
                    f"(exit {done.returncode}, revision +{bumps}):\n{output[-2000:]}\n"
                    + describe(final, before, after))
        return None

    with ThreadPoolExecutor(RERUN_WORKERS) as pool:
        problems += [p for p in pool.map(rerun, [r for r in runs if r["state"] in ("before", "after")]) if p]
    for r in runs:
        r.pop("db", None)

    states = [r["state"] for r in runs]
    summary = {
        "kills": len(runs), "before": states.count("before"), "after": states.count("after"),
        "reruns_completed": sum(bool(r.get("rerun_completed")) for r in runs),
        "full_run_s": round(duration, 2), "test_s": round(time.perf_counter() - started, 1),
        "before_counts": counts(before), "after_counts": counts(after), "runs": runs,
    }
    record(command, summary)
    moments = ", ".join(f"{r['kill_s']:.2f}" for r in runs)
    print(f"\n{command}: {summary['kills']} kills, {summary['before']} before, {summary['after']} after, "
          f"{summary['reruns_completed']} re-runs completed (full run {duration:.1f} s, kills at {moments} s; "
          f"test {summary['test_s']} s)")
    assert not problems, "\n\n".join(problems)
    assert summary["kills"] == RUNS and summary["before"] + summary["after"] == RUNS
    assert summary["reruns_completed"] == RUNS
