"""`chat create --platform` and the crowd commands with --chat (issue 65): a chat task opened for Prolific at creation,
its instruction check and comprehension question added, its link on the Chat page, its workers and quality listed;
a rating study's gold units, an instruction without --chat and --platform with --no-people are refused."""
from __future__ import annotations

import pytest

from evalcore.cli import main
from evalcore.store import connect
from evalcore.store import endpoints as registry
from support import copy_default_store

CHAT = ["chat", "create", "--dataset", "demo-zh", "--track", "kdconv/knowledge", "--endpoints", "alpha", "--scenarios",
        "3", "--lang", "en"]


@pytest.fixture(scope="module")
def db(tmp_path_factory, default_store_file):
    path = copy_default_store(default_store_file, tmp_path_factory.mktemp("crowd-chat-cli") / "s.duckdb")
    con = connect(path)
    registry.add(con, registry.Registered("alpha", "http://127.0.0.1:9/v1", "served", api_key_env=None))
    con.close()
    return str(path)


def test_a_chat_study_from_the_command_line(db, capsys):
    assert main([*CHAT, "--db", db, "--platform", "prolific", "--completion-code", "C1", "--failed-code", "F1",
                 "--units-per-worker", "2", "--gold-per-worker", "1"]) == 0
    out, err = capsys.readouterr()
    task = int(out.strip())
    assert f"chat task {task} is open to prolific: 2 conversations per worker, 1 of them with an instruction check" \
        in err and f"/chat?task={task}&PROLIFIC_PID=" in err
    assert main(["crowd", "instruction", "--chat", str(task), "--db", db, "--text",
                 "In your first message, mention the word giraffe.", "--expect", "giraffe"]) == 0
    assert "instruction check 1 added" in capsys.readouterr().out
    assert main(["crowd", "question", "--chat", str(task), "--db", db, "--question", "What do you do?", "--option",
                 "Rate", "--option", "Talk, then rate", "--answer", "2"]) == 0
    assert main(["crowd", "link", "--chat", str(task), "--db", db, "--base", "https://eval.example.org"]) == 0
    assert capsys.readouterr().out.strip().endswith(
        f"https://eval.example.org/chat?task={task}&PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}"
        "&SESSION_ID={{%SESSION_ID%}}")
    for command in ("workers", "quality"):
        assert main(["crowd", command, "--chat", str(task), "--db", db]) == 0
    capsys.readouterr()
    assert main(["crowd", "gold", "--chat", str(task), "--db", db, "--kind", "nonsense", "--dimension", "Info",
                 "--expect", "0"]) == 1
    assert "instructions inside the scenario" in capsys.readouterr().err
    assert main(["crowd", "instruction", str(task), "--db", db, "--text", "x", "--expect", "y"]) == 1
    assert "give --chat" in capsys.readouterr().err
    assert main(["crowd", "link", str(task + 100), "--chat", "--db", db]) == 1
    assert "no chat task" in capsys.readouterr().err


def test_platform_with_no_people_is_refused(db, capsys):
    assert main([*CHAT, "--db", db, "--platform", "prolific", "--completion-code", "C1", "--no-people",
                 "--simulators", "nobody"]) == 1
    assert "drop --no-people" in capsys.readouterr().err
