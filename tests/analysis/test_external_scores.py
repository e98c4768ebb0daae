"""`import scores`: values computed elsewhere stand beside the built-in metrics (checked with scipy and
arithmetic written here), and a bad file is refused whole."""
import pytest
from scipy import stats

from evalcore.cli import main
from evalcore.store import connect
from support import fingerprint, write_jsonl

ITEMS = [{"item_id": f"i{k}", "dataset": "ext", "track": "ext/chitchat", "context": [f"问题{k}"],
          "references": [f"回答{k}"]} for k in range(6)]
MODELS = ["a", "b", "c"]
# human Overall per (item, model): two annotators each
HUMAN = {(f"i{k}", m): (1 + (k + j) % 5, 1 + (k * 2 + j) % 5) for k in range(6) for j, m in enumerate(MODELS)}
VALUES = {(f"i{k}", m): round(0.1 * k + 0.25 * j + (0.3 if k % 2 else 0.0), 3) for k in range(6)
          for j, m in enumerate(MODELS)}


@pytest.fixture
def db(tmp_path):
    db = str(tmp_path / "s.duckdb")
    assert main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", ITEMS)), "--db", db]) == 0
    lines = ["item_id,model,response"] + [f"{i},{m},答{i}{m}" for (i, m) in VALUES]
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["import", "responses", str(tmp_path / "r.csv"), "--db", db, "--dataset", "ext",
                 "--track", "ext/chitchat"]) == 0
    lines = ["item_id,model,annotator,dimension,score"] + [
        f"{i},{m},{who},Overall,{s}" for (i, m), pair in HUMAN.items() for who, s in zip("xy", pair)]
    (tmp_path / "h.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["import", "ratings", str(tmp_path / "h.csv"), "--db", db, "--dataset", "ext",
                 "--track", "ext/chitchat", "--scale", "Overall=1:5"]) == 0
    return db


def write_scores(path, values):
    path.write_text("item_id,model,value\n" + "".join(f"{i},{m},{v}\n" for (i, m), v in values.items()),
                    encoding="utf-8")
    return str(path)


def test_external_metric_in_leaderboard_correlations_and_trust(db, tmp_path):
    from evalcore.analysis.correlate import correlations
    from evalcore.analysis.leaderboard import leaderboard, signatures
    from evalcore.analysis.trust import trust

    assert main(["import", "scores", write_scores(tmp_path / "s.csv", VALUES), "--db", db, "--dataset", "ext",
                 "--metric", "GPT-judge", "--signature", "gpt-4o 2024-08 G-Eval coherence prompt v2"]) == 0
    con = connect(db)
    try:
        board = leaderboard(con, "ext", "ext/chitchat").set_index("model")
        for m in MODELS:
            mine = [v for (i, mm), v in VALUES.items() if mm == m]
            assert board.loc[m, "GPT-judge"] == pytest.approx(sum(mine) / len(mine))
        sig = signatures(con, "ext", "ext/chitchat").set_index("name").loc["GPT-judge", "signature"]
        assert sig == "GPT-judge|external|sig:gpt-4o 2024-08 G-Eval coherence prompt v2"
        keys = sorted(VALUES)
        human = [sum(HUMAN[k]) / 2 for k in keys]
        turn = correlations(con, "ext", "ext/chitchat", level="turn", methods=["spearman"])
        r = turn[(turn.metric == "GPT-judge")].iloc[0]
        assert r["r"] == pytest.approx(stats.spearmanr([VALUES[k] for k in keys], human).statistic)
        assert r["n"] == 18
        system = correlations(con, "ext", "ext/chitchat", level="system", methods=["pearson"])
        means = {m: sum(v for (i, mm), v in VALUES.items() if mm == m) / 6 for m in MODELS}
        hmeans = {m: sum(sum(p) / 2 for (i, mm), p in HUMAN.items() if mm == m) / 6 for m in MODELS}
        r = system[system.metric == "GPT-judge"].iloc[0]
        assert r["r"] == pytest.approx(stats.pearsonr([means[m] for m in MODELS], [hmeans[m] for m in MODELS]).statistic)
        t = trust(con, "ext", level="turn", dimension="Overall")
        assert "GPT-judge" in set(t["metric"])
    finally:
        con.close()


def test_lower_is_better_ranks_smallest_first(db, tmp_path, capsys):
    import json

    assert main(["import", "scores", write_scores(tmp_path / "s.csv", VALUES), "--db", db, "--dataset", "ext",
                 "--metric", "perplexity", "--lower-is-better"]) == 0
    capsys.readouterr()
    assert main(["leaderboard", "--db", db, "--dataset", "ext", "--rank-by", "perplexity", "--format", "json",
                 "--bootstrap", "50"]) == 0
    rows = {r["model"]: r["rank"] for r in json.loads(capsys.readouterr().out)}
    assert rows == {"a": 1, "b": 2, "c": 3}   # a's values are the smallest (0.25 * j above)
    # the stored direction holds: asking for the other one is refused
    assert main(["import", "scores", write_scores(tmp_path / "s2.csv", {("i0", "a"): 1.0}), "--db", db,
                 "--dataset", "ext", "--metric", "perplexity", "--higher-is-better"]) == 2
    assert "the stored direction of 'perplexity' (lower is better)" in capsys.readouterr().err


@pytest.mark.parametrize("rows, field, expected", [
    ("i0,a,0.5\ni9,a,0.1\n", "item_id", "an item of dataset 'ext'"),
    ("i0,zz,0.5\n", "model", "a model with a stored response to item 'i0'"),
    ("i0,a,0.5\ni0,a,0.6\n", "value", "one value per item and model"),
    ("i0,a,high\n", "value", "a number"),
    ("i0,a,nan\n", "value", "a finite number"),
])
def test_bad_rows_refused_whole(db, tmp_path, capsys, rows, field, expected):
    con = connect(db)
    before = fingerprint(con)
    con.close()
    (tmp_path / "bad.csv").write_text("item_id,model,value\n" + rows, encoding="utf-8")
    assert main(["import", "scores", str(tmp_path / "bad.csv"), "--db", db, "--dataset", "ext",
                 "--metric", "X"]) == 2
    err = capsys.readouterr().err
    assert f"field '{field}': expected {expected}" in err and "nothing was written" in err
    con = connect(db)
    assert fingerprint(con) == before
    con.close()


def test_names_that_are_taken_and_values_already_stored(db, tmp_path, capsys):
    path = write_scores(tmp_path / "s.csv", {("i0", "a"): 0.5})
    assert main(["import", "scores", path, "--db", db, "--dataset", "ext", "--metric", "BLEU4"]) == 2
    assert "not a built-in metric" in capsys.readouterr().err
    assert main(["import", "scores", path, "--db", db, "--dataset", "ext", "--metric", "Overall"]) == 2
    assert "not a human dimension" in capsys.readouterr().err
    assert main(["import", "scores", path, "--db", db, "--dataset", "ext", "--metric", "X"]) == 0
    assert main(["import", "scores", path, "--db", db, "--dataset", "ext", "--metric", "X"]) == 2
    assert "a model without 'X' values on track 'ext/chitchat'" in capsys.readouterr().err
