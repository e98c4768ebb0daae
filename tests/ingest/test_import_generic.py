"""Generic importers: good files land, each kind of bad file is refused whole and the store is unchanged."""
from __future__ import annotations

import json

import pytest

from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.items import import_items
from evalcore.ingest.formats.ratings import import_ratings
from evalcore.ingest.formats.responses import import_responses
from evalcore.store import queries
from support import TOY_ITEMS, fingerprint, write_jsonl


def refused(con, fn, *args, **kwargs) -> str:
    """Run an import that must be refused; check the store did not change; return the message."""
    before, summary = fingerprint(con), queries.summary(con)
    with pytest.raises(ImportRefused) as err:
        fn(con, *args, **kwargs)
    assert fingerprint(con) == before
    assert queries.summary(con).equals(summary)
    return str(err.value)


def test_items_land_with_references_and_grounding(toy):
    rows = toy.execute("SELECT item_id, track, context, grounding FROM items ORDER BY item_id").fetchall()
    assert [r[0] for r in rows] == ["k1", "t1", "t2"]
    assert json.loads(rows[1][2]) == ["你好", "你好呀"]
    assert json.loads(rows[0][3]) == {"knowledge": [["我是山姆", "导演", "杰茜·尼尔森"]]}
    refs = toy.execute("SELECT item_id, ref_index, text FROM item_references ORDER BY ALL").fetchall()
    assert refs == [("k1", 0, "看过"), ("k1", 1, "没看过"), ("t1", 0, "今天天气不错")]
    s = queries.summary(toy).set_index("track")
    assert s.loc["toy/chitchat", ["items", "references", "models", "responses"]].tolist() == [2, 1, 2, 3]


@pytest.mark.parametrize("line, field, expected", [
    ('{"item_id": "n1", "dataset": "toy", "track": "toy/chitchat", "context": "你好", "references": []}',
     "context", "expected a list of strings, got str"),
    ('{"item_id": "n1", "dataset": "toy", "track": "toy/chitchat", "context": [], "references": [1]}',
     "references[0]", "expected a string, got int"),
    ('{"dataset": "toy", "track": "toy/chitchat", "context": [], "references": []}',
     "item_id", "expected a value, got nothing"),
    ('{"item_id": "n1", "dataset": "toy", "track": "toy/chitchat", "context": [], "references": [], "grounding": {"kb": 1}}',
     "grounding.kb", "expected one of the keys knowledge, persona, goal"),
    ('{"item_id": "n1", "dataset": "toy", "track": "toy/chitchat", "context": [], "references": [], "skill": "chat"}',
     "skill", "expected one of chitchat, knowledge, recommendation, persona"),
    ('{"item_id": "t1", "dataset": "toy", "track": "toy/chitchat", "context": [], "references": []}',
     "item_id", "already stored"),
])
def test_bad_items_are_refused_whole(toy, tmp_path, line, field, expected):
    good = json.dumps({"item_id": "ok1", "dataset": "toy", "track": "toy/chitchat", "context": [], "references": []})
    path = tmp_path / "bad.jsonl"
    path.write_text(good + "\n" + line + "\n", encoding="utf-8")
    message = refused(toy, import_items, path)
    assert "bad.jsonl" in message and "line 2" in message and f"field '{field}'" in message and expected in message


def test_a_dataset_has_one_language_set_when_first_imported(con, tmp_path):
    """The language picks METEOR's mode and the default tokenizer: the first record naming one sets
    it; a record naming another, or a language for a dataset stored without one, is refused."""
    item = {"dataset": "en-data", "track": "e/chitchat", "context": ["hi"], "references": ["hello"]}
    import_items(con, write_jsonl(tmp_path / "a.jsonl", [{**item, "item_id": "a1"},
                                                         {**item, "item_id": "a2", "language": "en"}]))
    assert con.execute("SELECT language FROM datasets WHERE dataset = 'en-data'").fetchall() == [("en",)]
    message = refused(con, import_items, write_jsonl(tmp_path / "b.jsonl", [{**item, "item_id": "b1", "language": "zh"}]))
    assert "line 1, field 'language': expected the language of dataset 'en-data': 'en', as set by the store, got zh" \
        in message
    message = refused(con, import_items, write_jsonl(tmp_path / "c.jsonl", [
        {**item, "dataset": "new", "item_id": "c1", "language": "en"},
        {**item, "dataset": "new", "item_id": "c2", "language": "zh"}]))
    assert "line 2, field 'language': expected the language of dataset 'new': 'en', as set by line 1, got zh" in message
    # texts with no letters: no language detected (evalcore.core.language), stored with none
    import_items(con, write_jsonl(tmp_path / "d.jsonl", [{**item, "dataset": "bare", "item_id": "d1",
                                                         "context": ["123"], "references": ["42!"]}]))
    assert con.execute("SELECT language FROM datasets WHERE dataset = 'bare'").fetchall() == [(None,)]
    message = refused(con, import_items, write_jsonl(tmp_path / "e.jsonl", [
        {**item, "dataset": "bare", "item_id": "e1", "language": "en"}]))
    assert "expected the language of dataset 'bare': no language, as stored, got en" in message


