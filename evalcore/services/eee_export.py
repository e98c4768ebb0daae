"""`export eee`: a dataset's results as Every Eval Ever files (github evaleval/every_eval_ever, schemas 0.3.0 as
its package every-eval-ever ships them), in the layout its datastore uses:

  DIR/data/<dataset>/<developer>/<model>/<uuid>.json           aggregate results of one model
  DIR/data/<dataset>/<developer>/<model>/<uuid>_samples.jsonl  instance-level records of that model

One aggregate file per model: an evaluation result per track and metric (evaluation_name the track,
metric_config.metric_id the metric, the system value under the default flavor's corpus aggregate as
score_details.score), and per human dimension (the mean over responses of the annotators' mean rating). The
metric's evalcore signature and number of responses are in metric_config.additional_details, the field the schema
gives to how a value was made; where an endpoint generated the model's responses, generation_config carries the
sampling settings and the `generations` signature. The instance records: one per response and evaluation result
(the schema's rule for a sample behind several results), input the context turns and references, output the
response, evaluation.score the response's value; the exact context, grounding and each annotator's rating ride in
metadata (string values, as the schema requires), so `import eee` reads the files back without loss.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pandas as pd

from evalcore import __version__
from evalcore.ingest.formats.eee import HUMAN_KIND, KIND, META, METRIC_KIND, SCHEMA_VERSION, SIGNATURE
from evalcore.metrics import registry
from evalcore.scoring import computed_filter, load_track, response_scores
from evalcore.services.scope import chosen_tracks

_UNSAFE = re.compile(r"[^\w.-]+")


@dataclass
class EeeExport:
    """What an export wrote, for the CLI."""

    folder: Path
    files: list[Path] = field(default_factory=list)
    results: int = 0
    instances: int = 0

    def render(self) -> str:
        return (f"wrote {len(self.files):,} files to {self.folder}: {self.results:,} evaluation results, "
                f"{self.instances:,} instance records")


def export_eee(con: duckdb.DuckDBPyConnection, dataset: str, out: str | Path, *, tracks: list[str] | None = None,
               organization: str = "unknown", flavor: str = "default") -> EeeExport:
    """Write the dataset's (or `tracks`') results under `out`; a model without any value is left out."""
    known = chosen_tracks(con, dataset, tracks)
    metrics = registry.of(con)
    retrieved = f"{time.time():.3f}"
    results: dict[str, list[dict]] = defaultdict(list)     # model -> evaluation results
    files: dict[str, _Samples] = {}                        # model -> its instance-level file, written as made
    try:
        for track in known:
            data = load_track(con, dataset, track, full=True)
            if data.empty:
                continue
            values = response_scores(con, dataset, track, flavor=flavor, data=data)
            dialogues = dict(con.execute("SELECT item_id, dialogue_id FROM items WHERE dataset = ? AND track = ? AND "
                                         "dialogue_id IS NOT NULL", [dataset, track]).fetchall())
            data["dialogue_id"] = data["item_id"].map(dialogues)
            rows = {(i, m): r for i, m, r in zip(data["item_id"], data["model"], data.to_dict("records"))}
            found = [(model, result, [(i, score, None) for i, score in per_item])
                     for model, result, per_item in _metric_results(con, dataset, track, flavor, values, metrics)]
            found += list(_human_results(con, dataset, track))
            for model, result, per_item in found:
                results[model].append(result)
                if model not in files:
                    files[model] = _Samples(Path(out), dataset, model, retrieved)
                for i, score, ratings in per_item:
                    if (i, model) in rows:
                        files[model].write(_instance(rows[i, model], result, score,
                                                     ratings and {META["ratings"]: ratings}))
    finally:
        for file in files.values():
            file.close()
    report = EeeExport(Path(out))
    for model in sorted(results):
        report.files += [_write_aggregate(con, files[model], results[model], organization), files[model].path]
        report.results += len(results[model])
        report.instances += files[model].rows
    return report


def _metric_results(con, dataset: str, track: str, flavor: str, values: pd.DataFrame, metrics: dict):
    """(model, evaluation result, [(item_id, value)]) per model and computed metric of the track."""
    cond, params = computed_filter(con, dataset, flavor)
    system = con.execute(f"""
        SELECT model, name, value, signature, n FROM system_scores
        WHERE dataset = ? AND track = ? AND origin = 'computed' AND {cond} ORDER BY model, name
    """, [dataset, track, *params]).fetchall()
    per = {key: list(zip(g["item_id"], g["value"])) for key, g in values.groupby(["model", "metric"])}
    for model, name, value, sig, n in system:
        if value is None or not math.isfinite(value):
            continue
        details = {KIND: METRIC_KIND, SIGNATURE: sig, "responses": str(n)}
        result = _result(track, name, float(value), not registry.higher_is_better(name, metrics), details)
        items = sorted((i, float(v)) for i, v in per.get((model, name), []) if v is not None and math.isfinite(v))
        yield model, result, items


def _human_results(con, dataset: str, track: str):
    """(model, evaluation result, [(item_id, mean rating, ratings JSON)]) per model and human dimension rated on
    the track's responses."""
    rows = con.execute("""
        SELECT h.model, h.dimension, h.item_id, h.annotator, avg(h.score), any_value(d.scale_min),
               any_value(d.scale_max)
        FROM human_ratings h LEFT JOIN dimensions d USING (dataset, dimension)
        WHERE h.dataset = ? AND h.track = ? AND h.target = 'response' GROUP BY ALL ORDER BY ALL
    """, [dataset, track]).fetchall()
    grouped: dict[tuple, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    scales = {}
    for model, dim, item, who, score, lo, hi in rows:
        grouped[model, dim][item][who] = float(score)
        scales[dim] = (lo, hi)
    for (model, dim), items in sorted(grouped.items()):
        means = [(i, sum(r.values()) / len(r), json.dumps(r, ensure_ascii=False, sort_keys=True))
                 for i, r in sorted(items.items())]
        details = {KIND: HUMAN_KIND, "responses": str(len(means)),
                   "annotators": str(len({w for r in items.values() for w in r}))}
        result = _result(track, dim, sum(m for _, m, _ in means) / len(means), False, details, scales[dim])
        yield model, result, means


def _result(track: str, metric: str, score: float, lower: bool, details: dict, scale=(None, None)) -> dict:
    # a continuous metric must state its bounds; null is the schema's "not provided" (a metric's range here)
    config = {"metric_id": metric, "metric_name": metric, "lower_is_better": lower, "score_type": "continuous",
              "min_score": None if scale[0] is None else float(scale[0]),
              "max_score": None if scale[1] is None else float(scale[1]), "additional_details": details}
    return {"evaluation_result_id": f"{track}#{metric}", "evaluation_name": track,
            "source_data": {"dataset_name": track, "source_type": "other"},
            "metric_config": config, "score_details": {"score": score}}


def _instance(row: dict, result: dict, score: float, extra: dict | None = None) -> dict:
    """One response's record for one evaluation result (evaluation_id, model_id and schema_version are set when
    the model's file is written)."""
    context = json.loads(row["context"]) if isinstance(row.get("context"), str) else []   # NaN where NULL
    refs = [str(r) for r in row["refs"]]
    raw = "\n".join(context)
    meta = {META["context"]: json.dumps(context, ensure_ascii=False), META["metric"]: result["metric_config"]["metric_id"]}
    if isinstance(row.get("grounding"), str):
        meta[META["grounding"]] = row["grounding"]
    if isinstance(row.get("dialogue_id"), str):
        meta[META["dialogue"]] = row["dialogue_id"]
    sig = result["metric_config"]["additional_details"].get(SIGNATURE)
    if sig:
        meta[SIGNATURE] = sig
    meta.update(extra or {})
    text = row["text"]
    return {"evaluation_name": result["evaluation_name"], "evaluation_result_id": result["evaluation_result_id"],
            "sample_id": row["item_id"], "sample_hash": hashlib.sha256((raw + "\x1e".join(refs)).encode()).hexdigest(),
            "interaction_type": "single_turn", "input": {"raw": raw, "reference": refs},
            "output": {"raw": [text]}, "messages": None,
            "answer_attribution": [{"turn_idx": 0, "source": "output.raw", "extracted_value": text,
                                    "extraction_method": "whole_response", "is_terminal": True}],
            # a graded value is no claim of correctness (the package's own HELM converter's rule)
            "evaluation": {"score": score, "is_correct": False, "num_turns": 1}, "metadata": meta}


def _generation(con, dataset: str, model: str) -> dict | None:
    """generation_config from the latest run of an endpoint that generated the model's responses."""
    row = con.execute("SELECT signature, details, endpoint FROM generations WHERE dataset = ? AND model = ? "
                      "ORDER BY generation_id DESC LIMIT 1", [dataset, model]).fetchall()
    if not row:
        return None
    sig, details, endpoint = row[0]
    details = json.loads(details)
    args = {k: details.get(k) for k in ("temperature", "top_p")}
    if isinstance(details.get("max_tokens"), int):
        args["max_tokens"] = details["max_tokens"]
    extra = {"evalcore_generation_signature": sig, "endpoint": endpoint}
    extra.update({k: str(details[k]) for k in ("served_model", "host", "seed") if details.get(k) is not None})
    return {"generation_args": args, "additional_details": extra}


def _part(name: str) -> str:
    part = _UNSAFE.sub("_", name).strip("._") or "_"
    return part[:80]


class _Samples:
    """A model's instance-level file, written record by record (a large store's records are never all held)."""

    def __init__(self, out: Path, dataset: str, model: str, retrieved: str):
        developer, _, short_name = model.rpartition("/")
        self.rel = Path("data", _part(dataset), _part(developer or "unknown"), _part(short_name))
        # the schema asks for a version-4 UUID; one made from the names keeps a re-export's file names
        self.name = str(uuid.UUID(bytes=hashlib.sha256(json.dumps([dataset, model]).encode()).digest()[:16],
                                  version=4))
        self.model, self.dataset, self.retrieved = model, dataset, retrieved
        self.evaluation_id = f"{dataset}/{model}/{retrieved}"
        self.folder = out / self.rel
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / f"{self.name}_samples.jsonl"
        self.digest = hashlib.sha256()
        self.rows = 0
        self.fh = self.path.open("w", encoding="utf-8")

    def write(self, rec: dict) -> None:
        line = json.dumps({"schema_version": SCHEMA_VERSION, "evaluation_id": self.evaluation_id,
                           "model_id": self.model, **rec}, ensure_ascii=False) + "\n"
        self.digest.update(line.encode("utf-8"))
        self.fh.write(line)
        self.rows += 1

    def close(self) -> None:
        self.fh.close()


def _write_aggregate(con, samples: _Samples, results: list[dict], organization: str) -> Path:
    generation = _generation(con, samples.dataset, samples.model)
    if generation:
        results = [{**r, "generation_config": generation} for r in results]
    aggregate = {
        "schema_version": SCHEMA_VERSION, "evaluation_id": samples.evaluation_id,
        "retrieved_timestamp": samples.retrieved,
        "source_metadata": {"source_name": f"evalcore store, dataset {samples.dataset}", "source_type": "evaluation_run",
                            "source_organization_name": organization, "evaluator_relationship": "other"},
        "eval_library": {"name": "evalcore", "version": __version__},
        "model_info": {"name": samples.model, "id": samples.model,
                       "additional_details": {"deployment_type": "unknown", "model_availability": "unknown"}},
        "evaluation_results": results,
        "detailed_evaluation_results": {"format": "jsonl", "file_path": (samples.rel / samples.path.name).as_posix(),
                                        "hash_algorithm": "sha256", "checksum": samples.digest.hexdigest(),
                                        "total_rows": samples.rows},
    }
    path = samples.folder / f"{samples.name}.json"
    path.write_text(json.dumps(aggregate, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path
