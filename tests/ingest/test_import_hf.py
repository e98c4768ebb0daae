"""`import hf`: a Hugging Face dataset written by `datasets` itself (save_to_disk folder, Parquet; fixtures in
tests/ingest/fixtures/hf), or JSONL, mapped by --columns and imported by the responses and ratings importers. A bad
dataset is refused whole naming its file, row and source column, and the store is exactly as before."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.cli import main
from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.hfdata import import_hf
from support import fingerprint, write_jsonl

FIXTURES = Path(__file__).parent / "fixtures" / "hf"
ANSWERS = FIXTURES / "toy_answers"
RATINGS = FIXTURES / "toy_ratings.parquet"
RESPONSE_COLUMNS = "item_id=id,response=output,model=system"
RATING_COLUMNS = "item_id=id,model=system,annotator=rater,dimension=aspect,score=rating"


def refused(con, path, **kwargs) -> str:
    before = fingerprint(con)
    with pytest.raises(ImportRefused) as err:
        import_hf(con, path, **{"dataset": "toy", "track": "toy/chitchat", "columns": RESPONSE_COLUMNS, **kwargs})
    assert fingerprint(con) == before
    return str(err.value)


def responses(con, model: str) -> list[tuple]:
    return con.execute("SELECT item_id, text FROM responses WHERE dataset = 'toy' AND model = ? ORDER BY item_id",
                       [model]).fetchall()


def test_saved_dataset_then_parquet_ratings(toy):
    report = import_hf(toy, ANSWERS, dataset="toy", track="toy/chitchat", columns=RESPONSE_COLUMNS)
    assert responses(toy, "m3") == [("t1", "天气真好，出去走走吧"), ("t2", "你好！")]
    assert report.file == str(ANSWERS / "test") and report.notes[0].startswith("2 rows")
    import_hf(toy, RATINGS, dataset="toy", track="toy/chitchat", columns=RATING_COLUMNS, scales={"fluency": (0, 2)})
    rows = toy.execute("SELECT item_id, annotator, score FROM human_ratings WHERE model = 'm3' "
                       "ORDER BY item_id, annotator").fetchall()
    assert rows == [("t1", "r1", 2.0), ("t1", "r2", 1.0), ("t2", "r1", 2.0), ("t2", "r2", 2.0)]


def test_jsonl_from_the_cli_with_a_model(tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    assert main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", [
        {"item_id": "a", "dataset": "d", "track": "tr", "context": ["你好"], "references": []}])), "--db", db]) == 0
    path = write_jsonl(tmp_path / "out.jsonl", [{"qid": "a", "text": "嗨"}])
    assert main(["import", "hf", str(path), "--db", db, "--dataset", "d", "--track", "tr", "--model", "m9",
                 "--columns", "item_id=qid,response=text"]) == 0
    assert "imported " + str(path) in capsys.readouterr().out
    from_store = main(["summary", "--db", db, "--format", "json"])
    assert from_store == 0 and json.loads(capsys.readouterr().out)[0]["responses"] == 1


def saved(tmp_path: Path, columns: dict) -> Path:
    """A save_to_disk-shaped folder (state.json and one Arrow stream file) holding `columns`."""
    folder = tmp_path / "saved"
    folder.mkdir()
    table = pa.table(columns)
    with pa.OSFile(str(folder / "data-00000-of-00001.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    (folder / "state.json").write_text(json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}]}))
    return folder


@pytest.mark.parametrize("columns, where, field, expected", [
    ({"id": ["t1", "zz"], "output": ["a", "b"], "system": ["m3", "m3"]}, "row 2 (index 1)", "id (as item_id)",
     "an item of track"),
    ({"id": ["t1", "t2"], "output": ["a", "b\x07"], "system": ["m3", "m3"]}, "row 2 (index 1)",
     "output (as response)", "control characters"),
    ({"id": ["t1", "t2"], "output": ["a", None], "system": ["m3", "m3"]}, "row 2 (index 1)", "output (as response)",
     "a value"),
    ({"id": ["t1", "t2"], "output": ["a", "b"], "system": ["m3", "m1"]}, "row 2 (index 1)", "id (as item_id)",
     "already answered"),
    ({"id": ["t1", "t2"], "output": [["a"], ["b"]], "system": ["m3", "m3"]}, "row 1 (index 0)", "output",
     "a text or a number"),
    ({"id": ["t1", "t2"], "result": ["a", "b"], "system": ["m3", "m3"]}, "header", "output", "a column named"),
])
def test_hostile_twins_are_refused_whole(toy, tmp_path, columns, where, field, expected):
    folder = saved(tmp_path, columns)
    message = refused(toy, folder)
    assert str(folder) in message and where in message and field in message and expected in message


def test_layouts_and_mappings_refused(toy, tmp_path):
    assert "--split" in refused(toy, ANSWERS, split="train")
    assert "response=COLUMN" in refused(toy, RATINGS, columns="item_id=id")
    assert "either response" in refused(toy, RATINGS, columns=RESPONSE_COLUMNS + ",annotator=rater")
    assert "TARGET=COLUMN" in refused(toy, RATINGS, columns="item=id")
    folder = saved(tmp_path, {"id": ["t1"], "output": ["a"], "system": ["m3"]})
    (folder / "state.json").write_text(json.dumps({"_data_files": [{"filename": "../../etc/passwd"}]}))
    assert "_data_files[0].filename" in refused(toy, folder)
    pq.write_table(pa.table({"id": ["t1"], "system": ["m1"], "rater": ["r1"], "aspect": ["fluency"],
                             "rating": [float("nan")]}), tmp_path / "r.parquet")
    message = refused(toy, tmp_path / "r.parquet", columns=RATING_COLUMNS, scales={"fluency": (0, 2)})
    assert "row 1 (index 0)" in message and "rating" in message and "a finite number" in message


def test_a_jsonl_source_keeps_its_lines(toy, tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text('{"id": "t1", "output": "好", "system": "m3"}\n\n{"id": "zz", "output": "嗯", "system": "m3"}\n',
                    encoding="utf-8")
    message = refused(toy, path)
    assert f"{path}, line 3, field 'id (as item_id)'" in message
    path.write_text('{"id": "t1", "output": "好", "system": "m3"}\n\n{"id": "t2", "output": "嗯", "system": "m3"}\n',
                    encoding="utf-8")
    import_hf(toy, path, dataset="toy", track="toy/chitchat", columns=RESPONSE_COLUMNS)
    assert toy.execute("SELECT item_id, origin FROM responses WHERE model = 'm3' ORDER BY item_id").fetchall() == [
        ("t1", "answers.jsonl line 1"), ("t2", "answers.jsonl line 3")]
