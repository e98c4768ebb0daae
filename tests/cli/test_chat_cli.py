"""`evalcore chat ...` end to end on a copy of the default store with a local echo endpoint: create (its refusals in
one sentence), a conversation held through the store as the page holds it, review (accept; send back with a
reason, replaced by a fresh conversation for someone else), show (results arithmetic), export, close, delete and
reopen."""
from __future__ import annotations

import csv

import pytest
from test_cli_chat import chat

from evalcore.cli import main
from evalcore.services import chats as service
from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import endpoints as registry
from support import copy_default_store
from support.judge_server import JudgeServer


def talk(db, task_id: int, person: str, said: list[str], rating: float) -> int:
    """A conversation held as the page holds it, rated `rating` on Info and Coh (the goal reached above 1)."""
    return chat(str(db), task_id, person, said, {"Info": rating, "Coh": rating}, goal=rating > 1)


def test_chat_commands(tmp_path, default_store_file, capsys):
    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    with JudgeServer(echo=True) as srv:
        con = connect(db)
        for name in ("alpha", "beta"):
            registry.add(con, registry.Registered(name, srv.url, "m", api_key_env=None))
        con.close()
        base = ["--db", str(db)]
        assert main(["chat", "create", *base, "--dataset", "demo-zh", "--track", "kdconv/knowledge",
                     "--endpoints", "alpha,nope"]) == 1
        assert "no endpoint named 'nope'" in capsys.readouterr().err
        assert main(["chat", "create", *base, "--dataset", "demo-zh", "--track", "kdconv/knowledge",
                     "--endpoints", "alpha,beta", "--scenarios", "2", "--max-rounds", "3", "--dimensions", "Info,Coh"]) == 0
        out = capsys.readouterr()
        assert out.out.strip() == "1" and "4 conversations (2 scenarios x 2 endpoints x 1)" in out.err
        first = talk(db, 1, "ann", ["你好", "导演是谁"], 2.0)
        second = talk(db, 1, "bob", ["你好"], 1.0)
        assert main(["chat", "review", "1", *base]) == 0
        assert "2 waiting for review" in capsys.readouterr().err
        assert main(["chat", "review", "1", *base, "--conversation", str(first), "--accept"]) == 0
        assert "accepted: dialogue chat1-c" in capsys.readouterr().out
        assert main(["chat", "review", "1", *base, "--conversation", str(second), "--send-back", "too short"]) == 0
        assert "takes its place" in capsys.readouterr().out
        assert main(["chat", "show", "1", *base]) == 0
        shown = capsys.readouterr().out
        assert "1 accepted" in shown and "1 sent back" in shown and "too short" in shown
        con = connect(db)
        try:
            endpoint = stored.conversation(con, first).endpoint
            table = service.results(con, 1)["table"].set_index("endpoint")
            assert table.loc[endpoint, "conversations"] == 1 and table.loc[endpoint, "rounds"] == 2.0
            assert table.loc[endpoint, "Info"] == 2.0 and table.loc[endpoint, "goal_reached"] == 1.0
            everything = service.results(con, 1, counted=("rated", "accepted"))["table"]
            assert everything["conversations"].sum() == 1   # the one sent back counts nowhere
            assert len(stored.conversations(con, 1)) == 5   # the fresh one in its place
        finally:
            con.close()
        assert main(["chat", "export", "1", *base, "--out", str(tmp_path / "out")]) == 0
        with open(tmp_path / "out" / "messages.csv", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
        assert [r["text"] for r in rows if r["conversation_id"] == str(first)] == ["你好", "echo: 你好", "导演是谁",
                                                                                      "echo: 导演是谁"]
        assert {r["annotator"] for r in rows} == {"ann", "bob"} and all(r["created_at"] for r in rows)
        for action in ("close", "delete", "reopen"):
            assert main(["chat", action, "1", *base]) == 0
        assert main(["chat", "list", *base, "--format", "csv"]) == 0
        assert "open" in capsys.readouterr().out


@pytest.mark.parametrize("extra, said", [(["--max-rounds", "0"], "--max-rounds"),
                                         (["--scenarios", "x"], "--scenarios")])
def test_chat_create_refuses_bad_numbers(extra, said, capsys):
    with pytest.raises(SystemExit):
        main(["chat", "create", "--dataset", "d", "--track", "t", "--endpoints", "a", *extra])
    assert said in capsys.readouterr().err
