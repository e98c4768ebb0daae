"""Interchange formats researchers already have: DSTC10 Track 5 turn-level JSON and FastChat's MT-Bench folder.
Stored values are checked against arithmetic written here or the input file's own numbers; a bad file is
refused whole, naming file, place and field, and the store is exactly as before."""
from __future__ import annotations

import json

import pytest

from evalcore.analysis.winrates import win_rates
from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.dstc10 import import_dstc10
from evalcore.ingest.formats.mtbench import import_mtbench
from support import fingerprint, shared, write_jsonl
from support.mtbench import GAMES, mtbench_folder


def refused(con, fn, *args, **kwargs) -> str:
    """Run an import that must be refused; check the store did not change; return the message."""
    before = fingerprint(con)
    with pytest.raises(ImportRefused) as err:
        fn(con, *args, **kwargs)
    assert fingerprint(con) == before
    return str(err.value)


def count(con, table: str, dataset: str) -> int:
    return con.execute(f"SELECT count(*) FROM {table} WHERE dataset = ?", [dataset]).fetchall()[0][0]


# ---------------------------------------------------------------------------------------------- DSTC10
ENTRIES = [
    {"dialogue_id": "d1", "model": "m1", "context": "hi\nhello there", "response": "how are you?",
     "reference": ["fine, thanks"], "annotations": {"Overall": [4, 5], "Fluent": [1, 0, 1]}},
    {"dialogue_id": "d1", "model": "m2", "context": "hi\nhello there", "response": "bye",
     "annotations": {"Overall": [1, 2], "Fluent": [1, 1, 1]}},
    {"dialogue_id": "d2", "model": "m1", "context": "a\nb\n", "response": "c", "reference": [],
     "annotations": {"Overall": [3, None]}},
    {"dialogue_id": "d2", "model": "m1", "context": "a\nb\nc", "response": "d", "reference": ["dd"],
     "annotations": {"Overall": [5, 3]}},
]
SCALES = {"Overall": (1.0, 5.0), "Fluent": (0.0, 1.0)}


def write_json(path, data):
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def dstc(con, tmp_path):
    import_dstc10(con, write_json(tmp_path / "turns.json", ENTRIES), dataset="dstc", track="dstc/chitchat",
                  language="en", scales=SCALES)
    return con


def test_dstc10_items_responses_and_ratings(dstc):
    con = dstc
    items = con.execute("SELECT item_id, dialogue_id, track, context FROM items ORDER BY item_id").fetchall()
    # d1 has one context: its id; d2 has two: d2-c1, d2-c2 in the order they first appear; blank lines dropped
    assert [(i, d, t, json.loads(c)) for i, d, t, c in items] == [
        ("d1", "d1", "dstc/chitchat", ["hi", "hello there"]),
        ("d2-c1", "d2", "dstc/chitchat", ["a", "b"]),
        ("d2-c2", "d2", "dstc/chitchat", ["a", "b", "c"])]
    refs = con.execute("SELECT item_id, ref_index, text FROM item_references ORDER BY ALL").fetchall()
    assert refs == [("d1", 0, "fine, thanks"), ("d2-c2", 0, "dd")]
    responses = con.execute("SELECT item_id, model, text FROM responses ORDER BY ALL").fetchall()
    assert responses == [("d1", "m1", "how are you?"), ("d1", "m2", "bye"), ("d2-c1", "m1", "c"), ("d2-c2", "m1", "d")]
    assert con.execute("SELECT language FROM datasets WHERE dataset = 'dstc'").fetchall() == [("en",)]
    assert con.execute("SELECT dimension, scale_min, scale_max FROM dimensions ORDER BY 1").fetchall() == [
        ("Fluent", 0.0, 1.0), ("Overall", 1.0, 5.0)]
    # 2+3 + 2+3 + 1 (one null) + 2 scores
    assert count(con, "human_ratings", "dstc") == 13
    overall = con.execute("SELECT avg(score) FROM human_ratings WHERE dimension = 'Overall'").fetchall()[0][0]
    assert overall == pytest.approx((4 + 5 + 1 + 2 + 3 + 5 + 3) / 7)
    rows = con.execute("SELECT annotator, score FROM human_ratings WHERE item_id = 'd1' AND model = 'm1' "
                       "AND dimension = 'Fluent' ORDER BY annotator").fetchall()
    assert rows == [("a1", 1.0), ("a2", 0.0), ("a3", 1.0)]


