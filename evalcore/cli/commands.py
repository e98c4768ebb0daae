"""What a CLI command is (Command: its name path, help, arguments, handler and how it uses the store), the
argument helpers many commands share, and the parser built from the declarations. Light on purpose: it imports
no layer above core, so `evalcore --help` and `--version` load none of them; a command's handler module is
imported when that command runs (load)."""
from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Callable

from evalcore.core import names
from evalcore.core.options import TASK_MAX_SEED, TOKENIZER_NAMES
from evalcore.core.text import bad_character

# How a command uses the store at --db: it only reads it (a store the file system will not let be written
# serves it read-only), writes into an existing one, or creates it when absent. A command that reads or writes
# is an error naming the path when no store is there, never a new empty store.
READS, WRITES, CREATES = "reads", "writes", "creates"
FORMATS = ("table", "json", "csv")


@dataclass(frozen=True)
class Command:
    """One command of `evalcore`: `path` ("task create"), its help, `arguments` (adds its options to its parser),
    `handler` ("module:function", called as handler(con, args) when it uses a store, else handler(args)), and
    `store` (READS, WRITES, CREATES, or None: it opens none). A group (`subcommands`: the dest of its
    sub-commands' name) has sub-commands, declared after it, and no handler."""

    path: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None] | None = None
    handler: str | None = None
    store: str | None = None
    scores: bool = False              # its store opens under store.SCORING_MEMORY (bound_memory)
    subcommands: str | None = None


def load(reference: str):
    """The function a "module:function" reference names, its module imported now."""
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


def build(commands: list[Command], **parser_options) -> argparse.ArgumentParser:
    """The parser of `commands`, in their order; each command's parser carries it as args.declared."""
    parser = argparse.ArgumentParser(**parser_options)
    groups = {"": parser.add_subparsers(dest="command", required=True)}
    for cmd in commands:
        parent, _, name = cmd.path.rpartition(" ")
        p = groups[parent].add_parser(name, help=cmd.help)
        if cmd.handler:
            p.set_defaults(declared=cmd)
        if cmd.arguments:
            cmd.arguments(p)
        if cmd.subcommands:
            groups[cmd.path] = p.add_subparsers(dest=cmd.subcommands, required=True)
    return parser


def db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="store file (default: $EVALCORE_DB, else ~/.local/share/evalcore/evalcore.duckdb)")


def on_dataset(p: argparse.ArgumentParser, track: bool = True) -> None:
    """A command over one dataset of a store (and optionally one of its tracks)."""
    db(p)
    p.add_argument("--dataset", required=True)
    if track:
        p.add_argument("--track")


def flavor(p: argparse.ArgumentParser) -> None:
    p.add_argument("--flavor", default="default", help="default, or msde to reproduce the MSDE paper")
    p.add_argument("--tokenizer", help="override the flavor's tokenizer: " + ", ".join(TOKENIZER_NAMES))


def models(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models", help="comma-separated: only these models' responses count")
    p.add_argument("--exclude-models", help="comma-separated: leave these models out (e.g. a reference imported "
                   "as a model)")


def output(p: argparse.ArgumentParser, default: str = "table") -> None:
    p.add_argument("--format", choices=FORMATS, default=default)


def task_seed(text: str) -> int:
    """--seed of `task create`: a whole number a task's 32-bit seed column holds (argparse error otherwise)."""
    value = names.count(0)(text)
    if value > TASK_MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {TASK_MAX_SEED}, got {text!r}")
    return value


def written_text(what: str):
    """An argparse type for text people will read (a task's name, its guidelines): refused with the character
    named when it holds a control character (a terminal would act on it, the export would carry it)."""
    def parse(text: str) -> str:
        bad = bad_character(text)
        if bad:
            raise argparse.ArgumentTypeError(f"a task's {what} may not hold a {bad}")
        return text

    parse.__name__ = what
    return parse
