"""The commands that bring data into a store: `init` (the embedded default data), `import KIND` (every format of
evalcore.ingest.formats run the same way, each file refused whole when it is bad) and `template` (the responses
file to fill in)."""
from __future__ import annotations

import sys
import time

from evalcore.cli.commands import load
from evalcore.ingest.formats import find
from evalcore.ingest.template import render
from evalcore.ingest.template import template as template_of
from evalcore.services.defaults import init_store
from evalcore.store import resolve_db_path


def init(con, args) -> None:
    start = time.perf_counter()
    reports = init_store(con, progress=True)
    for r in reports:
        print(r.render())
    if not reports:
        print("the embedded default datasets are already in the store")
    print(f"store: {resolve_db_path(args.db)} ({time.perf_counter() - start:.1f} s)")


def run_format(con, args) -> None:
    """`evalcore import KIND`: the format's run (evalcore.ingest.formats), its report printed, and how long it took."""
    start = time.perf_counter()
    print(load(find(args.kind).run)(con, args).render())
    print(f"took {time.perf_counter() - start:.1f} s")


def template(con, args) -> None:
    if args.format == "xlsx" and not args.out:
        raise ValueError("an xlsx template needs --out FILE")
    data = render(template_of(con, args.dataset, args.track), args.format)
    if args.out:
        with open(args.out, "wb") as f:
            f.write(data)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
