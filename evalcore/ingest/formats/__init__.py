"""The import formats, one catalogue (`evalcore import KIND`, in the order --help lists them): each format's kind,
help, the path it reads (a file, a dir or a folder), whether it takes --dataset, its own options, and its module
(`evalcore.ingest.formats.<module>`, holding its reader and `run(con, args)`, which returns the import's report).
The modules are imported only when their format runs, so `evalcore --help` loads no reader: this catalogue imports
argparse and the options modules alone. A new format is its module, one entry here and its test; the CLI declares
and handles every entry the same way (evalcore.cli.declarations, evalcore.cli.imports:run_format)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from evalcore.analysis.options import MAX_TURNS
from evalcore.ingest.options import missing, scale


@dataclass(frozen=True)
class Format:
    kind: str
    help: str
    options: Callable[[argparse.ArgumentParser], None]   # its own options, after the path, --db and --dataset
    module: str                # evalcore.ingest.formats.<module>: the reader and run(con, args)
    path: str = "file"         # the positional argument: file, dir or folder
    dataset: bool = True       # takes --dataset (items and the MSDE release name their own datasets)

    @property
    def run(self) -> str:
        """The "module:function" reference of the format's run(con, args)."""
        return f"evalcore.ingest.formats.{self.module}:run"


FORMATS: list[Format] = []


def entry(kind: str, module: str, help: str, path: str = "file", dataset: bool = True):
    """Catalogue the format whose own options the decorated function adds."""
    def declare(options):
        FORMATS.append(Format(kind, help, options, module, path, dataset))
        return options
    return declare


def find(kind: str) -> Format:
    return next(f for f in FORMATS if f.kind == kind)


@entry("items", "items",
        "JSONL: item_id, dataset, track, context, references, ...", dataset=False)
def items_options(p):
    pass   # the path, --db and --dataset only


@entry("responses", "responses",
        "CSV/TSV/JSONL/xlsx: item_id, response[, model][, track]; the MSDE release's workbook "
        "(History, response) with --track and --model; a folder or .zip of one file per track, named after it")
def responses_options(p):
    p.add_argument("--track", help="the track every row answers (else the file's 'track' column: all tracks at once)")
    p.add_argument("--model", help="model name for every row (else a 'model' column)")


@entry("ratings", "ratings",
        "CSV/TSV/JSONL/xlsx: item_id|dialogue_id, model, annotator, dimension, score[, track]")
def ratings_options(p):
    p.add_argument("--track", help="the track every row rates (else the file's 'track' column: all tracks at once)")
    scale(p)
    missing(p, "a score")


@entry("scores", "scores",
        "per-response values of a metric computed elsewhere: CSV/TSV/JSONL/xlsx with item_id, model, "
        "value; it then sits beside the built-in metrics (signature marked external)")
def scores_options(p):
    p.add_argument("--track", help="the track every row answers (default: each item's own track)")
    p.add_argument("--metric", required=True, help="the metric's name (not a built-in one)")
    way = p.add_mutually_exclusive_group()
    way.add_argument("--higher-is-better", dest="higher_is_better", action="store_true", default=None,
                     help="(default for a new metric)")
    way.add_argument("--lower-is-better", dest="higher_is_better", action="store_false")
    p.add_argument("--signature", help="what produced the values (judge model, prompt, version): part of the "
                   "metric's signature")


@entry("dstc10", "dstc10",
        "DSTC10 metric-track turn-level JSON: a list of {dialogue_id, model, context (turns joined by "
        "newlines), response, reference [list], annotations {dim: [scores]}}")
def dstc10_options(p):
    p.add_argument("--track", required=True)
    p.add_argument("--language", help="the dataset's language when it is new (en, zh, ...; default: detected from the texts)")
    scale(p)
    missing(p, "an annotation")


@entry("mtbench", "mtbench",
        "a FastChat llm_judge folder: question.jsonl, model_answer/*.jsonl, reference_answer/*.jsonl, "
        "model_judgment/*_single.jsonl and *_pair.jsonl", path="dir")
def mtbench_options(p):
    p.add_argument("--language", help="the dataset's language when it is new (default: detected from the texts)")


@entry("msde", "msde",
        "the MSDE release folder (github IRIP-LLM/MSDE)", path="dir", dataset=False)
def msde_options(p):
    pass   # the path, --db and --dataset only


@entry("published", "published",
        "a paper's system-level tables in long CSV form", path="dir")
def published_options(p):
    scale(p)


@entry("votes", "votes",
        "people's side-by-side votes: item_id, model_a, model_b, winner (a|b|tie), annotator, dimension")
def votes_options(p):
    pass   # the path, --db and --dataset only


@entry("sessions", "sessions",
        "task-oriented test sessions: system, test_case, completed, turns, reviewer, satisfaction, "
        "fluency, guidance")
def sessions_options(p):
    p.add_argument("--track", required=True)
    p.add_argument("--max-turns", type=float, default=MAX_TURNS, help="turns counted for an unfinished task")


@entry("eee", "eee",
        "a folder of Every Eval Ever files: items (when absent), responses, each metric as external "
        "metric EEE:<metric_id>, human ratings", path="dir")
