"""Generation at the scale of a benchmark, in a process of its own as a user runs it: every item of demo-zh's
tracks sent with its grounding, and a run SIGKILLed at three moments then run again stores each reply once."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import duckdb
import pytest

from evalcore.cli import main
from support import ROOT, copy_default_store
from support.judge_server import JudgeServer

pytestmark = pytest.mark.slow


def generate(db: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "evalcore", "generate", "--db", db, "--dataset", "demo-zh",
                             "--endpoint", "local", "--no-score", "--no-progress", *extra], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def rows(db: str, sql: str, params=()) -> list[tuple]:
    con = duckdb.connect(db, read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def test_every_item_of_demo_zh_with_its_knowledge_in_the_prompt(default_store_file, tmp_path):
    db = str(copy_default_store(default_store_file, tmp_path / "s.duckdb"))
    items = rows(db, "SELECT item_id, track, grounding FROM items WHERE dataset = 'demo-zh'")
    with JudgeServer(echo=True) as srv:
        assert main(["endpoint", "add", "local", "--db", db, "--base-url", srv.url, "--model", "m",
                     "--concurrency", "32"]) == 0
        proc = generate(db, "--model", "echo-all")
        out, err = proc.communicate(timeout=900)
        bodies = list(srv.bodies)
    assert proc.returncode == 0, err
    assert f"{len(items):,} of {len(items):,} items answered" in out
    [(n, distinct, tracks)] = rows(db, "SELECT count(*), count(DISTINCT item_id), count(DISTINCT i.track) FROM responses "
                                       "JOIN items i USING (dataset, item_id) WHERE model = 'echo-all'")
    assert n == distinct == len(items) and tracks == 2 and len(bodies) == len(items)
    # every knowledge triple of every grounded item is in a system message the server received
    systems = Counter(b["messages"][0]["content"] for b in bodies if b["messages"][0]["role"] == "system")
    grounded = [json.loads(g)["knowledge"] for _, _, g in items if g and json.loads(g).get("knowledge")]
    assert grounded
    for triples in grounded[:: max(1, len(grounded) // 300)]:   # 300 items spread over the set
        match = [s for s in systems if all(str(part) in s for t in triples for part in t)]
        assert match, triples
    [(state, stored, total, signature)] = rows(db, "SELECT state, stored, total, signature FROM generations")
    assert (state, stored, total) == ("done", len(items), len(items))
    assert signature.startswith("gen:m@127.0.0.1:") and "tpl:chitchat-zh#" in signature and "knowledge-zh#" in signature


@pytest.mark.serial   # each kill must land between the generation's one-second commits
def test_sigkill_at_three_moments_then_every_reply_stored_once(default_store_file, tmp_path):
    db = str(copy_default_store(default_store_file, tmp_path / "k.duckdb"))
    items = rows(db, "SELECT item_id, context FROM items WHERE track = 'lccc/chitchat'")
    last_turn = Counter(json.loads(c)[-1] for _, c in items)
    by_turn = {json.loads(c)[-1]: i for i, c in items if last_turn[json.loads(c)[-1]] == 1}
    sent_by_run: list[set[str]] = []
    stored_before: list[set[str]] = []
    with JudgeServer(echo=True, delay=0.1) as srv:
        assert main(["endpoint", "add", "local", "--db", db, "--base-url", srv.url, "--model", "m",
                     "--concurrency", "4"]) == 0
        # killed at its first requests (nothing committed yet), then half way, then most of the rest of the way
        # (40 requests a second, a batch committed every second: 80 requests take two seconds, so the second and
        # third kills each come after a commit, however fast the machine)
        for more in (3, 100, 80):
            stored_before.append({i for (i,) in rows(db, "SELECT item_id FROM responses WHERE model = 'k'")})
            start = srv.requests
            proc = generate(db, "--model", "k", "--tracks", "lccc/chitchat")
            deadline = time.monotonic() + 120
            while srv.requests - start < more and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            proc.communicate()
            time.sleep(0.3)   # the requests the killed process had in flight end at the server
            sent_by_run.append({by_turn.get(b["messages"][-1]["content"]) for b in srv.bodies[start:]} - {None})
        stored_before.append({i for (i,) in rows(db, "SELECT item_id FROM responses WHERE model = 'k'")})
        start = srv.requests
        proc = generate(db, "--model", "k", "--tracks", "lccc/chitchat")
        out, err = proc.communicate(timeout=300)
        sent_by_run.append({by_turn.get(b["messages"][-1]["content"]) for b in srv.bodies[start:]} - {None})
    assert proc.returncode == 0, err
    # each run sent only items that had no reply stored when it began
    for sent, before in zip(sent_by_run, stored_before):
        assert not sent & before
    assert stored_before[1] <= stored_before[2] and stored_before[2] and stored_before[2] < stored_before[3]
    [(n, distinct)] = rows(db, "SELECT count(*), count(DISTINCT item_id) FROM responses WHERE model = 'k'")
    assert n == distinct == len(items)
    [(state, stored)] = rows(db, "SELECT state, stored FROM generations WHERE model = 'k'")
    assert (state, stored) == ("done", len(items))


def test_ctrl_c_keeps_what_was_stored_and_says_how_to_resume(default_store_file, tmp_path):
    db = str(copy_default_store(default_store_file, tmp_path / "c.duckdb"))
    with JudgeServer(echo=True, delay=0.05) as srv:
        assert main(["endpoint", "add", "local", "--db", db, "--base-url", srv.url, "--model", "m",
                     "--concurrency", "4"]) == 0
        proc = generate(db, "--model", "c", "--tracks", "lccc/chitchat")
        deadline = time.monotonic() + 120
        while srv.requests < 100 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "stopped by Ctrl-C: the replies received are stored" in err
        [(state, detail, kept)] = rows(db, "SELECT state, detail, stored FROM generations WHERE model = 'c'")
        assert state == "stopped" and "Ctrl-C" in detail and kept > 0
        proc = generate(db, "--model", "c", "--tracks", "lccc/chitchat")
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert rows(db, "SELECT count(*), count(DISTINCT item_id) FROM responses WHERE model = 'c'") == [(200, 200)]
