"""Answers that are not numbers in rating files: refused whole (naming file, row, field and text, and the option)
unless --missing names them; then stored as no rating and counted per dimension."""
from __future__ import annotations

import json

import pytest

from evalcore.cli import main
from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.dstc10 import import_dstc10
from evalcore.ingest.formats.ratings import import_ratings
from evalcore.services.upload import parse_patterns, upload_ratings
from evalcore.store import connect
from support import ROOT, TOY_ITEMS, fingerprint, shared, write_jsonl

SUGGESTION = "expected a number (or give --missing PATTERN for answers that are not numbers)"

# toy responses: (t1, m1), (t2, m1), (t1, m2); two dimensions each, three of the six answers "N/A (...)"
RATINGS = ("item_id,model,annotator,dimension,score\n"
           "t1,m1,ann,Info,2\n"
           "t1,m1,ann,Coh,N/A (x)\n"
           "t2,m1,ann,Info,1\n"
           "t2,m1,ann,Coh, N/A (no errors) \n"
           "t1,m2,ann,Info,N/A (x)\n"
           "t1,m2,ann,Coh,0\n")
SCALES = {"Info": (0.0, 2.0), "Coh": (0.0, 2.0)}


def ratings_rows(con) -> list[tuple]:
    return con.execute("SELECT item_id, model, annotator, dimension, score FROM human_ratings ORDER BY ALL").fetchall()


def refused(con, fn, *args, **kwargs) -> str:
    """An import that must be refused, with the store unchanged (every table, and the ratings' count)."""
    before = fingerprint(con)
    count = con.execute("SELECT count(*) FROM human_ratings").fetchone()[0]
    with pytest.raises(ImportRefused) as err:
        fn(con, *args, **kwargs)
    assert con.execute("SELECT count(*) FROM human_ratings").fetchone()[0] == count
    assert fingerprint(con) == before
    return str(err.value)