def test_duplicate_item_in_one_file(con, tmp_path):
    path = write_jsonl(tmp_path / "dup.jsonl", [TOY_ITEMS[0], TOY_ITEMS[0]])
    message = refused(con, import_items, path)
    assert "line 2" in message and "first at line 1" in message


def test_responses_from_gbk_csv_with_model_option(toy, tmp_path):
    path = tmp_path / "gbk.csv"
    path.write_bytes("item_id,response\nt1,今天不错\nt2,\n".encode("gbk"))
    report = import_responses(toy, path, dataset="toy", track="toy/chitchat", model="m3")
    assert report.counts["responses"] == 2 and "gb18030" in report.notes[0]
    rows = toy.execute("SELECT item_id, text FROM responses WHERE model = 'm3' ORDER BY 1").fetchall()
    assert rows == [("t1", "今天不错"), ("t2", "")]  # an empty response is a response, not a missing one


def test_responses_from_jsonl_with_bom(toy, tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + '{"item_id": "t2", "model": "m2", "response": "嗨"}\n'.encode("utf-8"))
    import_responses(toy, path, dataset="toy", track="toy/chitchat")
    assert toy.execute("SELECT text FROM responses WHERE item_id = 't2' AND model = 'm2'").fetchall() == [("嗨",)]


def test_responses_from_xlsx(toy, tmp_path):
    import openpyxl

    wb = openpyxl.Workbook()
    wb.active.append(["item_id", "model", "response"])
    wb.active.append(["t2", "m2", "好的"])
    wb.save(tmp_path / "r.xlsx")
    import_responses(toy, tmp_path / "r.xlsx", dataset="toy", track="toy/chitchat")
    assert toy.execute("SELECT text FROM responses WHERE item_id = 't2' AND model = 'm2'").fetchall() == [("好的",)]


@pytest.mark.parametrize("body, kwargs, where, expected", [
    ("item_id,model,response\nt2,m2,a\nnope,m2,b\n", {}, "row 3", "field 'item_id': expected an item of track 'toy/chitchat'"),
    ("item_id,model,response\nt2,m2,a\nt2,m2,b\n", {}, "row 3", "expected one response per item for model 'm2'"),
    ("item_id,model,response\nt1,m1,again\n", {}, "row 2", "already answered"),
    ("item_id,response\nt2,a\n", {}, "header (row 1)", "field 'model': expected a column named 'model'"),
    ("item_id,model,text\nt2,m2,a\n", {}, "header (row 1)", "field 'response': expected a column named 'response'"),
    ("item_id,model,response\nk1,m2,a\n", {}, "row 2", "expected an item of track 'toy/chitchat'"),
    ("item_id,model,response\nt2,m2,a\n", {"track": "toy/nope"}, "", "field '--track': expected a track of dataset 'toy'"),
    ("item_id,model,response\nt2,,a\n", {}, "row 2", "field 'model': expected a non-empty string"),
])
def test_bad_responses_are_refused_whole(toy, tmp_path, body, kwargs, where, expected):
    path = tmp_path / "bad.csv"
    path.write_text(body, encoding="utf-8")
    message = refused(toy, import_responses, path, **{"dataset": "toy", "track": "toy/chitchat", **kwargs})
    assert "bad.csv" in message and where in message and expected in message


