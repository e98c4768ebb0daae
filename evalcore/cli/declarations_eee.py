"""The `export eee` command: a dataset's results as Every Eval Ever files (handler in evalcore.cli.eee; `import eee`
reads them back, evalcore.ingest.formats.eee)."""
from __future__ import annotations

from evalcore.cli.commands import READS, db
from evalcore.cli.declarations import command, group

group("export", "write a dataset's results in another tool's format", "kind")


@command("export eee", "Every Eval Ever files (schema 0.3.0): per model an aggregate <uuid>.json and its instance-level "
         "<uuid>_samples.jsonl, under DIR/data/<dataset>/<developer>/<model>/", "eee:export", READS)
def export_eee(p):
    db(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--tracks", nargs="+", metavar="TRACK", help="only these tracks (default: all the dataset's)")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--organization", default="unknown",
                   help="source_metadata.source_organization_name: who ran the evaluation (default: unknown)")
