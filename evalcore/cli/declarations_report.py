"""`evalcore report`: a dataset's views, from a store or from an evaluation record, as one HTML file that opens
offline (declared here; the handler is in evalcore.cli.report)."""
from __future__ import annotations

from evalcore.cli.commands import db
from evalcore.cli.declarations import command

# evalcore.services.report.VIEWS, written out: the parser imports no layer (a test keeps the two equal)
VIEWS = ("trust", "leaderboard", "correlations", "human")


@command("report", "one self-contained HTML file of a dataset (charts, tables, signatures, definitions, a data "
         "checksum) that opens from disk with no server or network; of a store's dataset, or of an evaluation "
         "record (named with its checksum in the header)", "report:report")
def report(p):   # no store declared: a record's report reads none (the handler opens --db for --dataset)
    db(p)
    p.add_argument("--dataset", help="the store's dataset to report (with --record: must be the record's)")
    p.add_argument("--record", metavar="FILE", help="report this evaluation record (`evalcore record export`) "
                   "instead of a store: loaded into a scratch store, --db not read")
    p.add_argument("--tracks", nargs="+", metavar="TRACK", help="only these tracks (default: all of the dataset's)")
    p.add_argument("--view", nargs="+", choices=VIEWS, default=list(VIEWS), help="which views, in this order "
                   "(default: all four)")
    p.add_argument("--out", required=True, help="the HTML file to write")
    # evalcore.core.i18n.LANGS, written out (the parser imports no layer)
    p.add_argument("--lang", choices=("en", "zh-CN"), default="en", help="the language of the report's headings, "
                   "captions and notes (default: en); its data and checksum are the same in every language")
