"""`import dstc10`: a DSTC10 Track 5 (automatic open-domain dialogue evaluation) turn-level JSON file.

The file is a JSON list of objects, one per rated response: dialogue_id, model (the system that wrote the
response), context (the dialogue history, turns joined by "\\n"), response, reference (a list of strings; may be
missing or empty) and annotations ({dimension: [scores, one per annotator]}). Problems name an entry by its
position, "item 3 (index 2)".

What is stored, in one transaction, into one --track:
- items: one per distinct (dialogue_id, context). The item_id is the dialogue_id when the dialogue has one
  context in the file, else dialogue_id + "-c" + k, k = 1, 2, ... in the order its contexts first appear in the
  file. The context is split on "\\n" with blank lines dropped. An item already stored under that id is reused
  when its track, context and references are the same; otherwise the file is refused.
- item references: the entries' reference lists (entries of one item that give references must agree);
- models and responses, one per item and model;
- dimensions: each one the file rates needs a scale (--scale DIM=MIN:MAX) unless the dataset has it;
- human ratings: annotators a1, a2, ... by position in each list (null: that annotator gave no score; so is a
  text answer matching a --missing pattern, counted per dimension; any other text refuses the file).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb

from evalcore.core import language as detection
from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.ingest import lookup
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.checker import Checker
from evalcore.ingest.formats.items import check_language, settle_languages
from evalcore.ingest.formats.ratings import NOT_A_NUMBER, Missing, resolve_scales, scales, text_answer
from evalcore.ingest.jsonread import read_json
from evalcore.ingest.limits import limit

SHAPE = "a JSON list of objects (DSTC10 turn-level: dialogue_id, model, context, response, reference, annotations)"


def import_dstc10(con: duckdb.DuckDBPyConnection, path: str | Path, *, dataset: str, track: str,
                  language: str | None = None, scales: dict[str, tuple[float, float]] | None = None,
                  shown: str | None = None, missing: list[str] | None = None) -> ImportReport:
    path = Path(path)
    file = str(path)
    absent = Missing.of(file, missing)
    entries, encoding, lines = read_json_list(path, SHAPE)
    check = Checker(file)
    dataset = check.ident({"--dataset": dataset}, "", "--dataset")
    track = check.ident({"--track": track}, "", "--track")
    check.refuse_if_any()
    languages = {dataset: lookup.dataset_language(con, dataset)}
    check_language(check, "", dataset, language, languages)
    check.refuse_if_any()
    known_scales, new_dims = resolve_scales(con, dataset, scales or {}, file)

    parsed = []
    for i, rec in enumerate(entries):
        where = f"line {lines[i]:,}, item {i + 1} (index {i})"
        if not isinstance(rec, dict):
            check.add(where, "", "a JSON object", type(rec).__name__)
            continue
        dialogue_id = check.ident(rec, where, "dialogue_id")
        model = check.ident(rec, where, "model")
        context = check.text(rec, where, "context", allow_empty=True)
        response = check.text(rec, where, "response", allow_empty=True)
        refs = check.string_list(rec, where, "reference", required=False)
        annotations = _annotations(check, rec, where, absent)
        if None in (dialogue_id, model, context, response, refs, annotations):
            continue
        turns = tuple(t for t in context.split("\n") if t.strip())
        parsed.append((where, dialogue_id, model, turns, response, [r for r in refs if r.strip()], annotations))

    # Item ids: the dialogue_id, or dialogue_id-c1, -c2, ... when a dialogue has several contexts.
    contexts: dict[str, dict[tuple, int]] = {}
    for _, dialogue_id, _, turns, *_ in parsed:
        found = contexts.setdefault(dialogue_id, {})
        found.setdefault(turns, len(found) + 1)

    def item_of(dialogue_id: str, turns: tuple) -> str:
        found = contexts[dialogue_id]
        return dialogue_id if len(found) == 1 else f"{dialogue_id}-c{found[turns]}"

    stored_items = stored_item_contents(con, dataset)
    answered = lookup.response_keys(con, dataset, None)
    items: dict[str, dict] = {}     # item_id -> dialogue_id, turns, refs, where (first entry)
    seen: dict[tuple[str, str], str] = {}
    unscaled: set[str] = set()
    skipped = 0
    batch = Batch()
    for where, dialogue_id, model, turns, response, refs, annotations in parsed:
        item_id = item_of(dialogue_id, turns)
        item = items.get(item_id)
        if item is None:
            item = items[item_id] = {"dialogue_id": dialogue_id, "turns": turns, "refs": refs, "where": where}
        elif (item["dialogue_id"], item["turns"]) != (dialogue_id, turns):
            check.add(where, "dialogue_id", f"a dialogue whose item id is not {item_id!r} already (given to "
                      f"dialogue {item['dialogue_id']!r} at {item['where']}); rename one of the dialogues",
                      repr(dialogue_id))
            continue
        elif refs and item["refs"] and refs != item["refs"]:
            check.add(where, "reference", f"the references given for this dialogue context at {item['where']}",
                      short(refs))
            continue
        elif refs and not item["refs"]:
            item["refs"] = refs
        key = (item_id, model)
        if key in seen:
            check.add(where, "model", f"one entry per dialogue context and model (first at {seen[key]})",
                      f"{model!r} again for dialogue {dialogue_id!r}")
            continue
        seen[key] = where
        if key in answered:
            check.add(where, "model", f"a model without a stored response to item {item_id!r} of dataset "
                      f"{dataset!r}", f"{model!r}, already answered")
            continue
        origin = f"{path.name} {where}"
        batch.add("responses", dataset=dataset, item_id=item_id, model=model, text=response, origin=origin)
        for dimension, scores in annotations.items():
            scale = known_scales.get(dimension, (None, None))
            if scale == (None, None):
                if dimension not in unscaled:
                    unscaled.add(dimension)
                    check.add(where, f"annotations.{dimension}", f"a dimension with a known scale (give --scale "
                              f"{dimension}=MIN:MAX)", f"{dimension!r} with no scale")
                continue
            lo, hi = scale
            for k, score in enumerate(scores):
                if score is None:
                    skipped += 1
                    continue
                if isinstance(score, str):   # a text answer matching --missing
                    absent.counts[dimension] += 1
                    continue
                if not lo <= score <= hi:
                    check.add(where, f"annotations.{dimension}[{k}]", f"a score on the {dimension} scale "
                              f"{lo:g}..{hi:g}", f"{score:g}")
                    continue
                batch.add("human_ratings", dataset=dataset, track=track, target="response", item_id=item_id,
                          dialogue_id=None, model=model, annotator=f"a{k + 1}", dimension=dimension, score=score,
                          origin=origin)

    reused = 0
    for item_id, item in items.items():
        if item_id in stored_items:
            if not same_item(check, item["where"], item_id, stored_items[item_id], track, list(item["turns"]),
                             item["refs"]):
                continue
            reused += 1
            continue
        batch.add("items", dataset=dataset, item_id=item_id, track=track, dialogue_id=item["dialogue_id"],
                  context=json.dumps(list(item["turns"]), ensure_ascii=False), grounding=None, skill=None,
                  origin=f"{path.name} {item['where']}")
        for i, ref in enumerate(item["refs"]):
            batch.add("item_references", dataset=dataset, item_id=item_id, ref_index=i, text=ref)
    check.refuse_if_any()
    counts = {dataset: detection.count(t for item in items.values() for t in (*item["turns"], *item["refs"]))}
    language_notes = settle_languages(batch, languages, counts)   # a new dataset without --language: detected
    batch.track(dataset, track)
    for model in sorted({m for _, m in seen}):
        batch.model(model)
    for dim in new_dims:
        lo, hi = known_scales[dim]
        batch.add("dimensions", dataset=dataset, dimension=dim, scale_min=lo, scale_max=hi)
    batch.shown = shown
    report = ImportReport(file, batch.write(con, source=path))
    report.tracks = [track]
    report.notes.append(f"read as {encoding}")
    report.notes += language_notes
    report.notes.append(f"{len(items):,} items from {len(contexts):,} dialogues"
                        + (f" ({reused:,} of them already stored, reused)" if reused else ""))
    if skipped:
        report.notes.append(f"{skipped:,} null scores (no score from that annotator) skipped")
    if absent.note():
        report.notes.append(absent.note())
    report.notes += check.notes()
    return report


def read_json_list(path: Path, shape: str) -> tuple[list, str, list[int]]:
    """The file's JSON list, the encoding it was read in and the line each entry begins on; anything else is
    refused (nesting deeper than limits.MAX_DEPTH included, named by its line)."""
    file = str(path)
    data, encoding, lines = read_json(path, shape)
    if not isinstance(data, list):
        raise ImportRefused([Problem(file, "", "", shape, f"a JSON {type(data).__name__}")])
    if not data:
        raise ImportRefused([Problem(file, "", "", shape, "an empty list")])
    most = limit("MAX_ROWS")
    if len(data) > most:
        raise ImportRefused([Problem(file, f"item {most + 1:,} (index {most:,})", "", f"at most {most:,} entries "
                                     "(EVALCORE_MAX_ROWS)", f"{len(data):,} entries")])
    return data, encoding, lines


def _annotations(check: Checker, rec: dict, where: str, absent: Missing) -> dict[str, list[float | str | None]] | None:
    """{dimension: [score, None or a text answer `absent` matches, per annotator]}, dimension names normalised
    like any identifier."""
    value = rec.get("annotations")
    if not isinstance(value, dict):
        got = "nothing" if value is None else f"{type(value).__name__} {short(value)}"
        check.add(where, "annotations", "an object {dimension: [one score per annotator]}", got)
        return None
    out: dict[str, list[float | str | None]] = {}
    ok = True
    for key, scores in value.items():
        dimension = check.ident({"annotations": key}, where, "annotations")
        if dimension is None:
            ok = False
            continue
        if dimension in out:
            check.add(where, f"annotations.{key}", "each dimension once", f"{dimension!r} again")
            ok = False
            continue
        if not isinstance(scores, list):
            check.add(where, f"annotations.{key}", "a list of scores, one per annotator",
                      f"{type(scores).__name__} {short(scores)}")
            ok = False
            continue
        out[dimension] = []
        for k, score in enumerate(scores):
            if absent.matches(score):
                out[dimension].append(score.strip())
                continue
            if text_answer(score):
                check.add(where, f"annotations.{key}[{k}]", NOT_A_NUMBER, short(score))
                ok = False
                continue
            good = score is None or (isinstance(score, (int, float)) and not isinstance(score, bool)
                                     and math.isfinite(score))
            if not good:
                check.add(where, f"annotations.{key}[{k}]", "a number (or null: no score)", short(score))
                ok = False
                continue
            out[dimension].append(None if score is None else float(score))
    return out if ok else None


def stored_item_contents(con: duckdb.DuckDBPyConnection, dataset: str) -> dict[str, tuple[str, list, list]]:
    """item_id -> (track, context turns, references) of a dataset's stored items."""
    refs: dict[str, list[str]] = {}
    for item_id, text in con.execute("SELECT item_id, text FROM item_references WHERE dataset = ? "
                                     "ORDER BY item_id, ref_index", [dataset]).fetchall():
        refs.setdefault(item_id, []).append(text)
    return {item_id: (track, json.loads(context), refs.get(item_id, []))
            for item_id, track, context in con.execute(
                "SELECT item_id, track, context FROM items WHERE dataset = ?", [dataset]).fetchall()}


def same_item(check: Checker, where: str, item_id: str, stored: tuple[str, list, list], track: str,
              context: list[str], refs: list[str]) -> bool:
    """Whether a stored item is the one a file describes (then it is reused); a problem in `check` if not.
    References the file does not give are not a difference."""
    stored_track, stored_context, stored_refs = stored
    if stored_track != track:
        check.add(where, "item", f"item {item_id!r} as stored: in track {stored_track!r}", f"track {track!r}")
    elif stored_context != context:
        check.add(where, "context", f"the context of item {item_id!r} as stored ({len(stored_context)} turns, "
                  f"ending {short(stored_context[-1:])})", f"{len(context)} turns, ending {short(context[-1:])}")
    elif refs and stored_refs != refs:
        check.add(where, "reference", f"the references of item {item_id!r} as stored: {short(stored_refs)}",
                  short(refs))
    else:
        return True
    return False


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_dstc10(con, args.file, dataset=args.dataset, track=args.track, language=args.language,
                         scales=scales(args.scale), missing=args.missing)
