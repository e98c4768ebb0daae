"""The `record` commands: an evaluation record written, imported and verified (evalcore.services.record)."""
from __future__ import annotations

from evalcore.cli.commands import CREATES, READS, db
from evalcore.cli.declarations import command, group
from evalcore.core.names import count
from evalcore.metrics.options import JUDGE_API_KEY_ENV, JUDGE_CONCURRENCY, add_neural_arguments

group("record", "an evaluation record: one file with what a dataset's figures depend on, to import and verify "
      "anywhere", "action")


@command("record export", "write a dataset's record: a zip of Parquet tables (items, references, grounding, "
         "responses, raw ratings and votes, task definitions, metric values with signatures, figures) and a manifest "
         "(versions, prompts and templates with their SHA-256, checksums)", "record:export", READS, scores=True)
def record_export(p):
    db(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--tracks", nargs="+", metavar="TRACK", help="only these tracks (default: every one)")
    p.add_argument("--out", required=True, help="the record file to write (.zip)")


@command("record import", "load a record into a store in one transaction (refused whole, naming each conflict)",
         "record:load", CREATES, scores=True)
def record_import(p):
    p.add_argument("file")
    db(p)


@command("record verify", "recompute a record's checksums, its metric values from the texts (lexical always; "
         "model-based where the model is here; a judge where its server answers) and its figures from the values; "
         "every difference named (exit 1 when any), and what was not recomputed and why", "record:verify",
         scores=True)
def record_verify(p):
    p.add_argument("file")
    p.add_argument("--format", choices=("text", "csv"), default="text",
                   help="text: a summary; csv: one row per difference")
    add_neural_arguments(p)   # the models a signature cannot carry (a backbone directory, a checkpoint)
    g = p.add_argument_group("LLM judges (asked again only at the record's own server, with its model and sampling)")
    g.add_argument("--judge-base-url", metavar="URL", help="the record's judge server's OpenAI API root, e.g. "
                   "http://127.0.0.1:8000/v1 (without it the judges' values are taken from the record)")
    g.add_argument("--judge-api-key-env", default=JUDGE_API_KEY_ENV, metavar="VAR",
                   help="environment variable holding the API key, if the server needs one (default %(default)s)")
    g.add_argument("--judge-concurrency", type=count(1), default=JUDGE_CONCURRENCY,
                   help=f"requests in flight at most (default {JUDGE_CONCURRENCY})")