def test_ratings_land_with_scales(toy, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("item_id,dialogue_id,model,annotator,dimension,score\nt1,,m1,a1,Coh,2\nt1,,m1,a2,Coh,1\n"
                    ",d1,m1,a1,Overall,4.5\n", encoding="utf-8")
    import_ratings(toy, path, dataset="toy", track="toy/chitchat", scales={"Coh": (0, 2), "Overall": (1, 5)})
    rows = toy.execute("SELECT target, item_id, dialogue_id, annotator, dimension, score FROM human_ratings "
                       "ORDER BY ALL").fetchall()
    assert rows == [("dialogue", None, "d1", "a1", "Overall", 4.5),
                    ("response", "t1", None, "a1", "Coh", 2.0), ("response", "t1", None, "a2", "Coh", 1.0)]
    assert toy.execute("SELECT dimension, scale_min, scale_max FROM dimensions ORDER BY 1").fetchall() == [
        ("Coh", 0.0, 2.0), ("Overall", 1.0, 5.0)]


@pytest.mark.parametrize("body, scales, where, expected", [
    ("item_id,model,annotator,dimension,score\nt1,m1,a,Coh,3\n", {"Coh": (0, 2)}, "row 2",
     "field 'score': expected a score on the Coh scale 0..2, got 3"),
    ("item_id,model,annotator,dimension,score\nt1,m1,a,Coh,good\n", {"Coh": (0, 2)}, "row 2",
     "field 'score': expected a number (or give --missing PATTERN for answers that are not numbers), got 'good'"),
    ("item_id,model,annotator,dimension,score\nt1,m1,a,Coh,1\n", {}, "row 2",
     "give --scale Coh=MIN:MAX"),
    ("item_id,model,annotator,dimension,score\nzz,m1,a,Coh,1\n", {"Coh": (0, 2)}, "row 2",
     "field 'item_id': expected an item of track"),
    ("item_id,model,annotator,dimension,score\nt2,m2,a,Coh,1\n", {"Coh": (0, 2)}, "row 2",
     "field 'model': expected a model with a stored response to item 't2'"),
    ("item_id,model,annotator,dimension,score\nt1,m1,a,Coh,1\nt1,m1,a,Coh,2\n", {"Coh": (0, 2)}, "row 3",
     "first at row 2"),
    ("item_id,model,annotator,score\nt1,m1,a,1\n", {"Coh": (0, 2)}, "header (row 1)",
     "field 'dimension': expected a column named 'dimension'"),
])
def test_bad_ratings_are_refused_whole(toy, tmp_path, body, scales, where, expected):
    path = tmp_path / "bad.csv"
    path.write_text(body, encoding="utf-8")
    message = refused(toy, import_ratings, path, dataset="toy", track="toy/chitchat", scales=scales)
    assert "bad.csv" in message and where in message and expected in message


def test_scale_may_not_contradict_the_stored_one(toy, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("item_id,model,annotator,dimension,score\nt1,m1,a,Coh,1\n", encoding="utf-8")
    import_ratings(toy, path, dataset="toy", track="toy/chitchat", scales={"Coh": (0, 2)})
    path.write_text("item_id,model,annotator,dimension,score\nt1,m2,a,Coh,1\n", encoding="utf-8")
    message = refused(toy, import_ratings, path, dataset="toy", track="toy/chitchat", scales={"Coh": (1, 5)})
    assert "--scale" in message and "stored scale of 'Coh' (0:2)" in message
    import_ratings(toy, path, dataset="toy", track="toy/chitchat")  # the stored scale applies


def test_items_are_written_as_they_are_read_and_a_late_refusal_rolls_all_back(con, tmp_path, monkeypatch):
    """import items writes every STREAM_ROWS items inside its one transaction (a million items are never
    held at once); a bad line after items were written refuses the file whole, the store as before."""
    import evalcore.ingest.formats.items as items

    monkeypatch.setattr(items, "STREAM_ROWS", 3)
    rows = [{"item_id": f"s{i}", "dataset": "big", "track": "big/chitchat", "context": [f"第 {i} 句"],
             "references": [f"回答 {i}", "另一个"]} for i in range(10)]
    bad = [*rows[:8], {**rows[8], "references": "not a list"}, rows[9]]
    message = refused(con, import_items, write_jsonl(tmp_path / "bad.jsonl", bad))
    assert "line 9" in message and "references" in message
    report = import_items(con, write_jsonl(tmp_path / "good.jsonl", rows))
    assert con.execute("SELECT count(*), count(DISTINCT track) FROM items WHERE dataset = 'big'").fetchall() == [(10, 1)]
    assert con.execute("SELECT count(*) FROM item_references WHERE dataset = 'big'").fetchall() == [(20,)]
    assert con.execute("SELECT language FROM datasets WHERE dataset = 'big'").fetchall() == [("zh",)]   # detected
    written, tracks = con.execute("SELECT rows_written, tracks FROM submissions ORDER BY submission_id DESC LIMIT 1"
                                  ).fetchall()[0]
    assert json.loads(written)["items"] == 10 and json.loads(written)["item_references"] == 20
    assert "big/chitchat" in str(tracks)   # the history names the track of items written before the end
    assert report.counts["items"] == 10
