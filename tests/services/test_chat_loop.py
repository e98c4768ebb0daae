"""The chat loop from conversation to trust, below the pages: an accepted conversation is scored as an upload is (its
job recorded in the acceptance's own transaction, the reference-free metrics), a second acceptance while that job
waits joins it, and Metric trust then has a dialogue-level view of the dataset; until then trust_state says what is
missing. A task's bounds are one rule for the page and the CLI; a message of zero-width spaces or over 4,000
characters is refused at the store, with the store unchanged; the default name and the label people see name no
endpoint."""
from __future__ import annotations

import hashlib
import json

import pytest

from evalcore.analysis.trust_levels import choices
from evalcore.services import chats as service
from evalcore.services import jobs
from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import endpoints as registry
from support import copy_default_store, fingerprint
from support.judge_server import JudgeServer

ENDPOINTS = ("secret-alpha", "secret-beta")


@pytest.fixture
def db(tmp_path, default_store_file):
    return copy_default_store(default_store_file, tmp_path / "s.duckdb")


def make_task(con, url: str, **extra) -> stored.ChatTask:
    for name in ENDPOINTS:
        registry.add(con, registry.Registered(name, url, "served-model-x", api_key_env=None))
    tid = service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge", endpoints=list(ENDPOINTS),
                              n_scenarios=2, max_rounds=3, **extra)
    return stored.get(con, tid)


def talk(con, task, person: str, said: str, value: float) -> int:
    """A conversation as the Chat page holds it: one round, ended, every dimension rated `value`."""
    cid = stored.assign(con, task, person)
    stored.say(con, cid, person, said)
    after, stream = service.ask(con, cid)
    list(stream)
    assert service.keep(con, cid, after, stream.reply) is None
    stored.end(con, cid, person, goal=True)
    for d in task.dimensions:
        service.rate(con, cid, person, d.dimension, value)
    return cid


def file_bytes(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_accepted_conversations_are_scored_by_a_job_and_trust_opens_on_them(db):
    con = connect(db)
    try:
        with JudgeServer(echo=True) as srv:
            task = make_task(con, srv.url)
            assert service.trust_state(con, task)["missing"].startswith("no accepted conversations yet")
            cids = [talk(con, task, p, text, v) for p, text, v in
                    (("ann", "你好 你好 你好", 0), ("bob", "电影 导演 演员 故事", 2), ("cy", "好看 好看", 1))]
        new, job = service.review(con, cids[0], "lead", accept=True)
        assert new is None and job is not None
        row = con.execute("SELECT kind, dataset, state, steps FROM jobs WHERE job_id = ?", [job]).fetchall()[0]
        assert row[:3] == ("score", task.target, "queued")
        steps = json.loads(row[3])
        assert steps == [{"track": task.track, "flavor": "default", "tokenizer": None, "metrics": ["DIST1", "DIST2"]}]
        state = service.trust_state(con, task)
        assert not state["ready"] and state["missing"] == f"scoring job {job} is queued" and not state["score"]
        # a second acceptance while the job waits: the same job (it reads the dialogues when it starts)
        assert service.review(con, cids[1], "lead", accept=True) == (None, job)
        assert jobs.run(con, job)
        assert con.execute("SELECT state FROM jobs WHERE job_id = ?", [job]).fetchall() == [("done",)]
        assert ("dialogue", "computed") in choices(con, task.target)
        scored = con.execute("SELECT DISTINCT model FROM system_scores WHERE dataset = ? AND name = 'DIST1'",
                             [task.target]).fetchall()
        assert len(scored) == 2   # both accepted conversations' endpoints (one each: assignment alternates)
        state = service.trust_state(con, task)
        assert state["ready"] and state["missing"] is None and not state["score"]
        # a third acceptance after the job ended: a new job
        _, third = service.review(con, cids[2], "lead", accept=True)
        assert third not in (None, job)
        assert service.trust_state(con, task)["missing"].startswith(f"scoring job {third} is queued: the "
                                                                      "conversations accepted since")
    finally:
        con.close()


def test_a_task_without_review_queues_the_job_when_the_last_rating_accepts(db):
    con = connect(db)
    try:
        with JudgeServer(echo=True) as srv:
            task = make_task(con, srv.url, review=False)
            cid = stored.assign(con, task, "ann")
            stored.say(con, cid, "ann", "你好")
            after, stream = service.ask(con, cid)
            list(stream)
            service.keep(con, cid, after, stream.reply)
        stored.end(con, cid, "ann", goal=True)
        *first, last = task.dimensions
        assert [service.rate(con, cid, "ann", d.dimension, 1) for d in first] == [None] * len(first)
        job = service.rate(con, cid, "ann", last.dimension, 1)
        assert stored.conversation(con, cid).state == "accepted" and job is not None
        assert con.execute("SELECT dataset, state FROM jobs WHERE job_id = ?", [job]).fetchall() == [
            (task.target, "queued")]
    finally:
        con.close()


def test_a_refused_acceptance_leaves_no_job(db):
    con = connect(db)
    try:
        with JudgeServer(echo=True) as srv:
            task = make_task(con, srv.url)
        cid = stored.assign(con, task, "ann")   # talking: not rated, so not reviewable
        before = fingerprint(con)
        with pytest.raises(ValueError, match="only a rated conversation is reviewed"):
            service.review(con, cid, "lead", accept=True)
        assert fingerprint(con) == before
        assert con.execute("SELECT count(*) FROM jobs").fetchall() == [(0,)]
    finally:
        con.close()


@pytest.mark.parametrize("sizes, option", [
    ({"per_scenario": 100_000}, "--per-scenario must lie in 1..20, got 100000"),
    ({"per_scenario": 21}, "--per-scenario must lie in 1..20"),
    ({"n_scenarios": 501}, "--scenarios must lie in 1..500"),
    ({"max_rounds": 51}, "--max-rounds must lie in 1..50"),
    ({"per_scenario": 0}, "--per-scenario must lie in 1..20"),
])
def test_a_task_beyond_the_bounds_is_refused_before_anything_is_drawn(db, sizes, option):
    con = connect(db)
    try:
        registry.add(con, registry.Registered("secret-alpha", "http://127.0.0.1:9/v1", "m", api_key_env=None))
        con.execute("CHECKPOINT")
        before = fingerprint(con)
        with pytest.raises(ValueError, match=option):
            service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge", endpoints=["secret-alpha"],
                                **{"n_scenarios": 2, "per_scenario": 1, "max_rounds": 3, **sizes})
        assert fingerprint(con) == before
    finally:
        con.close()


