"""`import items`: JSONL, one item per line."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb

from evalcore.core import language as detection
from evalcore.core.errors import short
from evalcore.core.malloc import give_back
from evalcore.ingest import lookup
from evalcore.ingest.batch import SKILLS, Batch, ImportReport
from evalcore.ingest.checker import Checker
from evalcore.ingest.readers import stream_jsonl
from evalcore.store import transaction

GROUNDING_KEYS = ("knowledge", "persona", "goal")
FIELDS = ("item_id", "dataset", "track", "dialogue_id", "context", "references", "grounding", "skill", "language")


STREAM_ROWS = 50_000   # items checked before they are written (inside the import's one transaction)
COUNT_EVERY = 20_000   # texts gathered before their letters are counted (language detection)


def import_items(con: duckdb.DuckDBPyConnection, path: str | Path) -> ImportReport:
    """Items of a JSONL file, read as a stream and written every STREAM_ROWS items inside one transaction
    that a refusal rolls back whole: a million items never sit in memory at once."""
    file = str(path)
    check = Checker(file)
    batch = Batch()
    seen: dict[tuple[str, str], int] = {}   # (dataset, item_id) -> line number
    known: dict[str, dict[str, str]] = {}
    languages: dict[str, tuple[str | None, str]] = {}  # dataset -> (language, where it was set)
    texts: dict[str, list[str]] = {}  # dataset -> contexts and references not yet counted (language detection)
    counts: dict[str, detection.Counts] = {}
    with stream_jsonl(path) as (encoding, records), transaction(con):
        for rec, lineno in records:
            where = f"line {lineno}"
            unknown = [k for k in rec if k not in FIELDS]
            if unknown:
                check.add(where, unknown[0], "one of the fields " + ", ".join(FIELDS), "an unknown field")
            item_id = check.ident(rec, where, "item_id")
            dataset = check.ident(rec, where, "dataset")
            track = check.ident(rec, where, "track")
            context = check.string_list(rec, where, "context")
            references = check.string_list(rec, where, "references")
            dialogue_id = check.ident(rec, where, "dialogue_id", required=False)
            grounding = _grounding(check, rec, where)
            skill = rec.get("skill")
            if skill is not None and skill not in SKILLS:
                check.add(where, "skill", "one of " + ", ".join(SKILLS), short(skill))
            language = check.ident(rec, where, "language", required=False)
            if None in (item_id, dataset, track, context, references):
                continue
            if dataset not in languages:
                languages[dataset] = lookup.dataset_language(con, dataset)
            check_language(check, where, dataset, language, languages)
            key = (dataset, item_id)
            if key in seen:
                check.add(where, "item_id", "each item_id once per dataset",
                          f"{item_id!r} again (first at line {seen[key]})")
                continue
            seen[key] = lineno
            if languages[dataset] == (None, "new"):   # its texts say its language, unless a record does
                bucket = texts.setdefault(dataset, [])
                bucket.extend((*context, *references))
                if len(bucket) >= COUNT_EVERY:
                    counts[dataset] = counts.get(dataset, detection.Counts()) + detection.count(bucket)
                    bucket.clear()
            if dataset not in known:
                known[dataset] = lookup.item_tracks(con, dataset)
            if item_id in known[dataset]:
                check.add(where, "item_id", f"an item_id not yet in dataset {dataset!r}", f"{item_id!r}, already stored")
                continue
            batch.track(dataset, track, skill=skill)
            batch.add("items", dataset=dataset, item_id=item_id, track=track, dialogue_id=dialogue_id,
                      context=json.dumps(context, ensure_ascii=False),
                      grounding=json.dumps(grounding, ensure_ascii=False) if grounding else None,
                      skill=skill, origin=f"{Path(file).name} {where}")
            for i, ref in enumerate(references):
                batch.add("item_references", dataset=dataset, item_id=item_id, ref_index=i, text=ref)
            if batch.pending("items") >= STREAM_ROWS and not check.problems:
                batch.flush(con)   # a refusal later rolls these back with the rest
                give_back()   # the CLI's raised trim threshold would keep each written slice's memory
        for dataset, bucket in texts.items():
            counts[dataset] = counts.get(dataset, detection.Counts()) + detection.count(bucket)
        notes = settle_languages(batch, languages, {d: c for d, c in counts.items() if languages[d] == (None, "new")})
        check.refuse_if_any()
        report = ImportReport(file, batch.write_in(con, source=file))
    report.notes.append(f"read as {encoding}")
    report.notes += notes
    report.notes += check.notes()
    return report


def settle_languages(batch: Batch, languages: dict[str, tuple[str | None, str]],
                     counts: dict[str, detection.Counts]) -> list[str]:
    """Add each dataset's row, once, with the language its records settled on; a new dataset whose records
    name none gets the one its texts show (evalcore.core.language.detect on the contexts and references it
    imports), recorded as detected. The report's notes about detected languages."""
    notes = []
    for dataset, (language, origin) in languages.items():
        if language is not None or origin != "new":
            # declared by a record, or a stored dataset (its row stands: batch rows for datasets are only inserted new)
            batch.dataset(dataset, language=language, language_source="declared" if language is not None else None)
            continue
        found = detection.decide(counts.get(dataset, detection.Counts()))
        batch.dataset(dataset, language=found, language_source="detected" if found is not None else None)
        note = detection.note(found)
        notes.append(note if len(languages) == 1 else f"{note} (dataset {dataset!r})")
    return notes


def check_language(check: Checker, where: str, dataset: str, language: str | None,
                    languages: dict[str, tuple[str | None, str]]) -> None:
    """A dataset has one language (it picks METEOR's mode and the default tokenizer), set when the
    dataset is first imported: by the first record that names one. A record that says otherwise is
    refused, and so is a language for a dataset already stored (its scores were made under the old)."""
    known, origin = languages[dataset]
    if language is None or language == known:
        return
    if known is None and origin == "new":
        languages[dataset] = (language, where)
        return
    said = f"{known!r}, as set by {origin}" if known is not None else "no language, as stored"
    check.add(where, "language", f"the language of dataset {dataset!r}: {said}", language)


def _grounding(check: Checker, rec: dict, where: str) -> dict | None:
    value = rec.get("grounding")
    if value is None:
        return None
    if not isinstance(value, dict):
        check.add(where, "grounding", "an object with keys " + ", ".join(GROUNDING_KEYS), type(value).__name__)
        return None
    bad = [k for k in value if k not in GROUNDING_KEYS]
    if bad:
        check.add(where, f"grounding.{bad[0]}", "one of the keys " + ", ".join(GROUNDING_KEYS), "an unknown key")
        return None
    if not check.texts_within(value, where, "grounding"):   # every string in it, as any text field
        return None
    return value


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_items(con, args.file)
