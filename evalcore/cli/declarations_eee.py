"""The `export eee` and `import eee` commands: Every Eval Ever files out of a store and back in (handlers in
evalcore.cli.eee)."""
from __future__ import annotations

from evalcore.cli.commands import CREATES, READS, db, imported
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


@command("import eee", "a folder of Every Eval Ever files: items (when absent), responses, each metric as external "
         "metric EEE:<metric_id>, human ratings", "eee:import_", CREATES)
def import_eee(p):
    imported(p, "dir")
    p.add_argument("--track", help="put every sample in this track (default: each record's evaluation_name)")
