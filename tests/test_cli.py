"""The CLI as a user runs it: exit codes, messages, formats."""
import json
import subprocess
import sys

from conftest import ROOT, TOY_ITEMS, write_jsonl
from evalcore.cli import main


def test_import_summary_and_delete(tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    assert main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", TOY_ITEMS)), "--db", db]) == 0
    (tmp_path / "r.csv").write_text("item_id,response\nt1,好\nt2,嗯\n", encoding="utf-8")
    assert main(["import", "responses", str(tmp_path / "r.csv"), "--db", db, "--dataset", "toy",
                 "--track", "toy/chitchat", "--model", "m1"]) == 0
    capsys.readouterr()
    assert main(["summary", "--db", db, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0] == {"dataset": "toy", "track": "toy/chitchat", "items": 2, "references": 1, "models": 1,
                       "responses": 2, "human_ratings": 0, "system_scores": 0}
    assert main(["delete-model", "m1", "--db", db]) == 1  # without --yes it only tells
    assert "would delete 2 responses" in capsys.readouterr().out
    assert main(["delete-model", "m1", "--db", db, "--yes"]) == 0
    assert main(["summary", "--db", db, "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("["):])[0]["responses"] == 0


def test_refused_import_exits_2_and_names_the_place(tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", TOY_ITEMS)), "--db", db])
    (tmp_path / "bad.csv").write_text("item_id,response\nt1,好\nzz,嗯\n", encoding="utf-8")
    code = main(["import", "responses", str(tmp_path / "bad.csv"), "--db", db, "--dataset", "toy",
                 "--track", "toy/chitchat", "--model", "m1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "bad.csv, row 3, field 'item_id': expected an item of track 'toy/chitchat'" in err
    assert "nothing was written" in err


def test_bad_scale_option(tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    assert main(["import", "ratings", "x.csv", "--db", db, "--dataset", "d", "--track", "t", "--scale", "Info"]) == 1
    assert "--scale expects DIM=MIN:MAX" in capsys.readouterr().err


def test_python_dash_m_runs(tmp_path):
    out = subprocess.run([sys.executable, "-m", "evalcore", "summary", "--db", str(tmp_path / "s.duckdb"), "--format", "csv"],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[0] == "dataset,track,items,references,models,responses,human_ratings,system_scores"


def test_score_and_leaderboard_commands(tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", TOY_ITEMS)), "--db", db])
    (tmp_path / "r.csv").write_text("item_id,response\nt1,今天天气不错\n", encoding="utf-8")
    main(["import", "responses", str(tmp_path / "r.csv"), "--db", db, "--dataset", "toy",
          "--track", "toy/chitchat", "--model", "m1"])
    assert main(["score", "--db", db, "--dataset", "toy", "--metrics", "lexical"]) == 0
    capsys.readouterr()
    assert main(["leaderboard", "--db", db, "--dataset", "toy", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["model"] == "m1" and rows[0]["origin"] == "computed"
    assert rows[0]["BLEU4"] == 1.0 and rows[0]["F1"] == 1.0
    assert main(["score", "--db", db, "--metrics", "BLEU9"]) == 1
    assert "unknown metric 'BLEU9'" in capsys.readouterr().err


def test_unknown_names_exit_2_listing_what_exists_closest_first(tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", TOY_ITEMS)), "--db", db])
    main(["import", "items", str(write_jsonl(tmp_path / "j.jsonl", [{**TOY_ITEMS[0], "dataset": "other"}])),
          "--db", db])
    capsys.readouterr()
    # a typo in the dataset: exit 2, the closest name first (was "(nothing)" and exit 0)
    for command in (["summary"], ["leaderboard"], ["correlate"], ["trust"], ["models"]):
        assert main([*command, "--db", db, "--dataset", "toys"]) == 2, command
        err = capsys.readouterr().err
        assert "unknown dataset 'toys'; known, closest first: toy, other" in err, (command, err)
    assert main(["leaderboard", "--db", db, "--dataset", "toy", "--track", "toy/chitchta"]) == 2
    err = capsys.readouterr().err
    assert "unknown track 'toy/chitchta' in dataset 'toy'; known, closest first: toy/chitchat, toy/knowledge" in err
    assert main(["leaderboard", "--db", db, "--dataset", "toy", "--flavor", "msd"]) == 2
    assert "unknown flavor 'msd'; known, closest first: msde, default" in capsys.readouterr().err
    assert main(["leaderboard", "--db", db, "--dataset", "toy", "--track", "toy/chitchat"]) == 0  # known names run
