"""Running the command the parser chose: the process set up for it (allocator, one BLAS thread, the scorers'
memory bound), its store opened as its declaration says, its handler called, and the errors a user can act on
printed as one line with an exit code."""
from __future__ import annotations

import argparse
import os
import sys

from evalcore.cli.commands import CREATES, READS, load
from evalcore.core import lazy, names
from evalcore.core.errors import ImportRefused, StoreError
from evalcore.core.malloc import tune
from evalcore.core.threads import one_blas_thread

# imported when a command opens a store: `evalcore app` opens none, and these (pandas, DuckDB, the metric
# registry) were 0.4 s of its start before it hands over to the server
output = lazy.module("evalcore.cli.output")
registry = lazy.module("evalcore.metrics.registry")
store = lazy.module("evalcore.store")


def execute(args: argparse.Namespace) -> int:
    """The command's exit status: its handler's, or 2 for a refused file or an unknown name, 1 for another
    error a user can act on (said on standard error)."""
    tune()
    one_blas_thread()
    scorer = args.declared.scores
    if scorer:
        store.bound_memory()
    try:
        return run(args)
    except ImportRefused as exc:
        print(exc.render(), file=sys.stderr)
        return 2
    except names.UnknownName as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (StoreError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:   # `evalcore trust ... | head`: the reader has gone; no traceback, and none at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141   # what a shell reports for a command a closed pipe ended (128 + SIGPIPE)
    finally:
        if scorer:
            store.bound_memory("")   # execute() may run again in this process (the tests, the API) for another command


def run(args: argparse.Namespace) -> int:
    """Call the command's handler: with the store open when it uses one."""
    declared = args.declared
    handler = load(declared.handler)
    if declared.store is None:
        return handler(args)
    return on_store(handler, args, declared.store)


def on_store(handler, args: argparse.Namespace, use: str) -> int:
    """Open the store (READS, WRITES or CREATES), check the names the command is given (names.check), run
    `handler(con, args)`, and close the store however it ends."""
    path = store.resolve_db_path(args.db)
    if use != CREATES and not path.exists():
        raise StoreError(f"no store at {path} (`{args.command}` reads a store and creates none); build one "
                         f"with `evalcore init --db {path}` or import data into it, or give --db an existing store")
    con = store.connect(args.db, wait=store.lock_wait(), on_wait=output.on_wait, reads_only=use == READS)
    try:
        names.check(con, args)
        if getattr(args, "flavor", None) is not None:
            names.require("flavor", args.flavor, list(registry.FLAVORS))
        return handler(con, args) or 0
    finally:
        con.close()
