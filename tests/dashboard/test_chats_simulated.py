"""The Chat tasks page (AppTest) on a task held by people and two simulators: it lists each simulator's conversations
and signature and shows the audit's verdicts as plain text (the scenario-ignoring simulator found out); before the
people have talked it says what is missing; a hostile simulated user's 2 MB message of markup waiting for review is
drawn as text only, bounded. The create form takes simulators."""
from __future__ import annotations

from evalcore.core.chat import MAX_TEXT
from evalcore.simulation.run import simulate
from evalcore.store import connect
from support import copy_default_store
from support.apptest import run
from support.sim_server import HOSTILE, SimServer
from support.sim_store import people_talk, setup


def test_the_audit_on_the_chat_tasks_page(tmp_path, default_store_file, monkeypatch):
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    with SimServer(echo=True) as srv:
        con = connect(db)
        task = setup(con, srv.url)
        assert not simulate(con, task.task_id).failed
        con.close()
        at = run("chats", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id))
        assert any("Simulator audit: no accepted conversations held by people yet" in c.value.replace("\\", "")
                   for c in at.caption)   # captions are markdown: their colons come escaped
        con = connect(db)
        people_talk(con, task)
        con.close()
        at = run("chats", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id))
    texts = [t.value for t in at.text]
    # each simulator's name, then its verdicts, one text each (indented under it)
    grounded, ignorer = texts.index("grounded"), texts.index("ignorer")
    assert texts[grounded + 1] == "Info: ranks the 3 systems as people did: tau 1.00 [1.00, 1.00]"
    assert texts[ignorer + 1].startswith("Info: ranks the 3 systems against people")
    signatures = [t for t in texts if t.startswith(("grounded: sim:sim-grounded@", "ignorer: sim:sim-ignore@"))]
    assert len(signatures) == 2   # whole, as text: a table's cell would cut them
    frames = [d.value for d in at.dataframe]
    listing = next(f for f in frames if "accepted" in f.columns and "simulator" in f.columns)
    assert listing.set_index("simulator")["accepted"].to_dict() == {"grounded": 9, "ignorer": 9}
    summary = next(f for f in frames if "ranks as people did on" in f.columns)
    assert summary.set_index("simulator").loc["grounded", "ranks as people did on"] == "Info, Coh, Know, goal reached"


def test_a_hostile_simulated_user_waiting_for_review_is_shown_as_text(tmp_path, default_store_file, monkeypatch):
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    with SimServer(echo=True) as srv:
        con = connect(db)
        from evalcore.services import chats as service
        from evalcore.store import chats as stored

        setup(con, srv.url, simulators={"huge": "sim-huge"}, systems=("sys-good",), scenarios=1)
        tid = service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge", endpoints=["sys-good"],
                                  n_scenarios=1, max_rounds=3, review=True, simulators=["huge"], people=False)
        assert not simulate(con, tid).failed
        assert stored.conversations(con, tid)["state"].tolist() == ["rated"]
        con.close()
    at = run("chats", monkeypatch, {"EVALCORE_DB": db}, task=str(tid))
    said = [t.value for t in at.text if HOSTILE[:20] in t.value]
    assert said and all(len(t.encode()) <= MAX_TEXT for t in said)
    assert not any(HOSTILE[:10] in m.value for m in at.markdown)   # never drawn as markdown


def test_the_simulated_conversations_run_as_a_job_from_the_page(tmp_path, default_store_file, monkeypatch):
    """The page's button records a simulation job; the job (run here as its worker would) holds every simulated
    conversation to its end, and the page then shows it done."""
    from evalcore.services import jobs
    from evalcore.store import chats as stored
    from evalcore.store import Handle

    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    started = []
    monkeypatch.setattr(jobs, "start", lambda path, job: started.append(job))   # no worker process in a page test
    with SimServer(echo=True) as srv:
        con = connect(db)
        task = setup(con, srv.url)
        con.close()
        at = run("chats", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id))
        button = next(b for b in at.button if b.label.startswith("Run the 18 simulated conversations"))
        button.click().run()
        assert len(started) == 1
        con = connect(db)
        handle = Handle(db, con)
        assert jobs.run(con, started[0], handle=handle)
        con = handle.con
        assert con.execute("SELECT state, kind FROM jobs WHERE job_id = ?", [started[0]]).fetchall() == [("done", "simulate")]
        convs = stored.conversations(con, task.task_id)
        assert convs.loc[convs["simulator"].notna(), "state"].eq("accepted").all()
        con.close()
    at = run("chats", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id))
    assert any(f"Simulation job {started[0]}\\: done" in e.proto.text for e in at.get("progress"))
    assert not any(b.label.startswith("Run the") for b in at.button)   # nothing left to run


def test_the_page_asks_people_who_held_each_conversation(tmp_path, default_store_file, monkeypatch):
    """Once the audit has something, the page makes the detection task and then shows its verdict."""
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    with SimServer(echo=True) as srv:
        con = connect(db)
        task = setup(con, srv.url, scenarios=1)
        people_talk(con, task)
        assert not simulate(con, task.task_id).failed
        con.close()
    at = run("chats", monkeypatch, {"EVALCORE_DB": db}, task=str(task.task_id))
    next(b for b in at.button if b.label == "Ask people who held each conversation").click().run()
    assert not at.exception
    assert any(t.value.startswith("Can people tell? (rating task 2) no answers yet") for t in at.text)