def test_dstc10_reuses_stored_items_for_new_models(dstc, tmp_path):
    more = [dict(e, model="m3") for e in ENTRIES[:1]]
    report = import_dstc10(dstc, write_json(tmp_path / "more.json", more), dataset="dstc", track="dstc/chitchat")
    assert "already stored, reused" in report.render()
    assert count(dstc, "items", "dstc") == 3 and count(dstc, "responses", "dstc") == 5


@pytest.mark.parametrize("data, where, field, expected", [
    ({"dialogue_id": "d1"}, "", "", "expected a JSON list of objects"),
    ([ENTRIES[0], {k: v for k, v in ENTRIES[1].items() if k != "model"}], "item 2 (index 1)", "model",
     "expected a value, got nothing"),
    ([ENTRIES[0], dict(ENTRIES[1], annotations=[1, 2])], "item 2 (index 1)", "annotations",
     "expected an object {dimension: [one score per annotator]}"),
    ([ENTRIES[0], dict(ENTRIES[1], annotations={"Overall": [1, 6]})], "item 2 (index 1)", "annotations.Overall[1]",
     "expected a score on the Overall scale 1..5, got 6"),
    ([ENTRIES[0], dict(ENTRIES[0], response="again")], "item 2 (index 1)", "model",
     "expected one entry per dialogue context and model (first at line 1, item 1 (index 0))"),
    ([ENTRIES[0], dict(ENTRIES[1], annotations={"Coherent": [1]})], "item 2 (index 1)", "annotations.Coherent",
     "give --scale Coherent=MIN:MAX"),
    ([ENTRIES[0], dict(ENTRIES[1], reference=["other"])], "item 2 (index 1)", "reference",
     "expected the references given for this dialogue context at line 1, item 1 (index 0)"),
    ([dict(ENTRIES[0], context=["hi", "hello"])], "item 1 (index 0)", "context", "expected a string, got list"),
])
def test_bad_dstc10_files_are_refused_whole(dstc, tmp_path, data, where, field, expected):
    path = write_json(tmp_path / "bad.json", data)
    message = refused(dstc, import_dstc10, path, dataset="other", track="other/chitchat", scales=SCALES)
    assert "bad.json" in message and where in message and expected in message
    assert not field or f"field '{field}'" in message


def test_dstc10_refuses_items_stored_with_other_content(dstc, tmp_path):
    changed = [dict(ENTRIES[0], model="m9", context="hi\nsomething else")]
    message = refused(dstc, import_dstc10, write_json(tmp_path / "changed.json", changed), dataset="dstc",
                      track="dstc/chitchat")
    assert "item 1 (index 0), field 'context': expected the context of item 'd1' as stored" in message
    elsewhere = [dict(ENTRIES[0], model="m9")]
    message = refused(dstc, import_dstc10, write_json(tmp_path / "elsewhere.json", elsewhere), dataset="dstc",
                      track="dstc/knowledge")
    assert "expected item 'd1' as stored: in track 'dstc/chitchat'" in message
    again = refused(dstc, import_dstc10, write_json(tmp_path / "again.json", ENTRIES[:1]), dataset="dstc",
                    track="dstc/chitchat")
    assert "'m1', already answered" in again
    language = refused(dstc, import_dstc10, write_json(tmp_path / "more.json", [dict(ENTRIES[0], model="m9")]),
                       dataset="dstc", track="dstc/chitchat", language="zh")
    assert "field 'language': expected the language of dataset 'dstc'" in language
    (tmp_path / "broken.json").write_text('[{"dialogue_id": "d1",\n  "model": }]', encoding="utf-8")
    assert "broken.json, line 2: expected a JSON list" in refused(dstc, import_dstc10, tmp_path / "broken.json",
                                                                   dataset="x", track="x/y")


USR_SCALES = {"Understandable": (0, 1), "Natural": (1, 3), "Maintains Context": (1, 3), "Engaging": (1, 3),
              "Uses Knowledge": (0, 1), "Overall": (1, 5)}


