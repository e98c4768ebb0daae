"""The rules of chat tasks in the store: who talks to what (each (scenario, endpoint) to a different person, nobody
the same scenario twice, each person's own endpoint order), whose turn it is (a message waits for its reply; a
reply to a message is stored once), the round limit, ratings in range, and a conversation accepted only once
rated."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcore.core.chat import Reply
from evalcore.services import chats as service
from evalcore.store import chats as stored
from evalcore.store.tasks import Dimension

DIMS = [Dimension("Info", 0, 2), Dimension("Coh", 0, 2)]


def make(con, *, scenarios=3, endpoints=("e1", "e2"), k=1, rounds=2, review=True, seed=0) -> stored.ChatTask:
    frame = pd.DataFrame({"dialogue_id": [f"d{i}" for i in range(scenarios)],
                          "grounding": [{"knowledge": [["s", "r", f"o{i}"]]} for i in range(scenarios)],
                          "opening": [None] * scenarios})
    settings = {e: {"signature": f"gen:{e}"} for e in endpoints}
    tid = stored.create(con, name="t", dataset="toy", track="toy/knowledge", target="chat-toy", endpoints=list(endpoints),
                        settings=settings, per_scenario=k, max_rounds=rounds, dimensions=DIMS, flags=["contradiction"],
                        scenarios=frame, review=review, seed=seed)
    return stored.get(con, tid)


def finish(con, task, cid, person):
    stored.say(con, cid, person, "hi")
    stored.reply(con, cid, stored.pending(con, cid), "hello")
    stored.end(con, cid, person)
    for d in DIMS:
        stored.rate(con, cid, person, d.dimension, 1)


def test_each_pair_to_a_different_person_and_nobody_meets_a_scenario_twice(con):
    task = make(con, scenarios=4, k=2)
    people = [f"p{i}" for i in range(6)]
    held = []
    for _ in range(4):
        for person in people:
            cid = stored.assign(con, task, person)
            if cid is None:
                continue
            conv = stored.conversation(con, cid)
            held.append((person, conv.scenario, conv.endpoint, conv.slot))
            finish(con, task, cid, person)
    frame = pd.DataFrame(held, columns=["person", "scenario", "endpoint", "slot"])
    assert len(frame) == 4 * 2 * 2                                   # every conversation was given out
    assert not frame.duplicated(["person", "scenario"]).any()        # nobody met a scenario twice
    assert not frame.duplicated(["scenario", "endpoint", "slot"]).any()
    assert (frame.groupby(["scenario", "endpoint"])["person"].nunique() == 2).all()   # K different people


def test_people_meet_the_endpoints_in_their_own_order(con):
    task = make(con, scenarios=12, endpoints=("e1", "e2", "e3"))
    firsts = {stored.conversation(con, stored.assign(con, task, f"p{i}")).endpoint for i in range(12)}
    assert len(firsts) > 1      # not one endpoint always first
    orders = {tuple(stored.order_for(task, f"p{i}")[0]) for i in range(12)}
    assert len(orders) > 1 and stored.order_for(task, "p1") == stored.order_for(task, "P1")   # a person, not a spelling


def test_resume_turns_and_limits(con):
    task = make(con, rounds=2)
    cid = stored.assign(con, task, "ann")
    assert stored.assign(con, task, "ANN") == cid                   # the same person resumes, however typed
    with pytest.raises(stored.NotYours):
        stored.say(con, cid, "bob", "hi")
    with pytest.raises(stored.OutOfTurn, match="nothing to rate"):
        stored.end(con, cid, "ann")
    assert stored.say(con, cid, "ann", "  hi  ") == 0
    with pytest.raises(stored.OutOfTurn, match="not answered"):
        stored.say(con, cid, "ann", "again")
    assert stored.reply(con, cid, 0, "hello") == 1
    assert stored.reply(con, cid, 0, "a second tab's reply") is None   # stored once
    stored.say(con, cid, "ann", "more")
    stored.reply(con, cid, 2, "sure")
    with pytest.raises(stored.OutOfTurn, match="2 rounds"):
        stored.say(con, cid, "ann", "one more")
    assert stored.messages(con, cid)["text"].tolist() == ["hi", "hello", "more", "sure"]
    with pytest.raises(stored.OutOfTurn, match="once it has ended"):
        stored.rate(con, cid, "ann", "Info", 1)
    stored.end(con, cid, "ann", goal=True)
    with pytest.raises(ValueError, match="lies in 0..2"):
        stored.rate(con, cid, "ann", "Info", 3)
    with pytest.raises(ValueError, match="unknown dimension"):
        stored.rate(con, cid, "ann", "Rec", 1)
    with pytest.raises(stored.OutOfTurn, match="only a rated"):
        stored.review(con, cid, "rev", accept=True)
    stored.rate(con, cid, "ann", "Info", 1)
    stored.rate(con, cid, "ann", "Info", 2)          # a change: the latest counts
    stored.rate(con, cid, "ann", "Coh", 0)
    assert stored.ratings(con, cid) == {"Info": 2.0, "Coh": 0.0}
    assert stored.conversation(con, cid).state == "rated"
    stored.flag(con, cid, 1, "ann", "contradiction", True)
    stored.flag(con, cid, 3, "ann", "contradiction", True)
    stored.flag(con, cid, 1, "ann", "contradiction", False)
    assert stored.flags(con, cid) == {3: {"contradiction"}}
    with pytest.raises(ValueError, match="only a model's"):
        stored.flag(con, cid, 0, "ann", "contradiction", True)


def test_send_back_gives_the_place_to_someone_else(con):
    task = make(con, scenarios=1, endpoints=("e1",))
    cid = stored.assign(con, task, "ann")
    finish(con, task, cid, "ann")
    with pytest.raises(ValueError, match="say why"):
        stored.review(con, cid, "rev", accept=False)
    new = stored.review(con, cid, "rev", accept=False, reason="off task")
    assert stored.conversation(con, cid).state == "sent_back" and stored.conversation(con, cid).reason == "off task"
    assert stored.assign(con, task, "ann") is None          # she met that scenario
    assert stored.assign(con, task, "bob") == new


def test_keep_refuses_a_failed_or_empty_reply_and_stores_nothing(con):
    task = make(con)
    cid = stored.assign(con, task, "ann")
    stored.say(con, cid, "ann", "hi")
    assert "did not answer: HTTP 500" in service.keep(con, cid, 0, Reply(None, "HTTP 500 after 3 attempts: x", 3))
    assert "nothing" in service.keep(con, cid, 0, Reply("  ", None, 1, "stop"))
    assert "interrupted" in service.keep(con, cid, 0, None)
    assert stored.messages(con, cid)["role"].tolist() == ["user"] and stored.pending(con, cid) == 0
    assert service.keep(con, cid, 0, Reply("hello", None, 1, "stop", 0.5)) is None
    frame = stored.messages(con, cid)
    assert frame[["role", "text"]].values.tolist() == [["user", "hi"], ["assistant", "hello"]]
    assert frame["finish"].iloc[1] == "stop" and frame["seconds"].iloc[1] == 0.5


def test_mean_ci_is_the_mean_and_percentiles_of_resampled_means():

    values = np.array([0.0, 1.0, 2.0, 2.0])
    mean, lo, hi = service.mean_ci(values, 2000, np.random.default_rng(0))
    assert mean == 1.25 and 0.0 <= lo < 1.25 < hi <= 2.0
    assert service.mean_ci(np.array([2.0]), 10, np.random.default_rng(0)) == (2.0, None, None)


def test_two_people_two_endpoints_each_meet_both_whatever_the_order(con):
    """Two scenarios, two endpoints, K = 1, people entering in turn: each person meets both endpoints (a greedy
    choice of the least-started scenario once left the second person only an endpoint she had met)."""
    for seed in range(6):
        task = make(con, scenarios=2, seed=seed)
        met = {}
        for person in ("ann", "bob", "ann", "bob"):
            cid = stored.assign(con, task, person)
            conv = stored.conversation(con, cid)
            met.setdefault(person, []).append((conv.scenario, conv.endpoint))
            finish(con, task, cid, person)
        assert all(sorted(e for _, e in pairs) == ["e1", "e2"] for pairs in met.values()), (seed, met)
        assert all(len({s for s, _ in pairs}) == 2 for pairs in met.values())


def test_a_closed_task_takes_no_messages_until_reopened(con):
    task = make(con)
    cid = stored.assign(con, task, "ann")
    stored.set_state(con, task.task_id, "closed")
    with pytest.raises(stored.TaskClosed, match="closed"):
        stored.say(con, cid, "ann", "hi")
    assert stored.assign(con, stored.get(con, task.task_id), "bob") is None
    stored.set_state(con, task.task_id, "open")
    assert stored.say(con, cid, "ann", "hi") == 0
