"""`import lm-eval`: the per-sample log of EleutherAI's lm-evaluation-harness (`--log_samples`), the file it writes
as samples_<task>_<date>.jsonl: one JSON object per document and filter, with doc_id, doc (the task's document),
target, arguments, resps, filtered_resps (the responses after the task's filter, as strings), filter, metrics (the
names of the per-sample metric fields) and one field per metric (lm_eval/evaluator.py and
lm_eval/loggers/evaluation_tracker.py, save_results_samples).

What is stored, in one transaction, for one --model:
- the item of each sample is found by --doc-id, a dotted path in the sample ('doc.id', or 'doc_id': the document's
  position in the task's split). It must be an item of --track, unless --doc-context names the field whose text
  (one string, or a list of turns) is the context: then a missing item is created in --track, with the target as
  its reference; an item already stored is reused when its track and context are the same.
- the response: the sample's filtered response, which must be one text (a generative task; a multiple-choice
  task's filtered responses are log-likelihoods, not text, and are refused). When the file holds several filters,
  --filter picks one.
- each per-sample metric (--metrics, default: every one whose values are numbers) as the external metric
  `lm-eval:<metric>` (evalcore.ingest.formats.scores), higher is better, its signature naming the task and filter.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb

from evalcore.core import language as detection
from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.ingest import lookup
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.checker import Checker
from evalcore.ingest.formats.dstc10 import same_item, stored_item_contents
from evalcore.ingest.formats.items import check_language, settle_languages
from evalcore.ingest.formats.scores import ExternalValue, external_batch
from evalcore.ingest.readers import read_table

PREFIX = "lm-eval:"
_FILE_NAME = re.compile(r"samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d\-.]+)")


def field_at(rec: dict, path: str) -> tuple[bool, object]:
    """(found, value) of a dotted path ('doc.meta.id') in a sample."""
    value: object = rec
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def entry_at(check: Checker, at: str, entry, what: str) -> str | None:
    """Where an entry of a JSON list is (`at`, with its id when it has one), or None when it is not an object
    (added to `check`): a Label Studio task, an Argilla record."""
    if not isinstance(entry, dict):
        check.add(at, "", f"a {what} object", type(entry).__name__)
        return None
    return at + (f", id {short(entry['id'])}" if isinstance(entry.get("id"), (int, str)) else "")


def key_fields(check: Checker, rec: dict, at: str, what: str, item_field: str, model_field: str) -> dict[str, object]:
    """The values of the fields --item-field and --model-field name in `rec` (a task, a record: `what`), each
    missing one added to `check` at `at`."""
    keys = {}
    for option, dotted in (("--item-field", item_field), ("--model-field", model_field)):
        found, value = field_at(rec, dotted)
        if not found or value is None:
            check.add(at, dotted, f"the {what} field named by {option}", "no such field")
        keys[option] = value
    return keys


def metric_names(check: Checker, given: str | None) -> list[str] | None:
    """--metrics m1,m2 as names (None: every numeric one)."""
    if given is None:
        return None
    names = [check.option("--metrics", m, what="metric name") for m in given.split(",") if m.strip()]
    if not names:
        raise ImportRefused([Problem(check.file, "", "--metrics", "comma-separated metric names", short(given))])
    return list(dict.fromkeys(names))


def import_lmeval(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str, model: str,
                  doc_id: str, doc_context: str | None = None, metrics: str | None = None,
                  filter_name: str | None = None, language: str | None = None,
                  shown: str | None = None, prefix: str = PREFIX, signature: str | None = None) -> ImportReport:
    """`prefix` and `signature`: how the per-sample metrics are named and signed (another tool's samples written in
    this shape: evalcore.ingest.formats.inspectlog)."""
    table = read_table(path, kinds=("jsonl",))
    file = table.file
    check = Checker(file)
    dataset, track, model = (check.option(o, v) for o, v in (("--dataset", dataset), ("--track", track),
                                                                ("--model", model)))
    wanted = metric_names(check, metrics)
    languages = {dataset: lookup.dataset_language(con, dataset)}
    check_language(check, "", dataset, language, languages)
    check.refuse_if_any()
    filters = sorted({str(rec.get("filter")) for rec in table.records})
    if filter_name is None and len(filters) > 1:
        raise ImportRefused([Problem(file, "", "--filter", "one of the file's filters: " + ", ".join(filters),
                                     "none given")])
    filter_name = filter_name if filter_name is not None else filters[0]
    if filter_name not in filters:
        raise ImportRefused([Problem(file, "", "--filter", "one of the file's filters: " + ", ".join(filters),
                                     repr(filter_name))])
    item_track = lookup.item_tracks(con, dataset)
    stored = stored_item_contents(con, dataset) if doc_context else {}
    answered = lookup.response_keys(con, dataset, None)
    if not doc_context and track not in lookup.tracks_of(con, dataset):
        raise ImportRefused([Problem(file, "", "--track", f"a track of dataset {dataset!r} (or give --doc-context "
                                     "to create its items)", repr(track))])

    samples = []   # (where, item_id, response, context, target, {metric: value})
    seen: dict[str, str] = {}
    numeric: dict[str, bool] = {}    # metric -> every value so far a number
    for rec, where in zip(table.records, table.places):
        if str(rec.get("filter")) != filter_name:
            continue
        found, value = field_at(rec, doc_id)
        item_id = check.ident({doc_id: value}, where, doc_id) if found else None
        if not found:
            check.add(where, doc_id, "the --doc-id field in every sample", "no such field")
        response = _response(check, rec, where)
        context = _context(check, rec, where, doc_context) if doc_context else None
        target = check.text({"target": rec.get("target")}, where, "target", required=False, allow_empty=True)
        names = rec.get("metrics")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            check.add(where, "metrics", "a list of the sample's metric names", short(names))
            continue
        values = {}
        for name in names if wanted is None else wanted:
            if name not in rec or (wanted is not None and name not in names):
                check.add(where, name, "a per-sample metric field named by --metrics", "no such metric")
                continue
            v = rec[name]
            is_number = isinstance(v, (int, float)) and not isinstance(v, bool)
            if wanted is None and not is_number:   # a corpus-level metric's parts (BLEU's pairs): not per sample
                numeric[name] = False
                continue
            numeric.setdefault(name, True)
            values[name] = check.number(rec, where, name)
        if None in (item_id, response) or (doc_context and context is None) or None in values.values():
            continue
        if item_id in seen:
            check.add(where, doc_id, f"one sample per item for filter {filter_name!r} (first at {seen[item_id]})",
                      repr(item_id))
            continue
        seen[item_id] = where
        samples.append((where, item_id, response, context, target, values))
    check.refuse_if_any()

    batch = Batch()
    texts: dict[tuple[str, str], str] = {}
    pending: dict[str, str] = {}
    created = reused = 0
    for where, item_id, response, context, target, _ in samples:
        if item_id in item_track:
            if item_track[item_id] != track:
                check.add(where, doc_id, f"an item of track {track!r}", f"{item_id!r}, in track {item_track[item_id]!r}")
                continue
            if doc_context:
                if not same_item(check, where, item_id, stored[item_id], track, context, []):
                    continue
                reused += 1
        elif not doc_context:
            check.add(where, doc_id, f"an item of track {track!r} (or give --doc-context to create it)",
                      f"{item_id!r}, unknown")
            continue
        else:
            created += 1
            pending[item_id] = track
            batch.add("items", dataset=dataset, item_id=item_id, track=track, dialogue_id=None,
                      context=json.dumps(context, ensure_ascii=False), grounding=None, skill=None,
                      origin=f"{Path(file).name} {where}")
            if target and target.strip():
                batch.add("item_references", dataset=dataset, item_id=item_id, ref_index=0, text=target)
        if (item_id, model) in answered:
            check.add(where, doc_id, f"an item model {model!r} has not answered in dataset {dataset!r}",
                      f"{item_id!r}, already answered")
            continue
        texts[item_id, model] = response
        batch.add("responses", dataset=dataset, item_id=item_id, model=model, text=response,
                  origin=f"{Path(file).name} {where}")
    check.refuse_if_any()

    task = _FILE_NAME.fullmatch(Path(shown or file).stem)
    notes: list[str] = []
    for name in sorted(n for n, ok in numeric.items() if ok):
        values = [ExternalValue(item_id, model, vals[name], where)
                  for where, item_id, _, _, _, vals in samples if name in vals]
        signed = signature or (f"lm-evaluation-harness --log_samples; task {task['task'] if task else 'unnamed'}; "
                               f"filter {filter_name}")
        metric_rows, metric_notes = external_batch(
            con, check, values, dataset=dataset, metric=prefix + name, track=track, higher_is_better=True,
            signature=signed, source=f"import {prefix.rstrip(':')} {Path(shown or file).name}",
            pending_tracks=pending, pending_texts=texts)
        for table_name, rows in metric_rows.rows.items():
            batch.rows[table_name].extend(rows)
        notes += metric_notes
    kept = sorted(prefix + n for n, ok in numeric.items() if ok)
    notes.append("per-sample values stored as " + (", ".join(kept) if kept else "no metric"))
    skipped = sorted(n for n, ok in numeric.items() if not ok)
    if skipped:
        notes.append("not per-sample numbers, left out (corpus-level metrics): " + ", ".join(skipped))
    counts = {dataset: detection.count(t for row in batch.rows.get("items", []) for t in json.loads(row["context"]))}
    notes += settle_languages(batch, languages, counts)
    batch.track(dataset, track)
    batch.model(model)
    batch.shown = shown
    report = ImportReport(file, batch.write(con, source=file))
    report.tracks = [track]
    report.notes.append(f"read as {table.encoding}; filter {filter_name!r}; {len(samples):,} samples: "
                        f"{created:,} items created, {reused:,} reused, {len(samples) - created - reused:,} found")
    report.notes += check.notes() + notes
    return report


def _response(check: Checker, rec: dict, where: str) -> str | None:
    """The sample's one filtered response text."""
    value = rec.get("filtered_resps")
    if not (isinstance(value, list) and len(value) == 1 and isinstance(value[0], str)):
        check.add(where, "filtered_resps", "one filtered response text (a generative task's sample; "
                  "multiple-choice log-likelihoods are not responses)", short(value))
        return None
    return check.text({"filtered_resps[0]": value[0]}, where, "filtered_resps[0]", allow_empty=True)


def _context(check: Checker, rec: dict, where: str, path: str) -> list[str] | None:
    """The --doc-context field as turns: a string is one turn, a list of strings is the turns."""
    found, value = field_at(rec, path)
    if isinstance(value, str):
        turn = check.text({path: value}, where, path)
        return None if turn is None else [turn]
    if found and isinstance(value, list) and value:
        turns = check.string_list({path: value}, where, path)
        return turns
    check.add(where, path, "the --doc-context field: a text, or a list of turns", "nothing" if not found else short(value))
    return None


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_lmeval(con, args.file, dataset=args.dataset, track=args.track, model=args.model,
                         doc_id=args.doc_id, doc_context=args.doc_context, metrics=args.metrics,
                         filter_name=args.filter, language=args.language)
