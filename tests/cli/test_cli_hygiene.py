"""CLI hygiene (issue 28): read-only commands never create a store, `submissions --model` on a store
without submissions, and the `leaderboard` ranked by the dashboard's default."""
from __future__ import annotations

import json

import pytest

from evalcore.cli import main
from support import TOY_ITEMS, write_jsonl
from support.apptest import run

READERS = [
    ["leaderboard", "--dataset", "x"], ["correlate", "--dataset", "x"], ["template", "--dataset", "x"],
    ["trust", "--dataset", "x"], ["agreement", "--dataset", "x"], ["ensemble", "--dataset", "x"],
    ["ranking", "--dataset", "x"], ["winrate", "--dataset", "x"], ["summary"], ["models"], ["jobs"],
    ["submissions"], ["submissions", "--model", "m"], ["restore", "1"], ["purge", "1", "--yes"],
    ["delete-model", "m", "--yes"],
]


@pytest.mark.parametrize("command", READERS, ids=lambda c: " ".join(c))
def test_a_read_only_command_on_a_missing_store_is_an_error_naming_it(command, tmp_path, capsys):
    db = tmp_path / "nowhere" / "typo.duckdb"
    assert main([*command, "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: no store at {db}"), err
    assert not db.exists() and not db.parent.exists()  # nothing created, not even the folder


def test_write_commands_still_create_the_store(tmp_path):
    db = tmp_path / "new" / "s.duckdb"
    assert main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", TOY_ITEMS)), "--db", str(db)]) == 0
    assert db.is_file()


def test_submissions_for_a_model_on_a_store_without_submissions(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    main(["score", "--db", str(db)])  # a write command: creates the (empty) store
    capsys.readouterr()
    assert main(["submissions", "--db", str(db), "--model", "M"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "(nothing)" and "Traceback" not in captured.err
    assert main(["submissions", "--db", str(db), "--model", "M", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    # ... and with submissions, only the model's own are listed
    main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", TOY_ITEMS)), "--db", str(db)])
    (tmp_path / "r.csv").write_text("item_id,response\nt1,好\n", encoding="utf-8")
    main(["import", "responses", str(tmp_path / "r.csv"), "--db", str(db), "--dataset", "toy",
          "--track", "toy/chitchat", "--model", "m1"])
    capsys.readouterr()
    assert main(["submissions", "--db", str(db), "--model", "m1", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["models"] for r in rows] == ["m1"]
    # a model neither stored nor named by any submission, once there is a history: exit 2, listing the known
    assert main(["submissions", "--db", str(db), "--model", "M", "--format", "json"]) == 2
    assert "unknown model 'M'" in capsys.readouterr().err


def _toy_scored(tmp_path) -> str:
    """toy/chitchat (skill chitchat: no official rule) answered whole by three models, scored."""
    db = str(tmp_path / "s.duckdb")
    assert main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", TOY_ITEMS)), "--db", db]) == 0
    (tmp_path / "r.csv").write_text("item_id,model,response\n"
                                    "t1,a,今天天气不错\nt2,a,我喜欢猫\n"
                                    "t1,b,今天天气\nt2,b,猫\n"
                                    "t1,c,不知道\nt2,c,嗯\n", encoding="utf-8")
    assert main(["import", "responses", str(tmp_path / "r.csv"), "--db", db, "--dataset", "toy",
                 "--track", "toy/chitchat"]) == 0
    assert main(["score", "--db", db, "--dataset", "toy"]) == 0
    return db


def test_cli_leaderboard_ranks_by_the_pages_default(tmp_path, capsys, monkeypatch):
    db = _toy_scored(tmp_path)
    at = run("leaderboard", monkeypatch, {"EVALCORE_DB": db}, dataset="toy", track="toy/chitchat")
    page_default = next(s for s in at.selectbox if s.label == "Rank by").value
    capsys.readouterr()
    assert main(["leaderboard", "--db", db, "--dataset", "toy", "--track", "toy/chitchat", "--format", "json"]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out) if r["origin"] == "computed"]
    assert {r["rank_by"] for r in rows} == {page_default}
    # ranked by that column, higher first: the ranks are the order of its values
    by_value = sorted(rows, key=lambda r: -r[page_default])
    assert [r["model"] for r in sorted(rows, key=lambda r: r["rank"])] == [r["model"] for r in by_value]
    assert sorted(r["rank"] for r in rows) == [1, 2, 3]
    # every track of the dataset when none is named: the same default, the same ranks
    assert main(["leaderboard", "--db", db, "--dataset", "toy", "--format", "json"]) == 0
    every = [r for r in json.loads(capsys.readouterr().out)
             if r["origin"] == "computed" and r["track"] == "toy/chitchat"]
    assert {(r["model"], r["rank"], r["rank_by"]) for r in every} == {(r["model"], r["rank"], r["rank_by"]) for r in rows}
