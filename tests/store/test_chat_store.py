"""Chat tasks in the store and their services, beyond the turn rules of tests/store/test_chat_rules.py: scenarios drawn
from a track (grounding, or an opening for chit-chat), a task's defaults, what an accepted conversation becomes
(dialogue, turns, items with the texts before them, responses by the endpoint's name, dialogue-level ratings), a
task without review, refusals after the end and by another person, results by arithmetic written out here, and
the export's columns."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from evalcore.core.names import UnknownName
from evalcore.services import chats as service
from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import endpoints as registry
from evalcore.store.tasks import Dimension, TaskClosed
from support import copy_default_store

DIMS = [Dimension("Info", 0, 2), Dimension("Coh", 0, 2)]
NOWHERE = "http://127.0.0.1:9/v1"   # never asked: these tests store the replies themselves


def make(con, *, scenarios=3, endpoints=("e1", "e2"), k=1, rounds=3, review=True) -> stored.ChatTask:
    frame = pd.DataFrame({"dialogue_id": [f"d{i}" for i in range(scenarios)],
                          "grounding": [{"knowledge": [["山姆", "导演", f"人{i}"]]} for i in range(scenarios)],
                          "opening": [None] * scenarios})
    tid = stored.create(con, name="t", dataset="toy", track="toy/knowledge", target="chat-toy", endpoints=list(endpoints),
                        settings={e: {"signature": f"gen:{e}"} for e in endpoints}, per_scenario=k, max_rounds=rounds,
                        dimensions=DIMS, flags=["contradiction"], scenarios=frame, review=review)
    return stored.get(con, tid)


def talk(con, cid: int, person: str, rounds: int, goal=None) -> list[str]:
    """`rounds` rounds (the person's message, then the model's reply), then the end; every text in order."""
    texts = []
    for r in range(rounds):
        said = f"问题{r}"
        idx = stored.say(con, cid, person, said)
        stored.reply(con, cid, idx, f"回答{r}")
        texts += [said, f"回答{r}"]
    stored.end(con, cid, person, goal=goal)
    return texts


@pytest.fixture(scope="module")
def demo(tmp_path_factory, default_store_file):
    """A copy of the default store with two endpoints registered (never asked)."""
    db = copy_default_store(default_store_file, tmp_path_factory.mktemp("chatstore") / "s.duckdb")
    con = connect(db)
    for name in ("alpha", "beta"):
        registry.add(con, registry.Registered(name, NOWHERE, "served", api_key_env=None))
    yield con
    con.close()


def test_scenarios_are_a_seeded_draw_of_grounded_dialogues_or_openings(demo):
    drawn = service.scenarios(demo, "demo-zh", "kdconv/knowledge", 5, seed=3)
    assert drawn.equals(service.scenarios(demo, "demo-zh", "kdconv/knowledge", 5, seed=3))
    assert len(drawn) == 5 and drawn["dialogue_id"].tolist() == sorted(drawn["dialogue_id"])
    assert drawn["dialogue_id"].tolist() != service.scenarios(demo, "demo-zh", "kdconv/knowledge", 5, 4)["dialogue_id"].tolist()
    for row in drawn.itertuples():
        stored_grounding = demo.execute("SELECT grounding FROM dialogues WHERE dataset = 'demo-zh' AND dialogue_id = ?",
                                        [row.dialogue_id]).fetchall()[0][0]
        assert row.grounding == json.loads(stored_grounding) and row.grounding and row.opening is None
    assert len(service.scenarios(demo, "demo-zh", "kdconv/knowledge", None, 0)) == 450
    assert len(service.scenarios(demo, "demo-zh", "kdconv/knowledge", 10_000, 0)) == 450
    chit = service.scenarios(demo, "demo-zh", "lccc/chitchat", 3, 0)
    for row in chit.itertuples():
        first = demo.execute("SELECT text FROM turns WHERE dataset = 'demo-zh' AND dialogue_id = ? ORDER BY turn_index "
                             "LIMIT 1", [row.dialogue_id]).fetchall()[0][0]
        assert row.grounding == {} and row.opening == first
    with pytest.raises(UnknownName, match="kdconv/knowledge"):
        service.track_skill(demo, "demo-zh", "kdconv/knowlege")
    with pytest.raises(ValueError, match="at least 1"):
        service.scenarios(demo, "demo-zh", "kdconv/knowledge", 0, 0)


def test_a_task_takes_the_skills_dimensions_and_its_own_dataset(demo):
    tid = service.create_chat(demo, dataset="demo-zh", track="kdconv/knowledge", endpoints=["alpha", "beta"],
                              n_scenarios=3, per_scenario=2)
    task = stored.get(demo, tid)
    assert [d.dimension for d in task.dimensions] == ["Info", "Coh", "Know"]      # MSDE rates Know on knowledge
    assert task.target == f"chat-{tid}-demo-zh" and task.flags == tuple(service.DEFAULT_FLAGS) and task.review
    assert task.settings["alpha"]["served_model"] == "served" and f"items:chat{tid}" in task.settings["alpha"]["signature"]
    convs = stored.conversations(demo, tid)
    assert len(convs) == 3 * 2 * 2 and set(convs["state"]) == {"open"} and convs["annotator"].isna().all()
    chit = stored.get(demo, service.create_chat(demo, dataset="demo-zh", track="lccc/chitchat", endpoints=["beta"],
                                                n_scenarios=1, flags=[], dimensions=None))
    assert [d.dimension for d in chit.dimensions] == ["Info", "Coh"] and chit.flags == ()
    with pytest.raises(ValueError, match="another --target"):
        service.create_chat(demo, dataset="demo-zh", track="lccc/chitchat", endpoints=["beta"], target="demo-zh")
    with pytest.raises(ValueError, match="different endpoints"):
        service.create_chat(demo, dataset="demo-zh", track="lccc/chitchat", endpoints=["beta", "beta"])


def test_an_accepted_conversation_is_a_dialogue_of_the_target_dataset(con):
    task = make(con)
    cid = stored.assign(con, task, "安")
    conv = stored.conversation(con, cid)
    texts = talk(con, cid, "安", 2, goal=True)
    stored.rate(con, cid, "安", "Info", 0)
    stored.rate(con, cid, "安", "Info", 2)         # the latest counts
    stored.rate(con, cid, "安", "Coh", 1)
    assert stored.review(con, cid, "rev", accept=True) is None
    dialogue = f"chat{task.task_id}-c{cid}"
    after = stored.conversation(con, cid)
    assert (after.state, after.dialogue_id) == ("accepted", dialogue)
    grounding = json.loads(con.execute("SELECT grounding FROM dialogues WHERE dataset = 'chat-toy' AND dialogue_id = ?",
                                       [dialogue]).fetchall()[0][0])
    assert grounding == stored.scenario(con, task.task_id, conv.scenario)["grounding"]
    turns = con.execute("SELECT turn_index, speaker, text FROM turns WHERE dataset = 'chat-toy' ORDER BY turn_index").fetchall()
    assert turns == [(0, "user", "问题0"), (1, "model", "回答0"), (2, "user", "问题1"), (3, "model", "回答1")]
    items = con.execute("SELECT item_id, context FROM items WHERE dataset = 'chat-toy' ORDER BY turn_index").fetchall()
    assert items == [(f"{dialogue}-t1", json.dumps(["问题0"], ensure_ascii=False)),
                     (f"{dialogue}-t3", json.dumps(texts[:3], ensure_ascii=False))]
    responses = con.execute("SELECT item_id, model, text FROM responses WHERE dataset = 'chat-toy' ORDER BY 1").fetchall()
    assert responses == [(f"{dialogue}-t1", conv.endpoint, "回答0"), (f"{dialogue}-t3", conv.endpoint, "回答1")]
    ratings = con.execute("SELECT target, item_id, dialogue_id, model, annotator, dimension, score, origin "
                          "FROM human_ratings WHERE dataset = 'chat-toy' ORDER BY dimension").fetchall()
    assert ratings == [("dialogue", None, dialogue, conv.endpoint, "安", "Coh", 1.0, f"chat:{task.task_id}"),
                       ("dialogue", None, dialogue, conv.endpoint, "安", "Info", 2.0, f"chat:{task.task_id}")]
    with pytest.raises(stored.OutOfTurn, match="only a rated"):
        stored.review(con, cid, "rev", accept=True)        # accepted once
    with pytest.raises(stored.OutOfTurn, match="fixed"):
        stored.rate(con, cid, "安", "Info", 0)


def test_without_review_a_conversation_counts_once_rated(con):
    task = make(con, review=False)
    cid = stored.assign(con, task, "ann")
    talk(con, cid, "ann", 1)
    stored.rate(con, cid, "ann", "Info", 1)
    assert stored.conversation(con, cid).state == "ended"      # one dimension still unrated
    stored.rate(con, cid, "ann", "Coh", 1)
    conv = stored.conversation(con, cid)
    assert conv.state == "accepted" and conv.dialogue_id == f"chat{task.task_id}-c{cid}"
    assert con.execute("SELECT reviewer FROM chat_conversations WHERE conversation_id = ?", [cid]).fetchall() == [(None,)]
    assert con.execute("SELECT count(*) FROM human_ratings WHERE dataset = 'chat-toy'").fetchall() == [(2,)]


def test_refusals_after_the_end_by_someone_else_and_once_deleted(con):
    task = make(con)
    cid = stored.assign(con, task, "ann")
    for bad, said in (("", "empty"), ("x" * (stored.MAX_MESSAGE + 1), "at most"), ("a\x1bb", "may not hold")):
        with pytest.raises(ValueError, match=said):
            stored.say(con, cid, "ann", bad)
    talk(con, cid, "ann", 1)
    with pytest.raises(stored.OutOfTurn, match="has ended"):
        stored.say(con, cid, "ann", "还有一件事")
    with pytest.raises(stored.OutOfTurn, match="ended already"):
        stored.end(con, cid, "ann")
    for write in (lambda: stored.end(con, cid, "bob"), lambda: stored.rate(con, cid, "bob", "Info", 1),
                  lambda: stored.flag(con, cid, 1, "bob", "contradiction", True)):
        with pytest.raises(stored.NotYours):
            write()
    with pytest.raises(ValueError, match="unknown flag"):
        stored.flag(con, cid, 1, "ann", "rude", True)
    assert stored.messages(con, cid)["text"].tolist() == ["问题0", "回答0"]    # nothing refused was stored
    other = stored.assign(con, task, "bob")
    stored.set_state(con, task.task_id, "deleted")
    with pytest.raises(TaskClosed, match="deleted"):
        stored.say(con, other, "bob", "你好")
    assert stored.assign(con, task, "cy") is None                  # nothing new from a task not open
    stored.set_state(con, task.task_id, "open")
    assert stored.say(con, other, "bob", "你好") == 0                # reopened: as it was


# (endpoint's n-th conversation) -> rounds, goal, Info, Coh, what the reviewer does ("keep": left rated)
PLAN = {("e1", 0): (1, True, 2, 1, "accept"), ("e1", 1): (3, False, 1, 1, "accept"), ("e1", 2): (2, True, 0, 0, "keep"),
        ("e2", 0): (2, None, 0, 2, "accept"), ("e2", 1): (1, True, 2, 2, "send back"),
        ("e2", 2): (1, False, 1, 0, "accept")}


@pytest.fixture
def reviewed(con):
    """Six conversations (3 scenarios x 2 endpoints, six people) as PLAN says."""
    task = make(con)
    held = [(stored.conversation(con, stored.assign(con, task, f"p{i}")), f"p{i}") for i in range(6)]
    nth: dict[str, int] = {}
    for conv, person in sorted(held, key=lambda h: (h[0].endpoint, h[0].conversation_id)):
        rounds, goal, info, coh, then = PLAN[(conv.endpoint, nth.setdefault(conv.endpoint, 0))]
        nth[conv.endpoint] += 1
        talk(con, conv.conversation_id, person, rounds, goal)
        stored.flag(con, conv.conversation_id, 1, person, "contradiction", True)
        stored.rate(con, conv.conversation_id, person, "Info", info)
        stored.rate(con, conv.conversation_id, person, "Coh", coh)
        if then != "keep":
            stored.review(con, conv.conversation_id, "rev", accept=then == "accept", reason="跑题")
    return task


def test_results_count_accepted_conversations_by_default(con, reviewed):
    result = service.results(con, reviewed.task_id)
    table = result["table"].set_index("endpoint")
    e1, e2 = table.loc["e1"], table.loc["e2"]
    assert (e1["conversations"], e1["scenarios"], e2["conversations"]) == (2, 2, 2)
    assert e1["rounds"] == (1 + 3) / 2 and e2["rounds"] == (2 + 1) / 2
    assert e1["goal_reached"] == (1 + 0) / 2 and e2["goal_reached"] == 0 / 1      # an unanswered goal is left out
    assert (e1["Info"], e1["Coh"]) == ((2 + 1) / 2, (1 + 1) / 2)
    assert (e2["Info"], e2["Coh"]) == ((0 + 1) / 2, (2 + 0) / 2)
    low, high = (float(x) for x in e1["Info 95% CI"].strip("[]").split(","))
    assert 1 <= low <= 1.5 <= high <= 2                  # resampled means of {2, 1} lie between them
    assert result["states"] == {"accepted": 4, "rated": 1, "sent_back": 1, "open": 1}    # the fresh one in its place
    assert result["sent_back"][["endpoint", "reason"]].values.tolist() == [["e2", "跑题"]]
    everything = service.results(con, reviewed.task_id, counted=("rated", "accepted"))["table"].set_index("endpoint")
    e1 = everything.loc["e1"]
    assert e1["conversations"] == 3 and e1["rounds"] == (1 + 3 + 2) / 3
    assert e1["goal_reached"] == pytest.approx((1 + 0 + 1) / 3) and e1["Info"] == (2 + 1 + 0) / 3
    assert everything.loc["e2", "conversations"] == 2      # a conversation sent back never counts


def test_the_export_holds_every_message_rating_and_flag(con, reviewed):
    out = service.export(con, reviewed.task_id)
    assert list(out["messages"].columns) == ["conversation_id", "scenario", "scenario_dialogue", "endpoint", "annotator",
                                             "state", "idx", "role", "text", "created_at", "attempts", "finish", "seconds"]
    assert list(out["ratings"].columns) == ["conversation_id", "endpoint", "annotator", "dimension", "value", "given_at"]
    assert list(out["flags"].columns) == ["conversation_id", "endpoint", "idx", "annotator", "flag", "value", "given_at"]
    assert {"conversation_id", "scenario", "endpoint", "slot", "annotator", "state", "goal", "reason", "rounds",
            "dialogue_id"} <= set(out["conversations"].columns)
    assert len(out["messages"]) == 2 * (1 + 3 + 2 + 2 + 1 + 1)
    assert len(out["ratings"]) == 6 * 2 and len(out["flags"]) == 6
    assert set(out["messages"]["text"]) == {f"问题{r}" for r in range(3)} | {f"回答{r}" for r in range(3)}
    assert len(out["conversations"]) == 7