def test_text_scores_are_refused_naming_row_field_text_and_the_option(toy, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(RATINGS, encoding="utf-8")
    message = refused(toy, import_ratings, path, dataset="toy", track="toy/chitchat", scales=SCALES)
    assert message.splitlines()[1] == f"  - {path}, row 3, field 'score': {SUGGESTION}, got 'N/A (x)'"
    # the header is row 1: rows 3, 5 and 6 are the three text answers
    assert "row 5" in message and "row 6" in message and "row 2" not in message and "row 4" not in message
    # a pattern that matches none of them changes nothing
    message = refused(toy, import_ratings, path, dataset="toy", track="toy/chitchat", scales=SCALES,
                      missing=["n/a*"])   # case-sensitive
    assert "row 3" in message and SUGGESTION in message


def test_text_scores_matching_missing_are_stored_as_no_rating(toy, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(RATINGS, encoding="utf-8")
    report = import_ratings(toy, path, dataset="toy", track="toy/chitchat", scales=SCALES, missing=["N/A*"])
    # 6 rows - 3 text answers = 3 ratings stored; Coh 2 text answers (rows 3, 5), Info 1 (row 6)
    assert ratings_rows(toy) == [("t1", "m1", "ann", "Info", 2.0), ("t1", "m2", "ann", "Coh", 0.0),
                                 ("t2", "m1", "ann", "Info", 1.0)]
    assert "3 answer(s) matching --missing 'N/A*' stored as no rating: Coh 2, Info 1" in report.notes


def test_a_pattern_never_matches_a_number_nor_an_empty_cell(toy, tmp_path):
    path = tmp_path / "r.csv"
    for cell, got in [("5", "expected a score on the Info scale 0..2, got 5"),
                      ("nan", "expected a finite number, got 'nan'"),
                      ("1_0", "which only Python reads as a number"),
                      ("", "expected a number, got nothing")]:
        path.write_text(f"item_id,model,annotator,dimension,score\nt1,m1,ann,Info,{cell}\n", encoding="utf-8")
        message = refused(toy, import_ratings, path, dataset="toy", track="toy/chitchat", scales=SCALES,
                          missing=["*"])
        assert "row 2" in message and got in message, (cell, message)
    with pytest.raises(ImportRefused, match="--missing"):
        import_ratings(toy, path, dataset="toy", track="toy/chitchat", scales=SCALES, missing=[" "])


def test_the_cli_and_the_upload_service_pass_missing_through(tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    assert main(["import", "items", str(write_jsonl(tmp_path / "i.jsonl", TOY_ITEMS)), "--db", db]) == 0
    (tmp_path / "resp.csv").write_text("item_id,model,response\nt1,m1,a\nt2,m1,b\nt1,m2,c\n", encoding="utf-8")
    assert main(["import", "responses", str(tmp_path / "resp.csv"), "--db", db, "--dataset", "toy",
                 "--track", "toy/chitchat"]) == 0
    path = tmp_path / "r.csv"
    path.write_text(RATINGS, encoding="utf-8")
    command = ["import", "ratings", str(path), "--db", db, "--dataset", "toy", "--track", "toy/chitchat",
               "--scale", "Info=0:2", "--scale", "Coh=0:2"]
    capsys.readouterr()
    assert main(command) != 0
    assert SUGGESTION in capsys.readouterr().err
    assert main(command + ["--missing", "N/A (x)", "--missing", "N/A (no*"]) == 0
    assert "3 answer(s) matching --missing 'N/A (x)' or 'N/A (no*' stored as no rating: Coh 2, Info 1" \
        in capsys.readouterr().out
    con = connect(db)
    try:
        assert len(ratings_rows(con)) == 3
        # the upload page's comma-separated patterns, through the service
        assert parse_patterns(" N/A*, none ,") == ["N/A*", "none"]
        con.execute("DELETE FROM human_ratings")
        done = upload_ratings(con, path, dataset="toy", track="toy/chitchat", missing=parse_patterns("N/A*"))
        assert len(ratings_rows(con)) == 3
        assert any(n.startswith("3 answer(s) matching --missing 'N/A*'") for n in done.report.notes)
    finally:
        con.close()


def test_the_upload_pages_ratings_form_asks_for_patterns(toy, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    toy.close()
    monkeypatch.setenv("EVALCORE_DB", str(tmp_path / "store.duckdb"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.switch_page("pages/views/upload.py")
    for key, value in {"dataset": "toy", "track": "toy/chitchat", "kind": "ratings"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_input(key="up-missing").label == "Answers that are not numbers (patterns, comma-separated)"


DSTC = [
    {"dialogue_id": "x1", "model": "s1", "context": "hi\nhello", "response": "how are you",
     "annotations": {"Overall": [3, "N/A (none)", None], "Error recovery": ["N/A", 1, 2]}},
    {"dialogue_id": "x2", "model": "s1", "context": "hey", "response": "yo",
     "annotations": {"Overall": [4, 5, 1], "Error recovery": [0, "N/A (fine)", "N/A (fine)"]}},
]


def test_dstc10_text_annotations_refused_then_stored_as_no_rating(con, tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps(DSTC, indent=1), encoding="utf-8")
    kwargs = {"dataset": "dd", "track": "dd/chitchat", "language": "en",
              "scales": {"Overall": (1.0, 5.0), "Error recovery": (0.0, 2.0)}}
    message = refused(con, import_dstc10, path, **kwargs)
    assert message.splitlines()[1] == (f"  - {path}, line 2, item 1 (index 0), field 'annotations.Overall[1]': "
                                       f"{SUGGESTION}, got 'N/A (none)'")
    assert "field 'annotations.Error recovery[0]'" in message
    assert "field 'annotations.Error recovery[1]'" in message and "item 2 (index 1)" in message

    report = import_dstc10(con, path, **kwargs, missing=["N/A*"])
    # 12 cells: 1 null, 4 text answers (Error recovery 3, Overall 1), 7 scores stored
    assert con.execute("SELECT count(*) FROM human_ratings").fetchone()[0] == 7
    rows = con.execute("SELECT item_id, annotator, dimension, score FROM human_ratings ORDER BY ALL").fetchall()
    assert rows == [("x1", "a1", "Overall", 3.0), ("x1", "a2", "Error recovery", 1.0), ("x1", "a3", "Error recovery", 2.0),
                    ("x2", "a1", "Error recovery", 0.0), ("x2", "a1", "Overall", 4.0), ("x2", "a2", "Overall", 5.0),
                    ("x2", "a3", "Overall", 1.0)]
    assert "1 null scores (no score from that annotator) skipped" in report.notes
    assert "4 answer(s) matching --missing 'N/A*' stored as no rating: Error recovery 3, Overall 1" in report.notes


# FED dialogue-level scales, read off the release: every dimension 0..2 but Consistent 0..1 and Overall 0..4
FED_SCALES = {"Coherent": (0, 2), "Error recovery": (0, 2), "Consistent": (0, 1), "Diverse": (0, 2),
              "Depth": (0, 2), "Likeable": (0, 2), "Understanding": (0, 2), "Flexible": (0, 2),
              "Informative": (0, 2), "Inquisitive": (0, 2), "Overall": (0, 4)}


def test_fed_dialogue_level_imports_with_its_na_answers_counted(tmp_path, capsys):
    entries = [e for e in json.loads(shared("fed", "fed_data.json").read_text("utf-8")) if "response" not in e]
    assert len(entries) == 125
    converted = []
    for i, e in enumerate(entries):
        turns = e["context"].split("\n")
        converted.append({"dialogue_id": f"d{i}", "model": e["system"], "context": "\n".join(turns[:-1]),
                          "response": turns[-1], "annotations": e["annotations"]})
    path = tmp_path / "fed_dialogues.json"
    path.write_text(json.dumps(converted), encoding="utf-8")
    # the plain count: text answers per dimension (all begin "N/A"), numbers per dimension (all within scale)
    texts: dict[str, int] = {}
    numbers: dict[str, int] = {}
    for e in entries:
        for dim, answers in e["annotations"].items():
            for a in answers:
                if isinstance(a, str):
                    assert a.startswith("N/A")
                    texts[dim] = texts.get(dim, 0) + 1
                else:
                    assert FED_SCALES[dim][0] <= a <= FED_SCALES[dim][1]
                    numbers[dim] = numbers.get(dim, 0) + 1
    assert set(texts) == {"Error recovery", "Flexible"}

    db = str(tmp_path / "s.duckdb")
    command = ["import", "dstc10", str(path), "--db", db, "--dataset", "fed", "--track", "fed/dialogue",
               "--language", "en"] + [a for dim, (lo, hi) in FED_SCALES.items() for a in ("--scale", f"{dim}={lo}:{hi}")]
    capsys.readouterr()
    assert main(command) != 0
    assert SUGGESTION in capsys.readouterr().err
    assert main(command + ["--missing", "N/A*"]) == 0
    out = capsys.readouterr().out
    per = ", ".join(f"{d} {n:,}" for d, n in sorted(texts.items(), key=lambda x: (-x[1], x[0])))
    assert f"{sum(texts.values()):,} answer(s) matching --missing 'N/A*' stored as no rating: {per}" in out
    con = connect(db)
    try:
        stored = dict(con.execute("SELECT dimension, count(*) FROM human_ratings GROUP BY dimension").fetchall())
        assert stored == numbers
        assert con.execute("SELECT count(DISTINCT item_id) FROM responses").fetchone()[0] == 125
    finally:
        con.close()
