"""`import label-studio`: a Label Studio JSON export (tests/ingest/fixtures/labelstudio, in the shape of Label Studio's task
format docs) as human ratings, by the users who completed the annotations. A bad export is refused whole naming
its file, task, annotation, result and field, and the store is exactly as before."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from evalcore.cli import main
from evalcore.core.errors import ImportRefused
from evalcore.ingest.formats.labelstudio import import_labelstudio
from support import fingerprint

FIXTURE = Path(__file__).parent / "fixtures" / "labelstudio" / "project-3-at-2026-11-20-08-30-export.json"
TASKS = json.loads(FIXTURE.read_text("utf-8"))
ARGS = dict(dataset="toy", track="toy/chitchat", item_field="data.item_id", model_field="data.model")


def ratings(con, dimension: str) -> list[tuple]:
    return con.execute("SELECT item_id, model, annotator, score FROM human_ratings WHERE dimension = ? "
                       "ORDER BY item_id, model, annotator", [dimension]).fetchall()


def refused(con, path, **kwargs) -> str:
    before = fingerprint(con)
    with pytest.raises(ImportRefused) as err:
        import_labelstudio(con, path, **{**ARGS, "scales": {"fluency": (1, 5)}, **kwargs})
    assert fingerprint(con) == before
    return str(err.value)


def test_rating_results_are_ratings_by_their_annotators(toy):
    report = import_labelstudio(toy, FIXTURE, scales={"fluency": (1, 5)}, **ARGS)
    # task 11: alice (a user object: her email) 4, user 2: 5; task 12: alice 2 (user 2 cancelled); task 13: user 2: 1
    assert ratings(toy, "fluency") == [("t1", "m1", "2", 5.0), ("t1", "m1", "alice@lab.example", 4.0),
                                       ("t1", "m2", "2", 1.0), ("t2", "m1", "alice@lab.example", 2.0)]
    assert report.notes[0] == "3 tasks, 4 rating results"
    assert "1 cancelled annotation(s) (was_cancelled) left out" in report.notes
    assert "4 result(s) of other controls than 'rating' left out" in report.notes
    assert "1 prediction(s) (a model's pre-annotations, not people's) left out" in report.notes


def test_choices_from_the_cli_with_missing(toy, tmp_path, capsys):
    toy.close()   # the CLI opens the same store file (conftest's con: tmp_path / "store.duckdb")
    db = tmp_path / "store.duckdb"
    assert main(["import", "label-studio", str(FIXTURE), "--db", str(db), "--dataset", "toy", "--track",
                 "toy/chitchat", "--item-field", "data.item_id", "--model-field", "data.model", "--dimension-from",
                 "choice", "--scale", "coherent=1:3", "--missing", "N/A"]) == 0
    assert "1 answer(s) matching --missing 'N/A' stored as no rating" in capsys.readouterr().out


def test_choices_without_missing_are_refused(toy):
    message = refused(toy, FIXTURE, dimension_from="choice", scales={"coherent": (1, 3)})
    assert "task 3 (index 2), id 13, annotation 1, result 2" in message and "value.choices" in message


def twin(tmp_path, change) -> Path:
    tasks = copy.deepcopy(TASKS)
    change(tasks)
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("change, where, field, expected", [
    (lambda t: t[1]["annotations"][0]["result"][0]["value"].update(rating=9), "task 2 (index 1), id 12, annotation 1, "
     "result 1", "value.rating (as score)", "a score on the fluency scale 1..5"),
    (lambda t: t[1]["data"].update(item_id="zz"), "task 2 (index 1), id 12, annotation 1, result 1",
     "data.item_id (as item_id)", "an item of track"),
    (lambda t: t[2]["data"].update(model="m9"), "task 3 (index 2), id 13, annotation 1, result 1",
     "data.model (as model)", "a model with a stored response"),
    (lambda t: t[2]["data"].pop("model"), "task 3 (index 2), id 13", "data.model", "the task field named by"),
    (lambda t: t[0]["annotations"][1].update(completed_by=None), "task 1 (index 0), id 11, annotation 2",
     "completed_by", "a user id"),
    (lambda t: t[0]["annotations"][1].update(completed_by=t[0]["annotations"][0]["completed_by"]),
     "task 1 (index 0), id 11, annotation 2, result 1",
     "value.rating (as score)", "one score per response"),
    (lambda t: t[0]["annotations"][0]["result"][0]["value"].update(rating="four"), "task 1 (index 0), id 11, "
     "annotation 1, result 1", "value.rating (as score)", "a number"),
    (lambda t: t[0]["annotations"][0]["result"][0].update(from_name="flu\x07ency"), "task 1 (index 0), id 11, "
     "annotation 1, result 1", "from_name (as dimension)", "control characters"),
    (lambda t: t[0].update(annotations={}), "task 1 (index 0), id 11", "annotations", "a list of annotations"),
])
def test_hostile_twins_are_refused_whole(toy, tmp_path, change, where, field, expected):
    path = twin(tmp_path, change)
    message = refused(toy, path)
    assert str(path) in message and where in message and field in message and expected in message
