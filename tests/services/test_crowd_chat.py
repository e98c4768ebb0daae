"""A crowd study of a chat task (issue 65) at the service level, on a copy of the default store: a chat task opened
for Prolific with two conversations a worker, one of them carrying an instruction check inside its scenario, and a
comprehension question. Four workers enter by identifier, hold their conversations one after another (the model's
replies stored as a local endpoint's would be), and finish: the one who did not follow the instruction and the one
who tried a second identity from their browser fail; the excluded workers' dialogue ratings leave human_ratings (a
conversation accepted after the exclusion too) and come back when they are put back; the dialogues stay."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from evalcore.services import chats as chat_service
from evalcore.services import crowd
from evalcore.store import chats as chat_store
from evalcore.store import connect
from evalcore.store import crowd as crowd_store
from evalcore.store import endpoints as registry
from support import copy_default_store, tables_holding

UNITS, GOLD = 2, 1
INSTRUCTION = "In your first message, mention the word giraffe."


@pytest.fixture()
def study(tmp_path, default_store_file):
    con = connect(copy_default_store(default_store_file, tmp_path / "s.duckdb"))
    for name in ("secret-alpha", "secret-beta"):   # never reached: the replies are stored here as an endpoint's
        registry.add(con, registry.Registered(name, "http://127.0.0.1:9/v1", "m", api_key_env=None))
    task_id = chat_service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge",
                                       endpoints=["secret-alpha", "secret-beta"], n_scenarios=6, max_rounds=3,
                                       review=True, lang="en")
    opened = crowd.open_study(con, task_id, kind="chat", platform="prolific", completion_code="CHAT42",
                              failed_code="CFAIL42", units=UNITS, gold=GOLD, pay=2.0, currency="GBP",
                              pass_rule={"gold_min": 1.0})
    crowd.add_instruction(con, task_id, INSTRUCTION, "Giraffe")
    crowd_store.add_question(con, task_id, "What do you do?", ["rate replies only", "talk, then rate"], 1, kind="chat")
    yield con, opened, chat_store.get(con, task_id)
    con.close()


def pid(n: int) -> str:
    return f"{n:024x}"


def hold(con, study, task, worker, *, follows: bool, start: datetime) -> list[tuple[int, str | None]]:
    """The worker's conversations one after another: a message (the instruction followed, in full-width capitals,
    when told and `follows`), the model's reply, the end, every dimension rated; (conversation, instruction) each."""
    held, now = [], start
    while (cid := crowd.next_conversation(con, study, task, worker.annotator, now=now)) is not None:
        told = crowd.instruction(con, study, task, worker.annotator, cid)
        text = "你好，我们聊聊这个吧" + ("，ＧＩＲＡＦＦＥ！" if told and follows else "")
        idx = chat_store.say(con, cid, worker.annotator, text, now=now + timedelta(seconds=20))
        chat_store.reply(con, cid, idx, "好的。", now=now + timedelta(seconds=22))
        chat_store.end(con, cid, worker.annotator, goal=True, now=now + timedelta(seconds=60))
        for d in task.dimensions:
            chat_store.rate(con, cid, worker.annotator, d.dimension, d.max, now=now + timedelta(seconds=70))
        held.append((cid, told))
        now += timedelta(minutes=2)
    return held


