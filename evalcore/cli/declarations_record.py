"""The `record` commands: an evaluation record written, imported and verified (evalcore.services.record)."""
from __future__ import annotations

from evalcore.cli.commands import CREATES, READS, db
from evalcore.cli.declarations import command, group

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


@command("record verify", "recompute a record's checksums, its lexical metric values from the texts and its figures "
         "from the values; every difference named (exit 1 when any), and what was not recomputed and why",
         "record:verify", scores=True)
def record_verify(p):
    p.add_argument("file")
    p.add_argument("--format", choices=("text", "csv"), default="text",
                   help="text: a summary; csv: one row per difference")
