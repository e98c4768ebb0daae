"""`import argilla`: an Argilla dataset written by Dataset.to_disk (tests/ingest/fixtures/argilla, in the shape of Argilla's
published source: see its PROVENANCE) as human ratings, by the users who submitted the responses. A bad export
is refused whole naming its file, record, question, response and field, and the store is exactly as before."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalcore.cli import main
from evalcore.core.errors import ImportRefused
from evalcore.ingest import lookup
from evalcore.ingest.formats.argilla import import_argilla
from evalcore.ingest.formats.ratings import import_ratings
from evalcore.store import connect
from support import fingerprint

FIXTURES = Path(__file__).parent / "fixtures" / "argilla"
EXPORT = FIXTURES / "chitchat-zh-ratings"
USERS = FIXTURES / "users.csv"
U1, U2 = "6f1c0b9e-2a41-4c4e-9d52-1b7f3f0a9c11", "b3e8d2a4-7c55-4f0e-8a6b-5d2c9e1f4a72"   # li.wei, 王芳
ARGS = dict(dataset="toy", track="toy/chitchat", item_field="metadata.item_id", model_field="metadata.model")


def ratings(con, dimension: str) -> list[tuple]:
    return con.execute("SELECT item_id, model, annotator, score FROM human_ratings WHERE dimension = ? "
                       "ORDER BY item_id, model, annotator", [dimension]).fetchall()


def test_submitted_responses_are_ratings_by_their_users(toy):
    report = import_argilla(toy, EXPORT, **ARGS)
    # rec-001 (t1/m1): U1 4, U2 5; rec-002 (t2/m1): U1 2 submitted, U2's 3 a draft; rec-003 (t1/m2): U2 1
    assert ratings(toy, "fluency") == [("t1", "m1", U1, 4.0), ("t1", "m1", U2, 5.0), ("t1", "m2", U2, 1.0),
                                       ("t2", "m1", U1, 2.0)]
    # rec-002: U2's relevance discarded (value null)
    assert ratings(toy, "relevance") == [("t1", "m1", U1, 3.0), ("t1", "m1", U2, 2.0), ("t1", "m2", U2, 1.0),
                                         ("t2", "m1", U1, 1.0)]
    assert ratings(toy, "overall") == []   # its label "N/A" is not a number and no --missing was given
    assert lookup.scales(toy, "toy")["fluency"] == (1, 5) and lookup.scales(toy, "toy")["relevance"] == (1, 3)
    assert report.notes[0] == "dataset 'chitchat-zh-ratings': 3 records, 8 submitted responses to 'fluency', 'relevance'"
    assert "1 draft response(s) left out" in report.notes
    assert "1 discarded response(s) left out" in report.notes
    assert "5 response(s) to questions not imported left out" in report.notes   # comment 1, overall 2 + 1 + 1
    assert "1 suggestion(s) (a model's answers, not people's) left out" in report.notes
    assert "question 'comment' left out: a text question, not a score" in report.notes
    assert any(n.startswith("question 'overall' left out: a label_selection question with labels that are not numbers (['N/A']")
               for n in report.notes)


def test_annotators_and_missing_from_the_cli(toy, tmp_path, capsys):
    toy.close()   # the CLI opens the same store file (conftest's con: tmp_path / "store.duckdb")
    db = tmp_path / "store.duckdb"
    assert main(["import", "argilla", str(EXPORT), "--db", str(db), "--dataset", "toy", "--track", "toy/chitchat",
                 "--item-field", "metadata.item_id", "--model-field", "metadata.model", "--annotators", str(USERS),
                 "--missing", "N/A"]) == 0
    assert "1 answer(s) matching --missing 'N/A' stored as no rating" in capsys.readouterr().out
    con = connect(db)
    # overall: rec-001 U1 "3" (U2 "N/A": no rating), rec-002 U1 "2", rec-003 U2 "1"; scale from the number labels
    assert ratings(con, "overall") == [("t1", "m1", "li.wei", 3.0), ("t1", "m2", "王芳", 1.0), ("t2", "m1", "li.wei", 2.0)]
    assert ratings(con, "fluency")[:2] == [("t1", "m1", "li.wei", 4.0), ("t1", "m1", "王芳", 5.0)]
    assert lookup.scales(con, "toy")["overall"] == (1, 3)
    con.close()


def test_questions_and_scale_chosen(toy):
    report = import_argilla(toy, EXPORT, questions=["relevance"], scales={"relevance": (0, 10)}, **ARGS)
    assert ratings(toy, "fluency") == []
    assert [r[3] for r in ratings(toy, "relevance")] == [3.0, 2.0, 1.0, 1.0]
    assert lookup.scales(toy, "toy")["relevance"] == (0, 10)
    assert "question 'fluency' left out: not in --questions" in report.notes


def test_a_question_that_is_no_score_is_refused_by_name(toy):
    before = fingerprint(toy)
    with pytest.raises(ImportRefused) as err:
        import_argilla(toy, EXPORT, questions=["comment"], **ARGS)
    assert "--questions" in str(err.value) and "got 'comment': a text question, not a score" in str(err.value)
    assert fingerprint(toy) == before


def twin(tmp_path, records=None, settings=None) -> Path:
    """A copy of the fixture with its records (or settings) changed."""
    folder = tmp_path / "export"
    shutil.copytree(EXPORT, folder)
    for name, change in (("records.json", records), (".argilla/settings.json", settings)):
        if change is not None:
            data = json.loads((folder / name).read_text("utf-8"))
            change(data)
            (folder / name).write_text(json.dumps(data), encoding="utf-8")
    return folder


def refused(con, folder: Path, **kwargs) -> str:
    before = fingerprint(con)
    with pytest.raises(ImportRefused) as err:
        import_argilla(con, folder, **{**ARGS, **kwargs})
    assert fingerprint(con) == before
    return str(err.value)


def _response(question: str, record: int, k: int, **change):
    return lambda r: r[record]["responses"][question][k].update(change)


@pytest.mark.parametrize("records, where, field, expected", [
    (_response("fluency", 0, 1, value=6), "record 1 (index 0), id 'rec-001', question 'fluency', response 2",
     "value (as score)", "a score on the fluency scale 1..5"),
    (lambda r: r[1]["metadata"].update(item_id="zz"), "record 2 (index 1), id 'rec-002', question 'fluency', "
     "response 1", "metadata.item_id (as item_id)", "an item of track"),
    (lambda r: r[2]["metadata"].update(model="m9"), "record 3 (index 2), id 'rec-003', question 'fluency', "
     "response 1", "metadata.model (as model)", "a model with a stored response"),
    (lambda r: r[2]["metadata"].pop("item_id"), "record 3 (index 2), id 'rec-003'", "metadata.item_id",
     "the record field named by --item-field"),
    (lambda r: r[0]["responses"].update(tone=[{"value": 2, "user_id": U1}]), "record 1 (index 0), id 'rec-001'",
     "responses.tone", "a question of .argilla/settings.json"),
    (_response("relevance", 2, 0, status="pending"), "record 3 (index 2), id 'rec-003', question 'relevance', "
     "response 1", "status", "submitted or draft or discarded"),
    (_response("fluency", 0, 0, user_id=None), "record 1 (index 0), id 'rec-001', question 'fluency', response 1",
     "user_id", "a user id"),
    (_response("fluency", 0, 1, user_id=U1), "record 1 (index 0), id 'rec-001', question 'fluency', response 2",
     "value (as score)", "one score per response"),
    (_response("fluency", 0, 0, value="四"), "record 1 (index 0), id 'rec-001', question 'fluency', response 1",
     "value (as score)", "a number"),
    (lambda r: r[1].update(responses=[]), "record 2 (index 1), id 'rec-002'", "responses", "an object {question"),
])
def test_hostile_records_are_refused_whole(toy, tmp_path, records, where, field, expected):
    folder = twin(tmp_path, records=records)
    message = refused(toy, folder)
    assert str(folder / "records.json") in message and where in message and field in message and expected in message


def test_bad_json_is_refused(toy, tmp_path):
    folder = twin(tmp_path)
    text = (folder / "records.json").read_text("utf-8")
    (folder / "records.json").write_text(text[: len(text) // 2], encoding="utf-8")
    message = refused(toy, folder)
    assert str(folder / "records.json") in message and "line 1" in message and "invalid JSON" in message


def test_bad_settings_are_refused(toy, tmp_path):
    folder = twin(tmp_path, settings=lambda s: s["questions"][0]["settings"].update(options=[]))
    message = refused(toy, folder)
    assert str(folder / ".argilla" / "settings.json") in message and "question 1 (index 0), 'fluency'" in message
    assert "settings.options" in message and "a list of options" in message


def test_an_unlisted_user_is_refused(toy, tmp_path):
    users = tmp_path / "users.csv"
    users.write_text(f"user_id,username\n{U1},li.wei\n", encoding="utf-8")
    message = refused(toy, EXPORT, annotators=users)
    assert "record 1 (index 0), id 'rec-001', question 'fluency', response 2" in message
    assert "user_id" in message and "a user_id listed in --annotators" in message


def test_a_name_given_to_two_users_is_refused(toy, tmp_path):
    users = tmp_path / "users.csv"
    users.write_text(f"user_id,username\n{U1},li.wei\n{U2},li.wei\n", encoding="utf-8")
    message = refused(toy, EXPORT, annotators=users)
    assert str(users) in message and "username" in message and "each username once" in message


def test_a_folder_without_the_export_is_refused(toy, tmp_path):
    folder = twin(tmp_path)
    (folder / ".argilla" / "settings.json").unlink()
    message = refused(toy, folder)
    assert "a folder written by Argilla's Dataset.to_disk" in message and "no .argilla/settings.json" in message


def test_the_rated_text_is_the_stored_response(toy, tmp_path):
    folder = twin(tmp_path, records=lambda r: r[1]["fields"].update(response="你好呀"))
    message = refused(toy, folder, response_field="fields.response")
    assert "record 2 (index 1), id 'rec-002'" in message and "fields.response" in message
    assert "the stored response of item 't2' and model 'm1', '你好'" in message and "got '你好呀'" in message
    import_argilla(toy, EXPORT, response_field="fields.response", **ARGS)   # 天气很好, 你好, 嗯: as stored
    assert len(ratings(toy, "fluency")) == 4


def test_a_stored_scale_stands(toy, tmp_path):
    """The options of settings.json give a new dimension its scale; a dimension stored with one keeps it."""
    (tmp_path / "earlier.csv").write_text("item_id,model,annotator,dimension,score\nt2,m1,x,fluency,3\n", encoding="utf-8")
    import_ratings(toy, tmp_path / "earlier.csv", dataset="toy", track="toy/chitchat", scales={"fluency": (1, 5)})
    wider = [{"value": v} for v in range(0, 11)]
    folder = twin(tmp_path, settings=lambda s: s["questions"][0]["settings"].update(options=wider),
                  records=_response("fluency", 0, 1, value=7))
    message = refused(toy, folder)
    assert "record 1 (index 0), id 'rec-001', question 'fluency', response 2" in message
    assert "a score on the fluency scale 1..5" in message and "--scale" not in message
    shutil.rmtree(folder)
    import_argilla(toy, twin(tmp_path, settings=lambda s: s["questions"][0]["settings"].update(options=wider)), **ARGS)
    assert lookup.scales(toy, "toy")["fluency"] == (1, 5) and len(ratings(toy, "fluency")) == 5