def test_a_chat_study_from_entry_to_codes(study):
    con, opened, task = study
    start = datetime(2026, 11, 28, 12, 0)
    assert crowd.link(opened, "https://lab.example") == (
        f"https://lab.example/chat?task={task.task_id}&PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    ids = {n: crowd.ids_from(opened, {"PROLIFIC_PID": pid(n), "STUDY_ID": "s1", "SESSION_ID": f"sess{n}"})
           for n in range(4)}
    workers = {n: crowd.enter(con, opened, ids[n], client=f"10.0.0.{n}|Firefox", now=start) for n in range(4)}
    # worker 1 comes back from their browser as someone else: refused, counted on them
    with pytest.raises(crowd.Refused, match="another worker"):
        crowd.enter(con, opened, crowd.ids_from(opened, {"PROLIFIC_PID": pid(99), "SESSION_ID": "sess99"}),
                    client="10.0.0.1|Firefox")
    # a rating study of the same number is another study: the chat study's workers are not its workers
    assert crowd_store.workers(con, "rating", task.task_id).empty
    for w in workers.values():
        assert crowd.check(con, opened, w.worker, [1]) == (True, 1)
    held = {n: hold(con, opened, task, w, follows=(n != 3), start=start) for n, w in workers.items()}
    for n, convs in held.items():
        assert len(convs) == UNITS, n                                    # their share, never more
        assert sum(told == INSTRUCTION for __, told in convs) == GOLD, n   # the check in one conversation of theirs
        assert crowd.next_conversation(con, opened, task, workers[n].annotator) is None
    # the instruction is the worker's alone: the model's messages never hold it
    cid, __ = next(c for c in held[0] if c[1])
    assert INSTRUCTION not in str(chat_service.model_messages(con, task, cid))
    # the reviewer accepts every conversation but one of worker 3's before they finish
    late = held[3][1][0]
    for convs in held.values():
        for cid, __ in convs:
            if cid != late:
                chat_service.review(con, cid, "lab", accept=True)
    endings = {n: crowd.finish(con, opened, w.worker) for n, w in workers.items()}
    assert {n for n, e in endings.items() if not e.passed} == {1, 3}
    assert endings[0].code == "CHAT42" and endings[0].redirect.endswith("cc=CHAT42")
    assert endings[3].code == "CFAIL42" and any("instructions" in r for r in endings[3].reasons)
    assert any("another worker" in r for r in endings[1].reasons)
    assert crowd.finish(con, opened, workers[0].worker) == endings[0]   # asked again: the same
    quality = crowd.chat_quality(con, opened, task).set_index("annotator")
    assert quality.loc[workers[0].annotator, ["conversations", "checks", "checks_passed"]].tolist() == [2, 1, 1]
    assert quality.loc[workers[3].annotator, ["checks", "checks_passed"]].tolist() == [1, 0]
    # worker 3's conversation accepted after the exclusion: its ratings go where the exclusion put the others
    chat_service.review(con, late, "lab", accept=True)
    careless = workers[3].annotator
    mine = "SELECT count(*) FROM {table} WHERE origin = ? AND annotator = ?"
    count = lambda table: con.execute(mine.format(table=table), [task.origin, careless]).fetchall()[0][0]  # noqa: E731
    per_conversation = len(task.dimensions)
    assert count("human_ratings") == 0 and count("excluded_ratings") == UNITS * per_conversation
    assert count("excluded_ratings") == UNITS * per_conversation
    kept = con.execute("SELECT count(*) FROM human_ratings WHERE origin = ?", [task.origin]).fetchall()[0][0]
    assert kept == 2 * UNITS * per_conversation   # workers 0 and 2 (worker 1 failed too)
    # the dialogues stay in the dataset
    assert con.execute("SELECT count(*) FROM dialogues WHERE dataset = ?", [task.target]).fetchall()[0][0] == 4 * UNITS
    crowd.include(con, task.task_id, careless, reason="wrote it in Chinese", by="lab", kind="chat")
    assert count("human_ratings") == UNITS * per_conversation and count("excluded_ratings") == 0
    with pytest.raises(crowd.Refused, match="not excluded"):
        crowd.include(con, task.task_id, careless, reason="again", by="lab", kind="chat")
    crowd.exclude(con, task.task_id, careless, reason="after all", by="lab", kind="chat")
    assert count("human_ratings") == 0
    assert list(crowd_store.decisions(con, task.task_id, "chat").query("annotator == @careless")["decided_by"]) == [
        "pass rule", "lab", "lab"]
    # the task's own results (`chat show`, the Chat tasks page) leave the excluded workers' conversations out too
    counted = chat_service.results(con, task.task_id, bootstrap=20)["table"]["conversations"].sum()
    held = chat_store.conversations(con, task.task_id)
    kept_in = held[held["state"].isin(chat_store.COUNTED) & held["simulator"].isna()
                   & ~held["annotator"].isin(crowd_store.excluded(con, task.task_id, "chat"))]
    assert counted == len(kept_in) and careless not in set(kept_in["annotator"])
    # identifiers: stored once, nowhere else
    assert tables_holding(con, [pid(n) for n in range(4)], skip=("crowd_workers",)) == []


def test_a_chat_study_refuses_what_it_cannot_be(study):
    con, opened, task = study
    with pytest.raises(crowd.Refused, match="open to a crowd platform already"):
        crowd.open_study(con, task.task_id, kind="chat", platform="prolific", completion_code="X", units=2)
    with pytest.raises(crowd.Refused, match="instruction check"):
        crowd.add_instruction(con, task.task_id, "  ", "word")
    other = chat_service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge", endpoints=["secret-alpha"],
                                     n_scenarios=2, max_rounds=2)
    with pytest.raises(crowd.Refused, match="instruction check per worker"):
        crowd.open_study(con, other, kind="chat", platform="generic", completion_code="X", units=2, gold=3)
    one = crowd.open_study(con, other, kind="chat", platform="generic", completion_code="X", units=1, gold=1)
    assert crowd.gold_places(one, chat_store.get(con, other), "generic-abc") == {0}   # the first place may hold it
