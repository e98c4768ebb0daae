"""`import dstc11`: a DSTC11 Track 4 turn-level file (tests/ingest/fixtures/dstc11, in the shape the track's baseline
writes) imported in its Chinese translation, its English paraphrase or its original English. A bad file is refused
whole naming file, line, entry and field as the file spells it, and the store is exactly as before."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from evalcore.cli import main
from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.dstc11 import import_dstc11
from support import fingerprint

FIXTURE = Path(__file__).parent / "fixtures" / "dstc11" / "convai2-grade_eval_zh_es_pa.json"
ENTRIES = json.loads(FIXTURE.read_text("utf-8"))
ARGS = dict(dataset="cg", track="dstc11/convai2-grade", scales={"relevance": (1, 5)})


def refused(con, path, **kwargs) -> str:
    before = fingerprint(con)
    with pytest.raises(ImportRefused) as err:
        import_dstc11(con, path, **{**ARGS, **kwargs})
    assert fingerprint(con) == before
    return str(err.value)


def test_chinese_texts_and_ratings_by_position(con):
    report = import_dstc11(con, FIXTURE, **ARGS)
    items = con.execute("SELECT item_id, context FROM items WHERE dataset = 'cg' ORDER BY item_id").fetchall()
    assert [(i, json.loads(c)) for i, c in items] == [("cg-0001", ["你有宠物吗？", "我有一只叫麦克斯的狗。"]),
                                                      ("cg-0002", ["你做什么工作？"])]
    responses = con.execute("SELECT item_id, model, text FROM responses ORDER BY item_id, model").fetchall()
    assert responses == [("cg-0001", "transformer_generator", "我喜欢去海滩。"),
                         ("cg-0001", "transformer_ranker", "这是一个很棒的狗名字！"),
                         ("cg-0002", "transformer_ranker", "我是当地一所学校的老师。")]
    ratings = con.execute("SELECT item_id, model, annotator, score FROM human_ratings ORDER BY item_id, model, "
                          "annotator").fetchall()
    # 3 + 3 + 2 scores (the third entry's second annotator gave none)
    assert ratings == [("cg-0001", "transformer_generator", "a1", 1.0), ("cg-0001", "transformer_generator", "a2", 2.0),
                       ("cg-0001", "transformer_generator", "a3", 1.0), ("cg-0001", "transformer_ranker", "a1", 5.0),
                       ("cg-0001", "transformer_ranker", "a2", 4.0), ("cg-0001", "transformer_ranker", "a3", 5.0),
                       ("cg-0002", "transformer_ranker", "a1", 4.0), ("cg-0002", "transformer_ranker", "a3", 5.0)]
    assert con.execute("SELECT count(*) FROM item_references").fetchall() == [(0,)]
    assert con.execute("SELECT language FROM datasets WHERE dataset = 'cg'").fetchall() == [("zh",)]
    assert report.file == str(FIXTURE) and "3 entries' English references left out (the texts are zh)" in report.notes


def test_paraphrase_from_the_cli_keeps_references(tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    assert main(["import", "dstc11", str(FIXTURE), "--db", db, "--dataset", "cg", "--track", "t", "--text", "pa",
                 "--scale", "relevance=1:5"]) == 0
    assert "texts context_pa and response_pa (en)" in capsys.readouterr().out


def twin(tmp_path, change) -> Path:
    entries = copy.deepcopy(ENTRIES)
    change(entries)
    path = tmp_path / "twin.json"
    path.write_text(json.dumps(entries, ensure_ascii=False, indent=6), encoding="utf-8")
    return path


@pytest.mark.parametrize("change, item, field, expected", [
    (lambda e: e[1].pop("response_zh"), 2, "response_zh", "a value"),
    (lambda e: e[2].update(context_zh=["a"]), 3, "context_zh", "a string"),
    (lambda e: e[1]["annotations"]["relevance"].__setitem__(0, 9), 2, "annotations.relevance[0]", "scale 1..5"),
    (lambda e: e[1]["annotations"]["relevance"].__setitem__(1, "bad"), 2, "annotations.relevance[1]", "a number"),
    (lambda e: e[1].update(model=e[0]["model"]), 2, "model", "one entry per dialogue context and model (first at "
     "line 2, item 1 (index 0))"),
    (lambda e: e[2].pop("model"), 3, "model", "a value"),
    (lambda e: e[0].update(response_zh="坏\x07"), 1, "response_zh", "control characters"),
])
def test_hostile_twins_are_refused_whole(con, tmp_path, change, item, field, expected):
    import_dstc11(con, FIXTURE, **{**ARGS, "dataset": "other"})
    path = twin(tmp_path, change)
    message = refused(con, path)
    line = [n for n, text in enumerate(path.read_text("utf-8").splitlines(), 1) if text == " " * 6 + "{"][item - 1]
    assert str(path) in message and f"line {line}, item {item} (index {item - 1})" in message
    assert field in message and expected in message


def test_stored_origins_are_the_source_lines_also_in_a_compact_file(con, tmp_path):
    import_dstc11(con, FIXTURE, **ARGS)
    starts = [n for n, text in enumerate(FIXTURE.read_text("utf-8").splitlines(), 1) if text == " " * 6 + "{"]
    origins = con.execute("SELECT origin FROM responses ORDER BY origin").fetchall()
    assert [o for (o,) in origins] == [f"{FIXTURE.name} line {line}, item {k + 1} (index {k})"
                                       for k, line in enumerate(starts)]
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps([{**e, "annotations": {"relevance": [9]}} if k == 2 else e
                                   for k, e in enumerate(ENTRIES)], ensure_ascii=False), encoding="utf-8")
    message = refused(con, compact, dataset="cg2")
    assert f"{compact}, line 1, item 3 (index 2), field 'annotations.relevance[0]'" in message
