"""`import argilla`: ratings from an Argilla 2.x dataset written to disk by `Dataset.to_disk(path)`: a folder with
records.json (a JSON list of records {"id", "fields", "metadata", "suggestions", "responses": {question: [{"value",
"user_id"}]}, "vectors", "status", "_server_id"}), .argilla/settings.json ({"fields", "questions": [{"name",
"settings": {"type", "options": [{"value"}]}}], ...}) and .argilla/dataset.json (the dataset's name, guidelines).
The shape is read from Argilla's published source (records/_resource.py Record.to_dict, settings/_resource.py
Settings.serialize, datasets/_io/_disk.py), not from files the package wrote: it is not installable here.

Each response to a chosen question is one human rating of a stored response:
- the response: the item and model named by two fields of the record (--item-field metadata.item_id,
  --model-field metadata.model, dotted paths in the record);
- the dimension: the question's name; the score: the response's value;
- the annotator: the response's user_id, or the username that --annotators (a CSV user_id,username) gives it;
- with --response-field (fields.response), the text the annotators saw must be the stored response's.
The questions: every rating question, and every label_selection question whose labels are numbers ("1", "2";
labels a --missing pattern matches are no rating), as label-studio's Choices; --questions names them instead.
Other questions (text, span, ranking, multi_label_selection) are left out, named in a note. A response with a
status (exports of other Argilla versions write one) counts only when submitted; drafts and discarded ones are
counted in a note. Suggestions (a model's answers, not people's) are counted and left out. A question's scale
is its options' lowest to highest value unless --scale gives one. The rows are imported by import_ratings, in one
transaction, under its rules; problems name the file, record, question and response, and a stored rating's
origin is 'records.json.jsonl line K', K its number among the responses read.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.core.text import normalise_id
from evalcore.ingest import lookup
from evalcore.ingest.batch import ImportReport
from evalcore.ingest.checker import Checker, decimal
from evalcore.ingest.formats.dstc10 import read_json_list
from evalcore.ingest.formats.hfdata import imported_as
from evalcore.ingest.formats.lmeval import entry_at, field_at, key_fields
from evalcore.ingest.formats.ratings import Missing, import_ratings, scales
from evalcore.ingest.jsonread import read_json
from evalcore.ingest.readers import read_table

RECORDS = "records.json"
SETTINGS = Path(".argilla") / "settings.json"
DATASET = Path(".argilla") / "dataset.json"
FOLDER = f"a folder written by Argilla's Dataset.to_disk ({RECORDS}, {SETTINGS.as_posix()})"
RECORDS_SHAPE = "Argilla records: a JSON list of records {id, fields, metadata, responses: {question: [...]}}"
SETTINGS_SHAPE = "Argilla settings: a JSON object {fields, questions: [{name, settings: {type, options}}]}"
STATUSES = ("submitted", "draft", "discarded")


def import_argilla(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str,
                   item_field: str, model_field: str, response_field: str | None = None, questions: list[str] | None = None,
                   scales: dict | None = None, missing: list[str] | None = None,
                   annotators: str | Path | None = None) -> ImportReport:
    """The submitted responses of the export in folder `path` as human ratings of `track`'s stored responses, in
    one transaction, or nothing (ImportRefused naming every problem found)."""
    folder = Path(path)
    if not (folder / RECORDS).is_file() or not (folder / SETTINGS).is_file():
        got = "no such folder" if not folder.is_dir() else "no " + " and no ".join(
            name.as_posix() for name in (Path(RECORDS), SETTINGS) if not (folder / name).is_file())
        raise ImportRefused([Problem(str(folder), "", "", FOLDER, got)])
    absent = Missing.of(str(folder), missing)
    chosen, scale_of, skipped = _questions(folder / SETTINGS, questions, absent)
    users = _users(Path(annotators)) if annotators is not None else None
    title = _dataset_name(folder / DATASET)
    file = str(folder / RECORDS)
    records, _, _ = read_json_list(folder / RECORDS, RECORDS_SHAPE)
    check = Checker(file)
    texts = _stored_texts(con, dataset, track) if response_field is not None else {}
    rows: list[dict] = []
    places: list[str] = []
    left = {"draft": 0, "discarded": 0, "suggestion": 0, "other": 0}
    for i, record in enumerate(records):
        at = entry_at(check, f"record {i + 1} (index {i})", record, "record")
        if at is None:
            continue
        keys = key_fields(check, record, at, "record", item_field, model_field)
        if response_field is not None:
            _same_text(check, record, response_field, texts, keys.values(), at)
        suggestions = record.get("suggestions")
        left["suggestion"] += len(suggestions) if isinstance(suggestions, dict) else 0
        answered = {} if record.get("responses") is None else record["responses"]
        if not isinstance(answered, dict):
            check.add(at, "responses", "an object {question: [responses]}", short(answered))
            continue
        for question, given in answered.items():
            field = f"responses.{question}"
            if question not in chosen and question not in skipped:
                known = ", ".join(sorted(chosen) + sorted(skipped)) or "none"
                check.add(at, field, f"a question of {SETTINGS.as_posix()} (questions: {known})", short(question))
                continue
            if not isinstance(given, list):
                check.add(at, field, "a list of responses [{value, user_id}]", short(given))
                continue
            if question not in chosen:
                left["other"] += len(given)
                continue
            for k, response in enumerate(given):
                place = f"{at}, question {question!r}, response {k + 1}"
                status = _status(check, response, place)
                if status in ("draft", "discarded"):
                    left[status] += 1
                if status != "submitted":
                    continue
                annotator = _annotator(check, response.get("user_id"), users, place)
                if annotator is None:
                    continue
                rows.append({"item_id": keys["--item-field"], "model": keys["--model-field"], "annotator": annotator,
                             "dimension": question, "score": response.get("value")})
                places.append(place)
    check.refuse_if_any()
    if not rows:
        raise ImportRefused([Problem(file, "", "responses", "at least one submitted response to a question "
                                     f"imported ({', '.join(sorted(chosen)) or 'none'})", "none")])
    fields = {"item_id": item_field, "model": model_field, "annotator": "user_id", "dimension": "question",
              "score": "value"}
    stored = {d for d, scale in lookup.scales(con, normalise_id(dataset)).items() if scale != (None, None)}
    own = {d: scale for d, scale in scale_of.items() if d not in stored}   # a stored scale stands; values are checked on it
    report = imported_as(con, import_ratings, rows, file, places, fields, dataset=dataset, track=track,
                         scales={**own, **(scales or {})}, missing=missing)
    report.notes.insert(0, f"{title}{len(records):,} records, {len(rows):,} submitted responses to "
                        f"{', '.join(repr(q) for q in sorted(chosen))}")
    for n, what in ((left["draft"], "draft response(s) left out"),
                    (left["discarded"], "discarded response(s) left out"),
                    (left["other"], "response(s) to questions not imported left out"),
                    (left["suggestion"], "suggestion(s) (a model's answers, not people's) left out")):
        if n:
            report.notes.append(f"{n:,} {what}")
    report.notes += [f"question {name!r} left out: {why}" for name, why in skipped.items()]
    return report


def _questions(path: Path, named: list[str] | None, absent: Missing) -> tuple[set[str], dict, dict[str, str]]:
    """(the questions imported, their scales from the options, {question left out: why}) read from settings.json;
    a question --questions names that is not there, or that cannot be scores, refuses the import."""
    file = str(path)
    data, _, _ = read_json(path, SETTINGS_SHAPE)
    listed = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(listed, list) or not listed:
        raise ImportRefused([Problem(file, "", "questions", SETTINGS_SHAPE, short(listed))])
    check = Checker(file)
    chosen: set[str] = set()
    scale_of: dict[str, tuple[float, float]] = {}
    skipped: dict[str, str] = {}
    for n, question in enumerate(listed):
        at = f"question {n + 1} (index {n})"
        if not isinstance(question, dict) or not isinstance(question.get("settings"), dict):
            check.add(at, "settings", "a question {name, settings: {type, ...}}", short(question))
            continue
        name = check.text(question, at, "name")
        kind = question["settings"].get("type", question.get("type"))
        if name is None:
            continue
        if kind not in ("rating", "label_selection"):
            skipped[name] = f"a {kind} question, not a score"
            continue
        options = question["settings"].get("options")
        values = [o.get("value") if isinstance(o, dict) else None for o in options] if isinstance(options, list) else []
        numbers = [_number(v) for v in values if not absent.matches(v)]
        if not values or None in numbers:
            if kind == "rating":
                check.add(f"{at}, {name!r}", "settings.options", "a list of options [{value: number}, ...]",
                          short(options))
            else:
                labels = [v for v, x in zip(values, numbers) if x is None] if values else "none"
                skipped[name] = (f"a label_selection question with labels that are not numbers ({short(labels)}; "
                                 "--missing PATTERN makes such a label no rating)")
            continue
        if numbers:
            scale_of[name] = (min(numbers), max(numbers))
        chosen.add(name)
    check.refuse_if_any()
    if named is not None:
        for name in named:
            if name not in chosen:
                why = skipped.get(name, "no such question")
                raise ImportRefused([Problem(file, "", "--questions", "rating questions, or label_selection "
                                             "questions with numbers as labels", f"{name!r}: {why}")])
        skipped.update({q: "not in --questions" for q in sorted(chosen - set(named))})
        chosen = set(named)
    return chosen, scale_of, skipped


def _stored_texts(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> dict[tuple[str, str], str]:
    """{(item_id, model): the stored response's text} of a track."""
    rows = con.execute("SELECT r.item_id, r.model, r.text FROM responses r JOIN items i USING (dataset, item_id) "
                       "WHERE r.dataset = ? AND i.track = ?", [normalise_id(dataset), normalise_id(track)]).fetchall()
    return {(item, model): text for item, model, text in rows}


def _same_text(check: Checker, record: dict, dotted: str, texts: dict, keys, at: str) -> None:
    """--response-field: the text the annotators saw is the stored response's, character for character; an item
    or model not stored is left to import_ratings, which names it."""
    found, value = field_at(record, dotted)
    if not found or not isinstance(value, str):
        check.add(at, dotted, "the response text named by --response-field", "no such field" if not found else short(value))
        return
    item, model = (normalise_id(str(k)) if isinstance(k, (int, str)) else None for k in keys)
    stored = texts.get((item, model))
    if stored is not None and stored != value:
        check.add(at, dotted, f"the stored response of item {item!r} and model {model!r}, {short(stored)}", short(value))


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return decimal(value) if isinstance(value, str) else None


def _status(check: Checker, response: object, place: str) -> str | None:
    """The response's status: 'submitted' when the export gives none (Record.to_dict writes none)."""
    if not isinstance(response, dict) or "value" not in response:
        check.add(place, "", "a response {value, user_id}", short(response))
        return None
    status = response.get("status", "submitted")
    if status not in STATUSES:
        check.add(place, "status", " or ".join(STATUSES), short(status))
        return None
    return status


def _annotator(check: Checker, user: object, users: dict[str, str] | None, place: str) -> str | None:
    """The user's name in --annotators, else the user_id itself."""
    if not isinstance(user, str) or not user.strip():
        check.add(place, "user_id", "a user id", short(user))
        return None
    if users is None:
        return user
    if user not in users:
        check.add(place, "user_id", "a user_id listed in --annotators", short(user))
        return None
    return users[user]


def _users(path: Path) -> dict[str, str]:
    """--annotators: {user_id: username}, each id and each name once (two ids as one name would merge two people)."""
    table = read_table(path, kinds=("csv",))
    check = Checker(table.file)
    if not check.require_columns(table.columns, ["user_id", "username"]):
        check.refuse_if_any()
    out: dict[str, str] = {}
    named: dict[str, str] = {}
    for rec, where in zip(table.records, table.places):
        user, name = check.text(rec, where, "user_id"), check.ident(rec, where, "username")
        if user is None or name is None:
            continue
        if user in out:
            check.add(where, "user_id", "each user_id once", f"{user!r} again")
        elif name in named:
            check.add(where, "username", "each username once", f"{name!r} again (also user {named[name]!r})")
        out[user], named[name] = name, user
    check.refuse_if_any()
    return out


def _dataset_name(path: Path) -> str:
    """'dataset NAME: ' from dataset.json, or nothing when the export has none."""
    if not path.is_file():
        return ""
    data, _, _ = read_json(path, "Argilla's dataset model: a JSON object {id, name, guidelines, ...}")
    if not isinstance(data, dict):
        raise ImportRefused([Problem(str(path), "", "", "a JSON object {id, name, ...}", f"a JSON {type(data).__name__}")])
    name = data.get("name")
    return f"dataset {name!r}: " if isinstance(name, str) and name.strip() else ""


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    questions = [q.strip() for q in args.questions.split(",") if q.strip()] if args.questions is not None else None
    return import_argilla(con, args.folder, dataset=args.dataset, track=args.track, item_field=args.item_field,
                          model_field=args.model_field, response_field=args.response_field,
                          questions=questions, scales=scales(args.scale),
                          missing=args.missing, annotators=args.annotators)
