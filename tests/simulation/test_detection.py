"""Can people tell? The detection task over a chat task's accepted conversations (people's and two simulators'),
answered through the store as the Annotate page answers, and its accuracy against arithmetic written out here and
scipy's binomial test; the detection dataset says nothing of who held a conversation."""
from __future__ import annotations

import pytest
from scipy.stats import binomtest

from evalcore.simulation import detection
from evalcore.simulation.run import simulate
from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import tasks as task_store
from support import copy_default_store
from support.sim_server import SimServer
from support.sim_store import people_talk, setup


def test_people_telling_simulated_users_apart(tmp_path, default_store_file):
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    with SimServer(echo=True) as srv:
        con = connect(db)
        chat = setup(con, srv.url)
        with pytest.raises(ValueError, match="held by people and by a simulator both"):
            detection.create(con, chat.task_id)   # nothing accepted yet
        people_talk(con, chat)
        assert not simulate(con, chat.task_id).failed
    rid = detection.create(con, chat.task_id, per_dialogue=3)
    with pytest.raises(ValueError, match="exists already"):
        detection.create(con, chat.task_id)
    target = detection.dataset_of(chat)
    assert con.execute("SELECT DISTINCT split FROM dialogues WHERE dataset = ?", [target]).fetchall() == [("detect",)]
    assert "simulat" not in con.execute("SELECT description FROM datasets WHERE dataset = ?", [target]).fetchall()[0][0]
    task = task_store.get(con, rid)
    holder = {stored.dialogue_id_of(chat, int(c)): s for c, s in con.execute(
        "SELECT conversation_id, simulator FROM chat_conversations WHERE task_id = ?", [chat.task_id]).fetchall()}
    # ann and bob tell every conversation right; cai calls every user a person
    for person in ("ann", "bob", "cai"):
        while (unit := task_store.next_unit(con, task, person)) is not None:
            dialogue = con.execute("SELECT item_id FROM task_units WHERE task_id = ? AND unit = ?",
                                   [rid, unit]).fetchall()[0][0]
            value = 1.0 if person == "cai" or holder[dialogue] is None else 0.0
            task_store.answer(con, task, unit, person, "Person", value)
    out = detection.report(con, chat.task_id)
    con.close()
    # 27 dialogues (9 people's, 9 per simulator) x 3 answers: ann and bob 27 right each, cai the 9 people's
    overall = out["overall"]
    assert (overall["answers"], overall["dialogues"]) == (81, 27)
    assert overall["accuracy"] == pytest.approx(63 / 81, abs=1e-12)
    assert overall["p"] == pytest.approx(binomtest(63, 81, 0.5).pvalue, abs=1e-12)
    lo, hi = overall["ci"]
    assert lo <= 63 / 81 <= hi
    assert out["per simulator"]["grounded"]["accuracy"] == pytest.approx(45 / 54, abs=1e-12)
    assert out["verdict"].startswith("people tell simulated users from people: accuracy 0.78")


def test_an_accuracy_whose_interval_holds_half_says_it_cannot_tell():
    import pandas as pd

    frame = pd.DataFrame({"dialogue_id": list("abcdef"), "correct": [True, False, True, False, True, False]})
    a = detection.accuracy(frame)
    assert a["accuracy"] == 0.5 and a["ci"][0] < 0.5 < a["ci"][1]
    assert detection.verdict(a).startswith("cannot say that people tell them apart")