def eee_options(p):
    p.add_argument("--track", help="put every sample in this track (default: each record's evaluation_name)")


@entry("lm-eval", "lmeval",
        "lm-evaluation-harness --log_samples output (samples_<task>_<date>.jsonl): the filtered "
        "response as the model's response, each per-sample metric as external metric lm-eval:<metric>")
def lm_eval_options(p):
    p.add_argument("--track", required=True, help="the track of the samples' items")
    p.add_argument("--model", required=True, help="the model the harness evaluated")
    p.add_argument("--doc-id", required=True, metavar="FIELD",
                   help="dotted path of the item id in a sample: doc.id, or doc_id (the document's position)")
    p.add_argument("--doc-context", metavar="FIELD", help="dotted path of the item's context (doc.question): items "
                   "not in the store are created from it, the target as their reference")
    p.add_argument("--metrics", help="comma-separated per-sample metrics to import (default: every numeric one)")
    p.add_argument("--filter", help="the filter whose responses to import, when the file has several")
    p.add_argument("--language", help="the dataset's language when it is new (default: detected from the texts)")


@entry("inspect", "inspectlog",
        "an inspect_ai evaluation log (.eval or .json), read through inspect_ai's read_eval_log "
        "(pip install inspect-ai): each sample's completion as the response, each scorer as external metric "
        "inspect:<scorer>")
def inspect_options(p):
    p.add_argument("--track", required=True, help="the track of the samples' items")
    p.add_argument("--model", help="the model's name in the store (default: the log's model)")
    p.add_argument("--context", action="store_true", help="create the items not in the store from the samples' "
                   "inputs (their targets as references); else every sample id must be an item of --track")
    p.add_argument("--language", help="the dataset's language when it is new (default: detected from the texts)")


@entry("hf", "hfdata",
        "a Hugging Face dataset (a save_to_disk folder), a Parquet or a JSONL file, its columns mapped "
        "by --columns: responses (response=COLUMN) or ratings (annotator=, dimension=, score=)")
def hf_options(p):
    p.add_argument("--track", help="the track every row answers (else a column mapped to track)")
    p.add_argument("--columns", required=True, metavar="TARGET=COLUMN,...",
                   help="evalcore column = the dataset's column: item_id, response, model, track, dialogue_id, "
                        "annotator, dimension, score")
    p.add_argument("--model", help="model name for every row (else a column mapped to model)")
    p.add_argument("--split", help="the split of a DatasetDict folder (default: its only one)")
    scale(p)
    missing(p, "a score")


@entry("label-studio", "labelstudio",
        "a Label Studio project's JSON export: each Rating (or Choices) result a human rating "
        "of a stored response, by the user who completed the annotation")
def label_studio_options(p):
    p.add_argument("--track", required=True, help="the track of the rated items")
    p.add_argument("--item-field", required=True, metavar="FIELD", help="dotted path of the item id in a task "
                   "(data.item_id)")
    p.add_argument("--model-field", required=True, metavar="FIELD", help="dotted path of the model in a task "
                   "(data.model)")
    p.add_argument("--dimension-from", choices=("rating", "choice"), default="rating",
                   help="which control's results are the scores: Rating (value.rating) or Choices (one choice that "
                        "is a number); the dimension is the control's name (from_name)")
    scale(p)
    missing(p, "a choice")


@entry("argilla", "argilla",
        "an Argilla dataset written by Dataset.to_disk (a folder: records.json, .argilla/settings.json): "
        "each submitted response to a rating question (or a label question whose labels are numbers) a human rating "
        "of a stored response, by its user", path="folder")
def argilla_options(p):
    p.add_argument("--track", required=True, help="the track of the rated items")
    p.add_argument("--item-field", required=True, metavar="FIELD", help="dotted path of the item id in a record "
                   "(metadata.item_id)")
    p.add_argument("--model-field", required=True, metavar="FIELD", help="dotted path of the model in a record "
                   "(metadata.model)")
    p.add_argument("--response-field", metavar="FIELD", help="dotted path of the rated text in a record "
                   "(fields.response): each must be its stored response's text, else the export is refused")
    p.add_argument("--questions", metavar="Q1,Q2", help="comma-separated questions to import (default: every rating "
                   "question and every label question whose labels are numbers); the dimension is the question's name")
    p.add_argument("--annotators", metavar="USERS.CSV", help="a CSV with columns user_id,username: each response's "
                   "annotator is its user's name (default: the user_id); every user who answered must be listed")
    scale(p)
    missing(p, "a label")


@entry("dstc11", "dstc11",
        "a DSTC11 Track 4 turn-level JSON file (DSTC10 entries with context_zh/response_zh, _es, _pa "
        "translations): responses and human ratings by annotator position, in the texts --text picks")
def dstc11_options(p):
    p.add_argument("--track", required=True)
    p.add_argument("--text", choices=("zh", "es", "pa", "en"), default="zh",
                   help="which texts: the Chinese translation (default), Spanish, the English paraphrase, or the "
                        "original English")
    p.add_argument("--model", help="the model of entries that name none")
    scale(p)
    missing(p, "an annotation")