def test_usr_topicalchat_in_the_dstc10_shape(con, tmp_path):
    """USR-TopicalChat converted here to the DSTC10 shape (the ground truth reply is also the reference, as
    USR ships it): counts and the mean Overall score equal those of the raw file."""
    raw = json.loads(shared("usr", "tc_usr_data.json").read_text(encoding="utf-8"))
    entries = []
    for n, dialogue in enumerate(raw):
        truth = [r["response"] for r in dialogue["responses"] if r["model"] == "Original Ground Truth"]
        for r in dialogue["responses"]:
            entries.append({"dialogue_id": f"tc-{n:03d}", "model": r["model"], "context": dialogue["context"],
                            "response": r["response"], "reference": truth,
                            "annotations": {dim: r[dim] for dim in USR_SCALES}})
    path = write_json(tmp_path / "tc_dstc10.json", entries)
    import_dstc10(con, path, dataset="usr", track="usr-topicalchat/knowledge", language="en",
                  scales={k: (float(lo), float(hi)) for k, (lo, hi) in USR_SCALES.items()})
    responses = [r for d in raw for r in d["responses"]]
    assert count(con, "items", "usr") == len(raw) == 60
    assert count(con, "responses", "usr") == len(responses) == 360
    assert count(con, "human_ratings", "usr") == sum(len(r[dim]) for r in responses for dim in USR_SCALES)
    overall = [s for r in responses for s in r["Overall"]]
    stored = con.execute("SELECT avg(score), count(*) FROM human_ratings WHERE dataset = 'usr' "
                         "AND dimension = 'Overall'").fetchall()[0]
    assert stored[0] == pytest.approx(sum(overall) / len(overall)) and stored[1] == len(overall)
    first = con.execute("SELECT context FROM items WHERE item_id = 'tc-000'").fetchall()[0][0]
    assert json.loads(first) == [t for t in raw[0]["context"].split("\n") if t.strip()]


@pytest.fixture
def folder(tmp_path):
    return mtbench_folder(tmp_path / "mt_bench")


def test_mtbench_folder_lands_in_one_submission(con, folder):
    report = import_mtbench(con, folder, dataset="mtb", language="en")
    items = con.execute("SELECT item_id, track, dialogue_id, context FROM items ORDER BY item_id").fetchall()
    assert [(i, t, d, json.loads(c)) for i, t, d, c in items] == [
        ("101-t1", "mt-bench/reasoning", "101", ["You overtake the second person."]),
        ("101-t2", "mt-bench/reasoning", "101", ["You overtake the second person.", "And the last?"]),
        ("130-t1", "mt-bench/coding", "130", ["Write a sort."]),
        ("81-t1", "mt-bench/writing", "81", ["Write a travel blog post."]),
        ("81-t2", "mt-bench/writing", "81", ["Write a travel blog post.", "Rewrite it with A."])]
    # the question's reference first, then gpt-4's answer; its turn 1 equals the question's and is kept once
    refs = con.execute("SELECT item_id, ref_index, text FROM item_references ORDER BY ALL").fetchall()
    assert refs == [("101-t1", 0, "You are in second place."), ("101-t2", 0, "That cannot happen."),
                    ("101-t2", 1, "You would be second to last.")]
    assert count(con, "responses", "mtb") == 3 * 5
    assert con.execute("SELECT text FROM responses WHERE item_id = '81-t2' AND model = 'vicuna'").fetchall() == [
        ("vicuna answers 81 turn 2",)]
    assert count(con, "pairwise_judgments", "mtb") == len(GAMES)
    assert con.execute("SELECT count(*), max(kind) FROM submissions").fetchall() == [(1, "import")]
    assert "1 single judgment(s) by gpt-4 with score -1" in report.render()
    assert "1 pairwise judgment(s) with an 'error' verdict" in report.render()

    # the external metric: per (track, model) the mean of its grades, -1 left out
    metric = "MT-Bench:gpt-4"
    system = {(t, m): (v, n) for t, m, v, n in con.execute(
        "SELECT track, model, value, n FROM system_scores WHERE name = ? AND signature NOT LIKE '%sentence-mean'",
        [metric]).fetchall()}
    assert system == {
        ("mt-bench/writing", "alpaca"): (7.0, 2), ("mt-bench/writing", "vicuna"): (8.0, 2),
        ("mt-bench/writing", "llama"): (4.5, 2),
        ("mt-bench/reasoning", "alpaca"): (3.0, 1), ("mt-bench/reasoning", "vicuna"): (3.0, 2),
        ("mt-bench/reasoning", "llama"): (1.5, 2),
        ("mt-bench/coding", "alpaca"): (5.0, 1), ("mt-bench/coding", "vicuna"): (10.0, 1)}
    # FastChat's "Average" per model: over every graded answer
    for model, mean in {"alpaca": (8 + 6 + 3 + 5) / 4, "vicuna": (9 + 7 + 4 + 2 + 10) / 5,
                        "llama": (5 + 4 + 1 + 2) / 4}.items():
        pairs = [vn for (t, m), vn in system.items() if m == model]
        assert sum(v * n for v, n in pairs) / sum(n for _, n in pairs) == pytest.approx(mean)
    sig = con.execute("SELECT signature FROM metric_signatures WHERE metric = ?", [metric]).fetchall()[0][0]
    assert sig == ("MT-Bench:gpt-4|external|sig:FastChat llm_judge single-answer grading; judge gpt-4; prompts "
                   "single-math-v1, single-math-v1-multi-turn, single-v1, single-v1-multi-turn")
    assert con.execute("SELECT count(*) FROM metric_scores WHERE signature = ?", [sig]).fetchall()[0][0] == 13
    assert con.execute("SELECT higher_is_better FROM external_metrics WHERE metric = ?", [metric]).fetchall() == [
        (True,)]


