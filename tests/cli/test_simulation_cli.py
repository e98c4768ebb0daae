"""`evalcore simulator ...`, `chat create --simulators`, `chat simulate` and `simulator-audit` end to end on a copy of the
default store with the local SimServer: refusals in one sentence with the store unchanged, a run, a second run with
nothing left to do, and the audit as a table and as JSON."""
from __future__ import annotations

import json

from evalcore.cli import main
from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import endpoints as registry
from support import copy_default_store
from support.sim_server import SimServer
from support.sim_store import SYSTEMS, people_talk


def test_simulator_commands(tmp_path, default_store_file, capsys):
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    base = ["--db", str(db)]
    with SimServer(echo=True) as srv:
        con = connect(db)
        for model in (*SYSTEMS, "sim-grounded", "sim-ignore"):
            registry.add(con, registry.Registered(model, srv.url, model, api_key_env=None))
        con.close()
        assert main(["simulator", "add", "g", *base, "--endpoint", "nope"]) == 1
        assert "no endpoint named 'nope'" in capsys.readouterr().err
        assert main(["simulator", "add", "g", *base, "--endpoint", "sim-grounded", "--template", "no-such"]) == 1
        assert "neither a shipped one" in capsys.readouterr().err
        con = connect(db)
        assert con.execute("SELECT count(*) FROM simulators").fetchall() == [(0,)]   # nothing stored
        con.close()
        assert main(["simulator", "add", "grounded", *base, "--endpoint", "sim-grounded"]) == 0
        assert main(["simulator", "add", "ignorer", *base, "--endpoint", "sim-ignore", "--style", "terse"]) == 0
        capsys.readouterr()
        assert main(["simulator", "list", *base, "--format", "json"]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert [(r["name"], r["style"]) for r in listed] == [("grounded", "cooperative"), ("ignorer", "terse")]
        assert main(["simulator", "show", "ignorer", *base, "--skill", "chitchat", "--language", "en"]) == 0
        shown = capsys.readouterr().out
        assert 'name = "user-chitchat-en"' in shown and "You are terse" in shown

        assert main(["chat", "create", *base, "--dataset", "demo-zh", "--track", "kdconv/knowledge", "--endpoints",
                     ",".join(SYSTEMS), "--scenarios", "2", "--max-rounds", "5", "--no-review",
                     "--simulators", "grounded,nobody"]) == 1
        assert "no simulator named 'nobody'" in capsys.readouterr().err
        assert main(["chat", "create", *base, "--dataset", "demo-zh", "--track", "kdconv/knowledge", "--endpoints",
                     ",".join(SYSTEMS), "--scenarios", "2", "--max-rounds", "5", "--no-review",
                     "--simulators", "grounded,ignorer"]) == 0
        out = capsys.readouterr()
        task_id = int(out.out.strip())
        assert "18 conversations (2 scenarios x 3 endpoints x 1 x 3 holders: people, grounded, ignorer)" in out.err

        assert main(["simulator-audit", *base, "--task", str(task_id)]) == 1
        assert "held by people" in capsys.readouterr().err
        assert main(["chat", "simulate", str(task_id), *base, "--concurrency", "4"]) == 0
        out = capsys.readouterr().out
        assert "12 of 12 simulated conversations finished (12 now)" in out
        assert main(["chat", "simulate", str(task_id), *base]) == 0   # nothing left: nothing sent
        assert "12 of 12 simulated conversations finished (0 now)" in capsys.readouterr().out

        con = connect(db)
        people_talk(con, stored.get(con, task_id))
        con.close()
        assert main(["simulator-audit", *base, "--task", str(task_id)]) == 0
        table = capsys.readouterr().out
        assert "Info: ranks the 3 systems as people did: tau 1.00 [1.00, 1.00]" in table
        assert "Info: ranks the 3 systems against people" in table
        assert main(["simulator-audit", *base, "--task", str(task_id), "--format", "json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert {r["simulator"] for r in data["summary"]} == {"grounded", "ignorer"}
        assert data["rankings"][0]["tau 95% CI"] == "[1.00, 1.00]"
        assert data["can people tell"]["rating task"] is None
        assert main(["chat", "detect", str(task_id), *base, "--per-dialogue", "2"]) == 0
        rid = int(capsys.readouterr().out.strip())
        assert main(["chat", "detect", str(task_id), *base]) == 1   # one per chat task
        assert "exists already" in capsys.readouterr().err
        assert main(["simulator-audit", *base, "--task", str(task_id)]) == 0
        assert f"can people tell? (rating task {rid}) no answers yet" in capsys.readouterr().out
