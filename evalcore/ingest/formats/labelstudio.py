"""`import label-studio`: ratings from a Label Studio project's JSON export (labelstud.io/guide/task_format): a
JSON list of tasks, each {"id", "data": {...the task's fields...}, "annotations": [{"completed_by", "result":
[{"from_name", "to_name", "type", "value"}], "was_cancelled", ...}], "predictions": [...]}.

Each result of the chosen control type is one human rating of a stored response:
- the response: the item and model named by two fields of the task (--item-field data.item_id, --model-field
  data.model, dotted paths in the task);
- the dimension: the result's from_name (the name of the control in the labeling config);
- the score: a Rating control's value.rating (--dimension-from rating, the default), or a Choices control's one
  choice read as a number (--dimension-from choice: choices such as "1", "2", "3"; a choice that is not a number
  is refused unless a --missing pattern matches it);
- the annotator: completed_by, the user's email when the export gives the user as an object, else the user's id.
Cancelled annotations (was_cancelled) and predictions (a model's pre-annotations, not people's) are left out and
counted. The rows are imported by import_ratings, in one transaction, under its rules (scales, one rating per
response, annotator and dimension, responses that exist); problems name the task, annotation and result, and a
stored rating's origin is '<export>.jsonl line K', K its number among the ratings read.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.ingest.batch import ImportReport
from evalcore.ingest.checker import Checker
from evalcore.ingest.formats.dstc10 import read_json_list
from evalcore.ingest.formats.hfdata import imported_as
from evalcore.ingest.formats.lmeval import entry_at, key_fields
from evalcore.ingest.formats.ratings import import_ratings, scales

SHAPE = "a Label Studio JSON export: a list of tasks {data, annotations: [{completed_by, result: [...]}]}"
CONTROLS = {"rating": "rating", "choice": "choices"}   # --dimension-from -> the result's type


def import_labelstudio(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str,
                       item_field: str, model_field: str, dimension_from: str = "rating",
                       scales: dict | None = None, missing: list[str] | None = None) -> ImportReport:
    path = Path(path)
    file = str(path)
    if dimension_from not in CONTROLS:
        raise ImportRefused([Problem(file, "", "--dimension-from", "rating or choice", repr(dimension_from))])
    kind = CONTROLS[dimension_from]
    tasks, _, lines = read_json_list(path, SHAPE)
    check = Checker(file)
    rows: list[dict] = []
    places: list[str] = []
    cancelled = other = predicted = 0
    for i, task in enumerate(tasks):
        at = entry_at(check, f"line {lines[i]:,}, task {i + 1} (index {i})", task, "task")
        if at is None:
            continue
        keys = key_fields(check, task, at, "task", item_field, model_field)
        predicted += len(task.get("predictions") or []) if isinstance(task.get("predictions"), list) else 0
        annotations = task.get("annotations")
        if not isinstance(annotations, list):
            check.add(at, "annotations", "a list of annotations", short(annotations))
            continue
        for j, annotation in enumerate(annotations):
            where = f"{at}, annotation {j + 1}"
            if not isinstance(annotation, dict) or not isinstance(annotation.get("result"), list):
                check.add(where, "result", "an annotation object with a result list", short(annotation))
                continue
            if annotation.get("was_cancelled") is True:
                cancelled += 1
                continue
            annotator = _annotator(check, annotation.get("completed_by"), where)
            for k, result in enumerate(annotation["result"]):
                place = f"{where}, result {k + 1}"
                if not isinstance(result, dict) or not isinstance(result.get("value"), dict):
                    check.add(place, "value", "a result object with a value object", short(result))
                    continue
                if result.get("type") != kind:
                    other += 1
                    continue
                score = _score(check, result["value"], kind, place)
                if annotator is None or score is _BAD:
                    continue
                rows.append({"item_id": keys["--item-field"], "model": keys["--model-field"], "annotator": annotator,
                             "dimension": result.get("from_name"), "score": score})
                places.append(place)
    check.refuse_if_any()
    if not rows:
        raise ImportRefused([Problem(file, "", "annotations", f"at least one {kind!r} result (--dimension-from "
                                     f"{dimension_from})", "none")])
    fields = {"item_id": item_field, "model": model_field, "annotator": "completed_by", "dimension": "from_name",
              "score": f"value.{kind}"}
    report = imported_as(con, import_ratings, rows, file, places, fields, dataset=dataset, track=track,
                         scales=scales, missing=missing)
    report.notes.insert(0, f"{len(tasks):,} tasks, {len(rows):,} {kind} results")
    for n, what in ((cancelled, "cancelled annotation(s) (was_cancelled) left out"),
                    (other, f"result(s) of other controls than {kind!r} left out"),
                    (predicted, "prediction(s) (a model's pre-annotations, not people's) left out")):
        if n:
            report.notes.append(f"{n:,} {what}")
    return report


_BAD = object()   # a score already reported as a problem


def _annotator(check: Checker, user: object, where: str) -> str | None:
    """The annotator's name: the email of a user object (else its id), or the id the export gives."""
    if isinstance(user, dict):
        user = user.get("email") or user.get("id")
    if isinstance(user, bool) or not isinstance(user, (int, str)) or not str(user).strip():
        check.add(where, "completed_by", "a user id or a user object with an email or id", short(user))
        return None
    return str(user)


def _score(check: Checker, value: dict, kind: str, where: str) -> object:
    """The rating's number, or the one choice's text (import_ratings reads it as a number or a --missing answer)."""
    if kind == "rating":
        return value.get("rating")
    choices = value.get("choices")
    if not (isinstance(choices, list) and len(choices) == 1 and isinstance(choices[0], str)):
        check.add(where, "value.choices", "one choice (a number such as \"3\")", short(choices))
        return _BAD
    return choices[0]


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_labelstudio(con, args.file, dataset=args.dataset, track=args.track, item_field=args.item_field,
                              model_field=args.model_field, dimension_from=args.dimension_from,
                              scales=scales(args.scale), missing=args.missing)
