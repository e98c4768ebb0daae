"""The `import` commands for files other tools write: lm-evaluation-harness samples, inspect_ai logs, Hugging Face
datasets, Label Studio exports, Argilla datasets and DSTC11 Track 4 annotations. Declared beside
evalcore.cli.declarations (same registry)."""
from __future__ import annotations

from evalcore.cli.commands import CREATES, imported, scale
from evalcore.cli.declarations import command, missing


@command("import lm-eval", "lm-evaluation-harness --log_samples output (samples_<task>_<date>.jsonl): the filtered "
         "response as the model's response, each per-sample metric as external metric lm-eval:<metric>",
         "exchange_imports:lmeval", CREATES)
def import_lmeval(p):
    imported(p)
    p.add_argument("--track", required=True, help="the track of the samples' items")
    p.add_argument("--model", required=True, help="the model the harness evaluated")
    p.add_argument("--doc-id", required=True, metavar="FIELD",
                   help="dotted path of the item id in a sample: doc.id, or doc_id (the document's position)")
    p.add_argument("--doc-context", metavar="FIELD", help="dotted path of the item's context (doc.question): items "
                   "not in the store are created from it, the target as their reference")
    p.add_argument("--metrics", help="comma-separated per-sample metrics to import (default: every numeric one)")
    p.add_argument("--filter", help="the filter whose responses to import, when the file has several")
    p.add_argument("--language", help="the dataset's language when it is new (default: detected from the texts)")


@command("import inspect", "an inspect_ai evaluation log (.eval or .json), read through inspect_ai's read_eval_log "
         "(pip install inspect-ai): each sample's completion as the response, each scorer as external metric "
         "inspect:<scorer>", "exchange_imports:inspect", CREATES)
def import_inspect(p):
    imported(p)
    p.add_argument("--track", required=True, help="the track of the samples' items")
    p.add_argument("--model", help="the model's name in the store (default: the log's model)")
    p.add_argument("--context", action="store_true", help="create the items not in the store from the samples' "
                   "inputs (their targets as references); else every sample id must be an item of --track")
    p.add_argument("--language", help="the dataset's language when it is new (default: detected from the texts)")


@command("import hf", "a Hugging Face dataset (a save_to_disk folder), a Parquet or a JSONL file, its columns mapped "
         "by --columns: responses (response=COLUMN) or ratings (annotator=, dimension=, score=)",
         "exchange_imports:hf", CREATES)
def import_hf(p):
    imported(p)
    p.add_argument("--track", help="the track every row answers (else a column mapped to track)")
    p.add_argument("--columns", required=True, metavar="TARGET=COLUMN,...",
                   help="evalcore column = the dataset's column: item_id, response, model, track, dialogue_id, "
                        "annotator, dimension, score")
    p.add_argument("--model", help="model name for every row (else a column mapped to model)")
    p.add_argument("--split", help="the split of a DatasetDict folder (default: its only one)")
    scale(p)
    missing(p, "a score")


@command("import label-studio", "a Label Studio project's JSON export: each Rating (or Choices) result a human rating "
         "of a stored response, by the user who completed the annotation", "exchange_imports:labelstudio", CREATES)
def import_labelstudio(p):
    imported(p)
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


@command("import argilla", "an Argilla dataset written by Dataset.to_disk (a folder: records.json, .argilla/settings.json): "
         "each submitted response to a rating question (or a label question whose labels are numbers) a human rating "
         "of a stored response, by its user", "exchange_imports:argilla", CREATES)
def import_argilla(p):
    imported(p, "folder")
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


@command("import dstc11", "a DSTC11 Track 4 turn-level JSON file (DSTC10 entries with context_zh/response_zh, _es, _pa "
         "translations): responses and human ratings by annotator position, in the texts --text picks",
         "exchange_imports:dstc11", CREATES)
def import_dstc11(p):
    imported(p)
    p.add_argument("--track", required=True)
    p.add_argument("--text", choices=("zh", "es", "pa", "en"), default="zh",
                   help="which texts: the Chinese translation (default), Spanish, the English paraphrase, or the "
                        "original English")
    p.add_argument("--model", help="the model of entries that name none")
    scale(p)
    missing(p, "an annotation")