@pytest.mark.parametrize("text, said", [
    ("\u200b" * 12, "An empty message is not sent"),
    ("\u200b\ufeff\u200d \u2060\u3164", "An empty message is not sent"),
    ("x" * 4001, "A message holds at most 4,000 characters, this one 4,001; nothing was stored"),
    ("字" * 100_000, "A message holds at most 4,000 characters, this one 100,000"),
])
def test_a_message_of_nothing_visible_or_too_long_is_refused_at_the_store(db, text, said):
    con = connect(db)
    try:
        with JudgeServer(echo=True) as srv:
            task = make_task(con, srv.url)
        cid = stored.assign(con, task, "ann")
        con.execute("CHECKPOINT")
        before, disk = fingerprint(con), file_bytes(db)
        with pytest.raises(ValueError, match=said):
            stored.say(con, cid, "ann", text)
        assert fingerprint(con) == before and file_bytes(db) == disk
        assert stored.say(con, cid, "ann", "x" * 4000) == 0   # the bound itself is sent
    finally:
        con.close()


def test_the_default_name_and_the_label_people_see_name_no_endpoint(db):
    con = connect(db)
    try:
        with JudgeServer(echo=True) as srv:
            task = make_task(con, srv.url)
            named = stored.get(con, service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge",
                                                         endpoints=list(ENDPOINTS), n_scenarios=2,
                                                         name="secret-alpha vs served-model-x"))
    finally:
        con.close()
    assert task.name == "demo-zh kdconv/knowledge: 2 endpoints"
    for t in (task, named):
        label = service.blind_label(t)
        assert label == f"Chat task {t.task_id}: scenarios of kdconv/knowledge"
        assert not any(n in label for n in (*ENDPOINTS, "served-model-x"))
    # a track that holds an endpoint's (or served model's) name is left out of the label
    hidden = stored.ChatTask(**{**task.__dict__, "track": "served-model-x/knowledge"})
    assert service.blind_label(hidden) == f"Chat task {task.task_id}"


def test_a_failed_scoring_job_is_said_and_can_be_started_again(db):
    con = connect(db)
    try:
        with JudgeServer(echo=True) as srv:
            task = make_task(con, srv.url)
            cid = talk(con, task, "ann", "你好", 1)
        _, job = service.review(con, cid, "lead", accept=True)
        jobs.set_fields(con, job, state="failed", detail="MemoryError: out of memory")
        state = service.trust_state(con, task)
        assert state == {**state, "ready": False, "score": True,
                         "missing": f"scoring job {job} failed: MemoryError: out of memory"}
        again = service.score_accepted(con, task)
        assert again != job and service.trust_state(con, task)["missing"] == f"scoring job {again} is queued"
        assert jobs.run(con, again) and service.trust_state(con, task)["ready"]
    finally:
        con.close()
