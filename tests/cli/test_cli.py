"""The CLI as a user runs it: exit codes, messages, formats."""
import json
import subprocess
import sys

from evalcore.cli import main
from support import ROOT, TOY_ITEMS, write_jsonl


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
    from evalcore.store import connect

    connect(tmp_path / "s.duckdb").close()  # an empty store (a read-only command creates none)
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
    assert main(["score", "--db", db, "--metrics", "BLEU9"]) == 2
    assert "unknown metric 'BLEU9'; known, closest first: BLEU1, BLEU2" in capsys.readouterr().err
    # a metric asked for by name that cannot run (a path that does not exist) fails the command
    assert main(["score", "--db", db, "--metrics", "BLEURT", "--bleurt-checkpoint", str(tmp_path / "nonexistent")]) == 1
    out = capsys.readouterr()
    assert "BLEURT unavailable" in out.out and "error: BLEURT could not run" in out.err


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
    (tmp_path / "h.csv").write_text("item_id,model,annotator,dimension,score\nt1,m,a1,Overall,3\n", encoding="utf-8")
    (tmp_path / "r.csv").write_text("item_id,model,response\nt1,m,你好\n", encoding="utf-8")
    main(["import", "responses", str(tmp_path / "r.csv"), "--db", db, "--dataset", "toy", "--track", "toy/chitchat"])
    main(["import", "ratings", str(tmp_path / "h.csv"), "--db", db, "--dataset", "toy", "--track", "toy/chitchat",
          "--scale", "Overall=1:5"])
    capsys.readouterr()
    for command in (["trust", "--level", "turn"], ["ranking"]):
        assert main([*command, "--db", db, "--dataset", "toy", "--dimension", "Overal"]) == 2, command
        assert "unknown dimension 'Overal' in dataset 'toy'; known, closest first: Overall" in capsys.readouterr().err


def test_models_filter_and_reference_copies_note(tmp_path, capsys):
    """--models / --exclude-models choose whose responses count; a model whose responses are copies
    of the reference is pointed out (it is usually the reference imported as a model)."""
    db = str(tmp_path / "s.duckdb")
    items = [{"item_id": f"i{k}", "dataset": "toy", "track": "toy/chitchat", "context": ["你好"],
              "references": [f"参考 {k} 号 回复"]} for k in range(6)]
    main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", items)), "--db", db])
    rows = ["item_id,model,response"]
    rows += [f"i{k},copy,参考 {k} 号 回复" for k in range(6)]           # the reference itself
    rows += [f"i{k},m1,{'参考 回复' if k % 2 else '你好'} {k}" for k in range(6)]
    rows += [f"i{k},m2,{'你好 呀' * (k % 3)}" for k in range(6)]
    (tmp_path / "r.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["import", "responses", str(tmp_path / "r.csv"), "--db", db, "--dataset", "toy",
                 "--track", "toy/chitchat"]) == 0
    ratings = ["item_id,model,annotator,dimension,score"]
    ratings += [f"i{k},{m},a1,Overall,{s}" for k in range(6) for m, s in (("copy", 5), ("m1", 1 + k % 3), ("m2", 2))]
    (tmp_path / "h.csv").write_text("\n".join(ratings) + "\n", encoding="utf-8")
    assert main(["import", "ratings", str(tmp_path / "h.csv"), "--db", db, "--dataset", "toy",
                 "--track", "toy/chitchat", "--scale", "Overall=1:5"]) == 0
    assert main(["score", "--db", db, "--dataset", "toy"]) == 0
    capsys.readouterr()
    assert main(["correlate", "--db", db, "--dataset", "toy", "--level", "turn", "--method", "pearson",
                 "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "note: 6 of 6 responses of model 'copy' are identical to a reference of their item" in out.err
    every = json.loads(out.out)
    n_all = {r["n"] for r in every if r["metric"] == "BLEU4"}
    assert main(["correlate", "--db", db, "--dataset", "toy", "--level", "turn", "--method", "pearson",
                 "--exclude-models", "copy", "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "identical to a reference" not in out.err
    n_without = {r["n"] for r in json.loads(out.out) if r["metric"] == "BLEU4"}
    assert n_all == {18} and n_without == {12}  # 3 models x 6 items, then 2 x 6
    assert main(["correlate", "--db", db, "--dataset", "toy", "--level", "turn", "--models", "m1",
                 "--format", "json"]) == 0
    assert {r["n"] for r in json.loads(capsys.readouterr().out) if r["metric"] == "BLEU4"} == {6}
    assert main(["correlate", "--db", db, "--dataset", "toy", "--models", "m3"]) == 2
    assert "unknown model 'm3'; known, closest first: m1, m2, copy" in capsys.readouterr().err


def test_scores_under_another_tokenizer_are_named(tmp_path, capsys):
    """correlate without the tokenizer score used: the lexical columns are absent, and a note says where they are."""
    db = str(tmp_path / "s.duckdb")
    items = [{"item_id": f"i{k}", "dataset": "toy", "track": "toy/chitchat", "context": ["你好"],
              "references": [f"参考 {k} 号 回复"]} for k in range(4)]
    main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", items)), "--db", db])
    (tmp_path / "r.csv").write_text("item_id,model,response\n" + "".join(
        f"i{k},{m},参考 {k * (m == 'a')} 回复\n" for k in range(4) for m in "ab"), encoding="utf-8")
    main(["import", "responses", str(tmp_path / "r.csv"), "--db", db, "--dataset", "toy", "--track", "toy/chitchat"])
    (tmp_path / "h.csv").write_text("item_id,model,annotator,dimension,score\n" + "".join(
        f"i{k},{m},x,Overall,{1 + (k + (m == 'a')) % 3}\n" for k in range(4) for m in "ab"), encoding="utf-8")
    main(["import", "ratings", str(tmp_path / "h.csv"), "--db", db, "--dataset", "toy", "--track", "toy/chitchat",
          "--scale", "Overall=1:3"])
    assert main(["score", "--db", db, "--dataset", "toy", "--metrics", "BLEU1", "--tokenizer", "jieba"]) == 0
    capsys.readouterr()
    assert main(["correlate", "--db", db, "--dataset", "toy", "--level", "turn"]) == 0
    err = capsys.readouterr().err
    assert "note: no lexical scores of 'toy' under --flavor default; they exist under: " \
           "--flavor default --tokenizer jieba" in err
    assert main(["correlate", "--db", db, "--dataset", "toy", "--level", "turn", "--tokenizer", "jieba",
                 "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "no lexical scores" not in out.err and {r["metric"] for r in json.loads(out.out)} == {"BLEU1"}


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path, default_store_file):
    """`evalcore trust ... | head -2`: the lines head wanted, and no BrokenPipeError traceback on standard error."""
    import subprocess
    import sys

    from support import ROOT, copy_default_store

    db = copy_default_store(default_store_file, tmp_path / "s.duckdb")
    run = subprocess.run(f"{sys.executable} -m evalcore trust --db {db} --dataset msde-paper --origin published | head -2",
                         shell=True, cwd=ROOT, capture_output=True, text=True)
    assert len(run.stdout.splitlines()) == 2 and run.stdout.startswith("Spearman")
    assert "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr, run.stderr