def test_win_rates_follow_fastchat_pairwise_all(con, folder):
    import_mtbench(con, folder, dataset="mtb")
    table = win_rates(con, "mtb").set_index("model")
    assert list(table.index) == ["vicuna", "alpaca", "llama"]   # by win_rate_adjusted, highest first
    expected = {  # win, loss, tie, inconsistent, errors (from the comments on GAMES)
        "alpaca": (1, 1, 2, 1, 0), "vicuna": (2, 0, 3, 2, 1), "llama": (0, 2, 1, 1, 1)}
    for model, (win, loss, tie, inconsistent, errors) in expected.items():
        row = table.loc[model]
        assert (row.win, row.loss, row.tie, row.inconsistent, row.errors) == (win, loss, tie, inconsistent, errors)
        assert row.win_rate == pytest.approx(win / (win + loss + tie))
        assert row.loss_rate == pytest.approx(loss / (win + loss + tie))
        assert row.win_rate_adjusted == pytest.approx((win + 0.5 * tie) / (win + loss + tie))
    assert table.loc["vicuna", "win_rate_adjusted"] == pytest.approx(0.7)
    assert table.loc["llama", "win_rate_adjusted"] == pytest.approx(1 / 6)
    writing = win_rates(con, "mtb", track="mt-bench/writing").set_index("model")
    assert writing.loc["alpaca", ["win", "loss", "tie"]].tolist() == [1, 1, 1]
    assert writing.loc["vicuna", ["win", "loss", "tie"]].tolist() == [1, 0, 2]
    assert writing.loc["llama", ["win", "loss", "tie"]].tolist() == [0, 1, 1]
    assert win_rates(con, "nothing").empty


