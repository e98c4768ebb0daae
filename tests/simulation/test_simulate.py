"""Simulated conversations on demo-zh's knowledge and chit-chat scenarios, run against the tests' local server acting as
two simulators (one that uses the scenario, one that ignores it) and three systems of different quality; people hold
conversations on the same scenarios through the store, as the Chat page does. Each conversation is whole (the roles
alternate, it ends, it is rated once), a run stopped by an endpoint going down goes on where the store stands with
nothing stored twice, a hostile simulator's reply is stored as bounded text, and the signature goes on every
simulated conversation's task."""
from __future__ import annotations

import pytest

from evalcore.core.chat import MAX_TEXT
from evalcore.simulation.run import parse_rating, simulate
from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import simulators as registry
from evalcore.store.tasks import Dimension
from support import copy_default_store
from support.sim_store import SIMULATORS, SYSTEMS, people_talk, setup
from support.sim_server import HOSTILE, SimServer


@pytest.fixture
def db(tmp_path, default_store_file):
    return copy_default_store(default_store_file, tmp_path / "s.duckdb")


def whole(con, task_id: int) -> None:
    """Every simulated conversation ended and rated, its messages alternating user/system from 0 without a gap, the
    user first, each reply stored once."""
    convs = stored.conversations(con, task_id)
    sims = convs[convs["simulator"].notna()]
    assert set(sims["state"]) == {"accepted"}, sims["state"].value_counts()
    for cid in sims["conversation_id"]:
        frame = stored.messages(con, int(cid))
        assert frame["idx"].tolist() == list(range(len(frame)))
        assert frame["role"].tolist() == ["user", "assistant"] * (len(frame) // 2)


@pytest.mark.parametrize("track", ["kdconv/knowledge", "lccc/chitchat"])
def test_every_simulated_conversation_is_whole_and_signed(db, track):
    with SimServer(echo=True) as srv:
        con = connect(db)
        task = setup(con, srv.url, track=track)
        out = simulate(con, task.task_id)
        assert not out.failed, out.failed
        assert out.finished_now == len(SIMULATORS) * len(SYSTEMS) * 3
        whole(con, task.task_id)
        # the scenario-using simulator brought the scenario up: its first message is from the scenario
        first = con.execute("""SELECT m.text, s.grounding, s.opening FROM chat_messages m
            JOIN chat_conversations c USING (conversation_id) JOIN chat_scenarios s ON s.task_id = c.task_id
            AND s.scenario = c.scenario WHERE c.task_id = ? AND c.simulator = 'grounded' AND m.idx = 0""",
                            [task.task_id]).fetchall()
        for text, grounding, opening in first:
            assert (opening and text == opening) or text.removeprefix("我想知道") in grounding
        for name, setting in task.simulators.items():
            sig = setting["signature"]
            assert sig.startswith(f"sim:{SIMULATORS[name]}@127.0.0.1:") and f"items:chat{task.task_id}" in sig
            assert f"style:{setting['style']}" in sig and f"#{setting['template_sha256'][:12]}" in sig
        # each simulator's accepted conversations are dialogues of its own dataset, none of people's
        rows = dict(con.execute("SELECT dataset, count(*) FROM dialogues WHERE dataset LIKE 'chat-%' GROUP BY 1").fetchall())
        assert rows == {task.target_of(s): len(SYSTEMS) * 3 for s in SIMULATORS}
        assert con.execute("SELECT count(*) FROM human_ratings WHERE dataset LIKE 'chat-%'").fetchall()[0][0] == 0
        con.close()


def test_a_run_stopped_by_an_endpoint_going_down_goes_on_where_the_store_stands(db):
    with SimServer(echo=True, fail_after=40) as srv:
        con = connect(db)
        task = setup(con, srv.url)
        first = simulate(con, task.task_id, concurrency=4, retries=1)
        assert first.failed and all("could not be reached" in why or "did not answer" in why
                                    for why in first.failed.values())
        before = con.execute("SELECT count(*) FROM chat_messages").fetchall()[0][0]
        assert before == first.messages > 0
        srv.up()
        asked = srv.requests
        second = simulate(con, task.task_id, concurrency=4)
        assert not second.failed
        whole(con, task.task_id)
        total = con.execute("SELECT count(*) FROM chat_messages").fetchall()[0][0]
        assert total == before + second.messages   # nothing stored before is stored again
        # the second run asked only for what was missing: one request per message it stored, one questionnaire per
        # conversation it finished, and each message the first run lost in flight once more
        assert srv.requests - asked == second.requests
        assert second.requests >= second.messages + second.finished_now
        con.close()


def test_a_hostile_simulated_user_is_stored_as_bounded_text(db):
    with SimServer(echo=True) as srv:
        con = connect(db)
        task = setup(con, srv.url, simulators={"huge": "sim-huge"}, systems=("sys-good",))
        out = simulate(con, task.task_id)
        assert not out.failed
        said = con.execute("SELECT text FROM chat_messages m JOIN chat_conversations c USING (conversation_id) "
                           "WHERE c.task_id = ? AND m.role = 'user'", [task.task_id]).fetchall()
        assert said and all(HOSTILE[:20] in t and len(t.encode()) <= MAX_TEXT for (t,) in said)
        con.close()


def test_people_never_get_a_simulated_conversation_and_simulators_never_take_theirs(db):
    with SimServer(echo=True) as srv:
        con = connect(db)
        task = setup(con, srv.url)
        people_talk(con, task)
        convs = stored.conversations(con, task.task_id)
        assert convs.loc[convs["simulator"].isna(), "state"].eq("accepted").all()
        assert convs.loc[convs["simulator"].notna(), "state"].eq("open").all()   # not run yet, never assigned
        assert not convs.loc[convs["simulator"].notna(), "person"].notna().any()
        con.close()


def test_the_questionnaire_answer_is_checked_before_anything_is_stored():
    dims = Dimension
    info = [dims("Info", 0, 2, "", None)]
    assert parse_rating('sure: {"Info": 2, "goal": true}', info) == ({"Info": 2.0}, True)
    assert parse_rating('{"Info": 1}', info) == ({"Info": 1.0}, None)
    for bad in ('{"Info": 3}', '{"Info": "2"}', '{"Info": true}', 'no json', '{"Coh": 1}'):
        with pytest.raises(ValueError):
            parse_rating(bad, info)


def test_a_simulator_name_is_checked_and_look_alikes_are_taken(db):
    con = connect(db)
    registry.add(con, registry.Simulator("alice", "x", "cooperative", None, 0))
    for bad in ("", "ali\u200bce", "a\x1bb"):
        with pytest.raises(ValueError):
            registry.add(con, registry.Simulator(bad, "x", "cooperative", None, 0))
    with pytest.raises(ValueError, match="registered already"):
        registry.add(con, registry.Simulator("\u0430lice", "x", "cooperative", None, 0))   # Cyrillic а
    con.close()


def test_a_run_is_refused_when_an_endpoint_is_no_longer_asked_as_the_task_froze_it(db):
    from evalcore.store import endpoints as endpoints

    with SimServer(echo=True) as srv:
        con = connect(db)
        task = setup(con, srv.url)
        endpoints.add(con, endpoints.Registered("sys-good", srv.url, "sys-good", api_key_env=None, temperature=0.1),
                      replace=True)
        with pytest.raises(ValueError, match="sys-good changed since the task was made .temperature"):
            simulate(con, task.task_id)
        assert con.execute("SELECT count(*) FROM chat_messages").fetchall() == [(0,)] and srv.requests == 0
        con.close()


def test_judgments_the_judge_did_not_give_are_asked_again(db):
    from evalcore.simulation.judging import judge
    from evalcore.store import endpoints as endpoints

    with SimServer(echo=True) as srv:
        con = connect(db)
        task = setup(con, srv.url, simulators={"grounded": "sim-grounded"}, systems=("sys-good",), scenarios=2)
        assert not simulate(con, task.task_id).failed
        endpoints.add(con, endpoints.Registered("judge", srv.url, "judge", api_key_env=None))
        srv.fail_after = srv.answered + 3   # the judge's server goes down after 3 answers
        first = judge(con, task.task_id, "judge", held_by="simulated", concurrency=1)
        assert first["asked"] == 2 * 3 and first["judged"] == 3 and sum(first["failed"].values()) == 3
        srv.up()
        again = judge(con, task.task_id, "judge", held_by="simulated")
        assert again["asked"] == again["judged"] == 3   # only what had no rating
        assert con.execute("SELECT count(*) FROM chat_judgments WHERE value IS NOT NULL").fetchall() == [(6,)]
        con.close()


def test_a_task_closed_during_a_run_takes_nothing_more(db):
    """Closed while its conversations run: the run stops each with the reason, stores nothing after the close, and
    goes on when the task is reopened."""
    import threading
    from datetime import datetime

    with SimServer(echo=True, delay=0.05) as srv:
        con = connect(db)
        task = setup(con, srv.url)
        other = connect(db, wait=30)   # the page that closes it (the run lets the store go between its writes)
        con.close()
        from evalcore.store import Handle

        handle = Handle(db, connect(db))
        closed = []

        def close():
            stored.set_state(other, task.task_id, "closed")
            closed.append(datetime.now())

        closer = threading.Timer(0.6, close)
        closer.start()
        out = simulate(handle.con, task.task_id, concurrency=4, handle=handle)
        closer.join()
        last = other.execute("SELECT max(created_at) FROM chat_messages").fetchall()[0][0]
        assert out.failed and all("is closed: nothing was stored" in why or "store refused" in why
                                  for why in out.failed.values())
        stored.set_state(other, task.task_id, "open")
        other.close()
        again = simulate(handle.con, task.task_id, handle=handle)
        assert not again.failed
        whole(handle.con, task.task_id)
        assert last is not None and last <= closed[0]   # nothing of the first run stored after the close
        handle.con.close()
