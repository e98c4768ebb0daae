"""`import eee`: a folder of Every Eval Ever files (github evaleval/every_eval_ever, schemas 0.3.0): aggregate
results `<uuid>.json`, each with its instance-level `<uuid>_samples.jsonl` in the same folder, anywhere under the
folder (the datastore's data/<benchmark>/<developer>/<model>/ layout, or flat).

What is stored, all in one transaction, the folder refused whole (naming file, line and field) on any problem:
- items, when not stored: one per sample_id, in the track given (--track) or named by the record's
  evaluation_name; the context is metadata.evalcore_context (a JSON list of turns, as `export eee` writes it) or
  else input.raw as one turn, the references input.reference, the grounding metadata.evalcore_grounding, the
  dialogue metadata.evalcore_dialogue_id. A stored
  item is reused when its track, context and references are the same.
- responses: output.raw[0] of a sample for the aggregate's model (model_info.id); a stored response with the
  same text is reused, one with another text refuses the folder.
- values: each metric (an evaluation result whose metric_config.additional_details.evalcore_kind is not
  'human rating') becomes the external metric "EEE:<metric_id>" (`import scores`' mechanism), its per-response
  values the records' evaluation.score, its system value the aggregate's score_details.score (under the
  sentence-mean aggregate: the mean of the per-response values), its direction metric_config.lower_is_better, its
  signature text the evalcore signature the file carries (else the metric's name).
- human ratings: an evaluation result of kind 'human rating' becomes the dimension metric_id (scale min_score..
  max_score), each annotator's rating read from metadata.evalcore_ratings ({annotator: score}); a record without
  it stores its score under annotator "EEE".
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import duckdb

from evalcore.core import language as detection
from evalcore.core.errors import ImportRefused, Problem, short
from evalcore.core.text import identity_key
from evalcore.ingest import lookup
from evalcore.ingest.batch import Batch, ImportReport
from evalcore.ingest.checker import Checker
from evalcore.ingest.formats.dstc10 import same_item, stored_item_contents
from evalcore.ingest.formats.items import settle_languages
from evalcore.ingest.formats.scores import ExternalValue, external_batch
from evalcore.ingest.jsonread import read_json
from evalcore.ingest.readers import stream_jsonl
from evalcore.scoring import SENTENCE_MEAN

SCHEMA_VERSION = "0.3.0"           # the schemas' "version" (package every-eval-ever 0.2.x)
KIND, METRIC_KIND, HUMAN_KIND = "evalcore_kind", "metric", "human rating"
SIGNATURE = "evalcore_signature"   # metric_config.additional_details key (and instance metadata key)
META = {"context": "evalcore_context", "grounding": "evalcore_grounding", "dialogue": "evalcore_dialogue_id",
        "metric": "evalcore_metric", "ratings": "evalcore_ratings"}
PREFIX = "EEE:"                    # an imported metric's name: PREFIX + metric_id
ANNOTATOR = "EEE"                  # who rated, when a human result's record names no annotators
LAYOUT = "a folder of Every Eval Ever files: <uuid>.json aggregates, each with <uuid>_samples.jsonl beside it"


def import_eee(con: duckdb.DuckDBPyConnection, folder: str | Path, *, dataset: str, track: str | None = None,
               shown: str | None = None) -> ImportReport:
    folder = Path(folder)
    name = str(folder)
    if not folder.is_dir():
        raise ImportRefused([Problem(name, "", "", LAYOUT, "not a folder")])
    aggregates = sorted(p for p in folder.rglob("*.json") if p.is_file())
    if not aggregates:
        raise ImportRefused([Problem(name, "", "", LAYOUT, "no *.json file")])
    check = Checker(name)
    dataset = check.option("--dataset", dataset)
    track = check.option("--track", track)
    languages = {dataset: lookup.dataset_language(con, dataset)}

    parsed = [_aggregate(check, path) for path in aggregates]
    check.refuse_if_any()
    stored_items = stored_item_contents(con, dataset)
    stored_texts = {(i, m): t for i, m, t in con.execute(
        "SELECT item_id, model, text FROM responses WHERE dataset = ?", [dataset]).fetchall()}
    read = _Samples(check, track, stored_texts)
    for agg in parsed:
        if agg is not None:
            read.file(agg)
    check.refuse_if_any()

    batch = Batch()
    reused = 0
    items = read.items
    for item_id, (tr, dialogue, context, refs, grounding, where) in sorted(items.items()):
        batch.track(dataset, tr)
        if item_id in stored_items:
            reused += same_item(check, where, item_id, stored_items[item_id], tr, context, refs)
            continue
        batch.add("items", dataset=dataset, item_id=item_id, track=tr, dialogue_id=dialogue, context=json.dumps(
            context, ensure_ascii=False), grounding=grounding, skill=None, origin=where)
        for i, ref in enumerate(refs):
            batch.add("item_references", dataset=dataset, item_id=item_id, ref_index=i, text=ref)
    new_texts = {}
    for model in sorted({m for _, m in read.texts}):
        batch.model(model)
    for (item_id, model), (text, where) in sorted(read.texts.items()):
        if (item_id, model) in stored_texts:
            continue
        new_texts[item_id, model] = text
        batch.add("responses", dataset=dataset, item_id=item_id, model=model, text=text, origin=where)
    _add_ratings(con, check, batch, dataset, read.ratings, read.scales)
    check.refuse_if_any()
    tracks = {i: t[0] for i, t in items.items()}
    notes: list[str] = []
    source = f"import eee {Path(shown or folder).name}"
    for metric, values in sorted(read.values.items()):
        check.file = name
        info = read.metrics[metric]
        part, more = external_batch(con, check, values, dataset=dataset, metric=metric, track=None,
                                    higher_is_better=not info["lower"], signature="; ".join(sorted(info["sigs"])),
                                    source=source, pending_tracks=tracks, pending_texts=new_texts)
        for row in part.rows.get("external_metrics", []):
            row["description"] = f"{metric[len(PREFIX):]}, read from Every Eval Ever files"
        for row in part.rows.get("system_scores", []):
            # the file's system value (BLEU's corpus value is no mean of sentence values); sentence-mean: the mean
            reported = read.system.get((metric, row["track"], row["model"]))
            if reported is not None and not row["signature"].endswith(SENTENCE_MEAN):
                row["value"] = reported
        for table_name, rows in part.rows.items():
            batch.rows[table_name].extend(rows)
        notes += more
    counts = {dataset: detection.count([*(t for row in batch.rows.get("items", []) for t in json.loads(row["context"])),
                                        *(row["text"] for row in batch.rows.get("item_references", []))])}
    notes += settle_languages(batch, languages, counts)
    batch.shown = shown
    report = ImportReport(name, batch.write(con, source=folder))
    report.tracks = sorted(set(tracks.values()))
    report.notes.append(f"{len(parsed):,} aggregate file(s), {len(items):,} samples"
                        + (f" ({reused:,} of them stored already, reused)" if reused else ""))
    report.notes += check.notes() + notes
    return report


class _Samples:
    """What the instance-level files hold, gathered record by record: items, responses, metric values and
    ratings, each checked against what came before (and the store's responses)."""

    def __init__(self, check: Checker, track: str | None, stored_texts: dict):
        self.check, self.track, self.stored_texts = check, track, stored_texts
        self.items: dict[str, tuple] = {}    # item_id -> (track, dialogue_id, context, refs, grounding, where)
        self.texts: dict[tuple[str, str], tuple[str, str]] = {}   # (item_id, model) -> (text, where)
        self.values: dict[str, list[ExternalValue]] = defaultdict(list)   # metric name -> values
        self.metrics: dict[str, dict] = {}   # metric name -> lower, signatures, where
        self.ratings: dict[tuple, tuple] = {}   # (track, item, model, annotator, dimension) -> score, file, where
        self.scales: dict[str, tuple] = {}
        self.system: dict[tuple, float | None] = {}   # (metric, track, model) -> the aggregate's score

    def file(self, agg: dict) -> None:
        file = str(agg["samples"])
        with stream_jsonl(agg["samples"]) as (_, records):   # a record is let go once read
            self.check.file = file
            for rec, lineno in records:
                self.record(agg, rec, file, f"line {lineno}")

    def record(self, agg: dict, rec: dict, file: str, where: str) -> None:
        check = self.check
        sample = _sample(check, rec, where, agg, self.track)
        if sample is None:
            return
        item_id, tr, dialogue, context, refs, grounding, text, result, score, meta = sample
        first = self.items.setdefault(item_id, (tr, dialogue, context, refs, grounding, f"{file} {where}"))
        if first[:5] != (tr, dialogue, context, refs, grounding):
            check.add(where, "input", f"sample {item_id!r} as first given ({first[5]}): the same track, dialogue, "
                      "context, references and grounding", f"track {tr!r}, {len(context)} turn(s)")
            return
        model = agg["model"]
        seen = self.texts.setdefault((item_id, model), (text, f"{file} {where}"))
        if seen[0] != text:
            check.add(where, "output.raw", f"the response of model {model!r} to {item_id!r} as first given "
                      f"({seen[1]})", short(text))
            return
        if self.stored_texts.get((item_id, model), text) != text:
            check.add(where, "output.raw", f"the stored response of model {model!r} to {item_id!r} "
                      f"({short(self.stored_texts[item_id, model])})", short(text))
            return
        if result["kind"] == HUMAN_KIND:
            self.scales.setdefault(result["metric"], result["scale"])
            for who, value in _ratings(check, meta, where, score).items():
                key = (tr, item_id, model, who, result["metric"])
                if key in self.ratings:
                    check.add(where, f"metadata.{META['ratings']}", f"one rating per annotator (first at "
                              f"{self.ratings[key][2]})", repr(who))
                self.ratings[key] = (value, file, where)
            return
        metric = PREFIX + result["metric"]
        info = self.metrics.setdefault(metric, {"lower": result["lower"], "sigs": set(), "where": file})
        if info["lower"] != result["lower"]:
            check.add(where, "evaluation_result_id", f"metric {result['metric']!r} in one direction (lower_is_better "
                      f"{info['lower']} in {info['where']})", f"lower_is_better {result['lower']}")
            return
        info["sigs"].add(result["signature"])
        key = (metric, tr, model)   # two results merged into one track (--track) have no one system value
        self.system[key] = result["score"] if self.system.get(key, result["score"]) == result["score"] else None
        self.values[metric].append(ExternalValue(item_id, model, score, f"{Path(file).name} {where}"))


def _aggregate(check: Checker, path: Path) -> dict | None:
    """An aggregate file's model, evaluation_id, instance file and evaluation results by id; None (problems
    added) when it cannot be read."""
    data, _, _ = read_json(path, "an Every Eval Ever aggregate object")
    check.file = str(path)
    if not isinstance(data, dict):
        check.add("", "", "a JSON object (an Every Eval Ever aggregate)", f"a JSON {type(data).__name__}")
        return None
    evaluation_id = check.text(data, "", "evaluation_id")
    info = data.get("model_info")
    model = None
    if isinstance(info, dict):   # the id, not the display name: two developers' "7B" stay two models
        model = check.ident({"model_info.id": info.get("id")}, "", "model_info.id")
    else:
        check.add("", "model_info", "an object with the model's id", short(info))
    raw = data.get("evaluation_results")
    if not isinstance(raw, list) or not raw:
        check.add("", "evaluation_results", "a non-empty list", short(raw))
        raw = []
    results = {}
    for k, res in enumerate(raw):
        at = f"evaluation_results[{k}]"
        result = _result(check, res, at)
        if result is not None:
            results[result["id"]] = result
    detailed = data.get("detailed_evaluation_results")
    file_path = detailed.get("file_path") if isinstance(detailed, dict) else None
    samples = path.with_name(Path(file_path).name if isinstance(file_path, str) else f"{path.stem}_samples.jsonl")
    if not samples.is_file():
        check.add("", "detailed_evaluation_results.file_path", f"an instance-level file beside it ({samples.name}): "
                  "responses and their values are read from it", "no such file")
        return None
    if None in (evaluation_id, model) or len(results) < len(raw):
        return None
    return {"model": model, "evaluation_id": evaluation_id, "results": results, "samples": samples}


def _result(check: Checker, res: object, at: str) -> dict | None:
    if not isinstance(res, dict):
        check.add("", at, "an object", short(res))
        return None
    config = res.get("metric_config")
    if not isinstance(config, dict):
        check.add("", f"{at}.metric_config", "an object", "nothing" if config is None else short(config))
        return None
    track = check.ident({f"{at}.evaluation_name": res.get("evaluation_name")}, "", f"{at}.evaluation_name")
    metric_id = config.get("metric_id", config.get("metric_name", res.get("evaluation_name")))
    metric = check.ident({f"{at}.metric_config.metric_id": metric_id}, "", f"{at}.metric_config.metric_id")
    lower = config.get("lower_is_better")
    if not isinstance(lower, bool):
        check.add("", f"{at}.metric_config.lower_is_better", "true or false", short(lower))
    details = config.get("additional_details") if isinstance(config.get("additional_details"), dict) else {}
    rid = res.get("evaluation_result_id", res.get("evaluation_name"))
    rid = check.text({f"{at}.evaluation_result_id": rid}, "", f"{at}.evaluation_result_id")
    given = res.get("score_details") if isinstance(res.get("score_details"), dict) else {}
    key, score = f"{at}.score_details.score", None
    if isinstance(given.get("score"), str):   # the schema's score is a JSON number, never text
        check.add("", key, "a JSON number", short(given["score"]))
    else:
        score = check.number({key: given.get("score")}, "", key)
    if None in (track, metric, rid, score) or not isinstance(lower, bool):
        return None
    scale = tuple(v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
                  for v in (config.get("min_score"), config.get("max_score")))
    return {"id": rid, "track": track, "metric": metric, "lower": lower, "score": score,
            "kind": details.get(KIND, METRIC_KIND),
            "signature": str(details.get(SIGNATURE) or f"{metric} (Every Eval Ever)"), "scale": scale}


def _sample(check: Checker, rec: dict, where: str, agg: dict, track: str | None):
    """(item_id, track, dialogue_id, context, references, grounding JSON, response, result, score, metadata) of one instance
    record; None (problems added) when it is not sound."""
    bad = len(check.problems)
    evaluation_id = check.text(rec, where, "evaluation_id")
    if evaluation_id is not None and evaluation_id != agg["evaluation_id"]:
        check.add(where, "evaluation_id", f"its aggregate's evaluation_id {agg['evaluation_id']!r}", short(evaluation_id))
    model_id = check.ident(rec, where, "model_id")
    if model_id is not None and model_id != agg["model"]:
        check.add(where, "model_id", f"its aggregate's model_info.id {agg['model']!r}", short(model_id))
    item_id = check.ident(rec, where, "sample_id")
    rid = check.text(rec, where, "evaluation_result_id" if "evaluation_result_id" in rec else "evaluation_name")
    result = agg["results"].get(rid)
    if rid is not None and result is None:
        check.add(where, "evaluation_result_id", "the id of one of its aggregate's evaluation results", short(rid))
    inp = rec.get("input") if isinstance(rec.get("input"), dict) else {}
    if "input" not in rec or not isinstance(rec.get("input"), dict):
        check.add(where, "input", "an object with raw and reference", short(rec.get("input")))
    raw = check.text({"input.raw": inp.get("raw")}, where, "input.raw", allow_empty=True) if inp else None
    refs = check.string_list({"input.reference": inp.get("reference")}, where, "input.reference") if inp else None
    out = rec.get("output")
    texts = check.string_list({"output.raw": out.get("raw")}, where, "output.raw") if isinstance(out, dict) else None
    if not isinstance(out, dict):
        check.add(where, "output", "an object with raw (the response)", short(out))
    elif texts is not None and len(texts) != 1:
        check.add(where, "output.raw", "a list of one response", f"{len(texts)} strings")
    ev = rec.get("evaluation")
    score = None
    if not isinstance(ev, dict):
        check.add(where, "evaluation", "an object with score", short(ev))
    elif isinstance(ev.get("score"), str):   # the schema's score is a JSON number, never text
        check.add(where, "evaluation.score", "a JSON number", short(ev["score"]))
    else:
        score = check.number({"evaluation.score": ev.get("score")}, where, "evaluation.score")
    meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
    dialogue = check.ident({f"metadata.{META['dialogue']}": meta.get(META["dialogue"])}, where,
                           f"metadata.{META['dialogue']}", required=False)
    context = _json_field(check, meta, where, META["context"], list)
    grounding = _json_field(check, meta, where, META["grounding"], dict)
    if len(check.problems) > bad:
        return None
    if context is None:
        context = [raw] if raw else []
    elif not all(isinstance(t, str) for t in context):
        check.add(where, f"metadata.{META['context']}", "a JSON list of strings", short(context))
        return None
    grounding_json = None if grounding is None else json.dumps(grounding, ensure_ascii=False)
    return (item_id, track or result["track"], dialogue, context, refs, grounding_json, texts[0], result, score, meta)


def _json_field(check: Checker, meta: dict, where: str, key: str, kind: type):
    if key not in meta:
        return None
    try:
        value = json.loads(meta[key]) if isinstance(meta[key], str) else None
    except ValueError:
        value = None
    if not isinstance(value, kind):
        check.add(where, f"metadata.{key}", f"a JSON {'list' if kind is list else 'object'} in a string",
                  short(meta[key]))
        return None
    return value if check.texts_within(value, where, f"metadata.{key}") else None


def _ratings(check: Checker, meta: dict, where: str, score: float) -> dict[str, float]:
    """Each annotator's rating of a human result's record ({ANNOTATOR: score} when it names none)."""
    if META["ratings"] not in meta:
        return {ANNOTATOR: score}
    raw = _json_field(check, meta, where, META["ratings"], dict) or {}
    out = {}
    for who, value in raw.items():
        key = f"metadata.{META['ratings']} (an annotator)"
        name = check.ident({key: who}, where, key)
        number = check.number({f"metadata.{META['ratings']}.{who}": value}, where, f"metadata.{META['ratings']}.{who}")
        if name is not None and number is not None:
            out[name] = number
    return out


def _add_ratings(con, check: Checker, batch: Batch, dataset: str, ratings: dict, scales: dict) -> None:
    """The human ratings' rows, and each new dimension's scale; a rating stored already is a problem."""
    stored_scales = lookup.scales(con, dataset)
    for dim, (lo, hi) in sorted(scales.items()):
        if dim not in stored_scales:
            batch.add("dimensions", dataset=dataset, dimension=dim, scale_min=lo, scale_max=hi)
    stored: dict[str, dict] = {}
    for (tr, item_id, model, who, dim), (score, file, where) in sorted(ratings.items()):
        keys = stored.setdefault(tr, lookup.rating_keys(con, dataset, tr))
        key = ("response", item_id, model, identity_key(who), dim)
        if key in keys:
            check.file = file
            check.add(where, f"metadata.{META['ratings']}", "a rating not stored yet",
                      f"{who!r}'s rating of {dim!r} for {model!r} on {item_id!r}, stored from {keys[key]}")
            continue
        batch.add("human_ratings", dataset=dataset, track=tr, target="response", item_id=item_id, dialogue_id=None,
                  model=model, annotator=who, dimension=dim, score=score, rated_response=None,
                  origin=f"{Path(file).name} {where}")


def run(con, args):
    """`evalcore import` of this format: the options its catalogue entry declares, read."""
    return import_eee(con, args.dir, dataset=args.dataset, track=args.track)
