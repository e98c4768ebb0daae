"""Options many import formats share, as argparse sees them (--scale, --missing). Light on purpose: the catalogue of
formats (evalcore.ingest.formats) declares every format's options with these, and `evalcore --help` builds them
without loading any reader."""
from __future__ import annotations

import argparse


def scale(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scale", action="append", default=[], metavar="DIM=MIN:MAX")


def missing(p: argparse.ArgumentParser, cell: str) -> None:
    p.add_argument("--missing", action="append", default=[], metavar="PATTERN",
                   help=f"{cell} whose text matches this pattern (fnmatch-style, case-sensitive, e.g. 'N/A*') is no "
                        "rating: nothing stored, counted in the report (repeatable; a number never matches)")
