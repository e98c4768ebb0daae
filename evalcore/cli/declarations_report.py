"""`evalcore report`: a dataset's views as one HTML file that opens offline (declared here; the handler is in
evalcore.cli.report)."""
from __future__ import annotations

from evalcore.cli.commands import READS, db
from evalcore.cli.declarations import command

# evalcore.services.report.VIEWS, written out: the parser imports no layer (a test keeps the two equal)
VIEWS = ("trust", "leaderboard", "correlations", "human")


@command("report", "one self-contained HTML file of a dataset (charts, tables, signatures, definitions, a data "
         "checksum) that opens from disk with no server or network", "report:report", READS)
def report(p):
    db(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--tracks", nargs="+", metavar="TRACK", help="only these tracks (default: all of the dataset's)")
    p.add_argument("--view", nargs="+", choices=VIEWS, default=list(VIEWS), help="which views, in this order "
                   "(default: all four)")
    p.add_argument("--out", required=True, help="the HTML file to write")