def rewrite(path, change):
    """Apply `change` to the records of a JSONL file."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    write_jsonl(path, change(rows))


@pytest.mark.parametrize("file, change, where, field, expected", [
    ("model_answer/vicuna.jsonl", lambda rows: rows + [dict(rows[0], question_id=999)], "line 4", "question_id",
     "expected a question_id of question.jsonl, got '999', unknown"),
    ("model_answer/vicuna.jsonl", lambda rows: [dict(rows[0], choices=[{"turns": ["only one"]}])] + rows[1:],
     "line 1", "choices[0].turns", "expected 2 answer(s), one per turn of question '81', got 1"),
    ("model_judgment/gpt-4_single.jsonl", lambda rows: rows + [dict(rows[0], model="gpt-9")], "line 15", "model",
     "expected a model with a response (stored or in this import) to item '81-t1', got 'gpt-9'"),
    ("model_judgment/gpt-4_single.jsonl", lambda rows: rows + [dict(rows[0], question_id=7)], "line 15",
     "question_id", "expected a question_id of question.jsonl, got '7', unknown"),
    ("model_judgment/gpt-4_single.jsonl", lambda rows: [dict(rows[0], score=11)] + rows[1:], "line 1", "score",
     "expected a rating 1..10"),
    ("model_judgment/gpt-4_single.jsonl", lambda rows: [dict(rows[0], turn=3)] + rows[1:], "line 1", "turn",
     "expected a turn of question '81': 1..2, got 3"),
    ("model_judgment/gpt-4_single.jsonl", lambda rows: rows + [rows[0]], "line 15", "value",
     "expected one value per item and model"),
    ("model_judgment/gpt-4_pair.jsonl", lambda rows: [dict(rows[0], g1_winner="A")] + rows[1:], "line 1",
     "g1_winner", "expected one of model_1, model_2, tie, error, got 'A'"),
    ("model_judgment/gpt-4_pair.jsonl", lambda rows: rows + [rows[1]], "line 8", "judge",
     "expected one judgment per item, model pair and judge (first at gpt-4_pair.jsonl line 2)"),
    ("model_judgment/gpt-4_pair.jsonl", lambda rows: [dict(rows[0], model_2="gpt-9")] + rows[1:], "line 1",
     "model_2", "expected a model with a response (stored or in this import) to item '81-t1', got 'gpt-9'"),
    ("question.jsonl", lambda rows: rows + [rows[0]], "line 4", "question_id", "expected each question_id once"),
])
def test_bad_mtbench_folders_are_refused_whole(dstc, folder, file, change, where, field, expected):
    rewrite(folder / file, change)
    message = refused(dstc, import_mtbench, folder, dataset="mtb")
    assert f"{folder / file}, {where}, field '{field}': {expected}" in message


def test_mtbench_refusals_without_a_file_or_twice(dstc, folder):
    import_mtbench(dstc, folder, dataset="mtb")
    again = refused(dstc, import_mtbench, folder, dataset="mtb")
    assert "model_answer/alpaca.jsonl, line 1, field 'question_id'" in again and "already answered" in again
    (folder / "question.jsonl").unlink()
    message = refused(dstc, import_mtbench, folder, dataset="other")
    assert "field 'question.jsonl'" in message and "no question.jsonl" in message


def test_cli_imports_both_formats_and_prints_win_rates(tmp_path, folder, capsys):
    from evalcore.cli import main

    db = str(tmp_path / "cli.duckdb")
    assert main(["import", "mtbench", str(folder), "--db", db, "--dataset", "mtb"]) == 0
    capsys.readouterr()
    assert main(["winrate", "--db", db, "--dataset", "mtb", "--format", "json"]) == 0
    rows = {r["model"]: r for r in json.loads(capsys.readouterr().out)}
    assert (rows["vicuna"]["win"], rows["vicuna"]["loss"], rows["vicuna"]["tie"]) == (2, 0, 3)
    assert main(["leaderboard", "--db", db, "--dataset", "mtb", "--track", "mt-bench/writing", "--format", "json",
                 "--rank-by", "MT-Bench:gpt-4", "--bootstrap", "20"]) == 0
    board = {r["model"]: r for r in json.loads(capsys.readouterr().out)}
    assert board["vicuna"]["MT-Bench:gpt-4"] == 8.0 and board["vicuna"]["rank"] == 1
    path = write_json(tmp_path / "turns.json", ENTRIES)
    assert main(["import", "dstc10", str(path), "--db", db, "--dataset", "dstc", "--track", "dstc/chitchat",
                 "--language", "en", "--scale", "Overall=1:5"]) == 2     # Fluent has no scale
    assert "--scale Fluent=MIN:MAX" in capsys.readouterr().err
    assert main(["import", "dstc10", str(path), "--db", db, "--dataset", "dstc", "--track", "dstc/chitchat",
                 "--language", "en", "--scale", "Overall=1:5", "--scale", "Fluent=0:1"]) == 0


