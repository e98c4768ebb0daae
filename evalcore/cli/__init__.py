"""`evalcore ...` (or `python -m evalcore ...`): everything the dashboard shows, computable headless."""
from __future__ import annotations

import argparse

import evalcore.cli.declarations_eee  # noqa: F401 - each declares its commands into COMMANDS
import evalcore.cli.declarations_record  # noqa: F401
import evalcore.cli.declarations_report  # noqa: F401
from evalcore import __version__
from evalcore.cli.commands import build, load
from evalcore.cli.declarations import COMMANDS
from evalcore.core import names


def build_parser() -> argparse.ArgumentParser:
    """The parser of every declared command (evalcore.cli.declarations); each parsed command carries its
    declaration as args.declared."""
    parser = build(COMMANDS, prog="evalcore", description=__doc__)
    parser.add_argument("--version", action="version", version=f"evalcore {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    names.normalise(args)   # '--dataset ｔｏｙ' is toy: the names as the store holds them
    # the command's layers load only now, once it is known which run (evalcore.cli.running)
    return load("evalcore.cli.running:execute")(args)
