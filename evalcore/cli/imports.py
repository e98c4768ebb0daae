"""The commands that bring data into a store: `init` (the embedded default data), `import KIND` (one importer
per kind, each file refused whole when it is bad) and `template` (the responses file to fill in)."""
from __future__ import annotations

import functools
import sys
import time

from evalcore.ingest.dstc10 import import_dstc10
from evalcore.ingest.items import import_items
from evalcore.ingest.msde import import_msde
from evalcore.ingest.mtbench import import_mtbench
from evalcore.ingest.published import import_published
from evalcore.ingest.ratings import import_ratings, parse_scale
from evalcore.ingest.responses import import_responses
from evalcore.ingest.scores import import_scores
from evalcore.ingest.sessions import import_sessions
from evalcore.ingest.template import render
from evalcore.ingest.template import template as template_of
from evalcore.ingest.votes import import_votes
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


def reported(importer):
    """An import kind's handler: its importer's report printed, and how long it took."""

    @functools.wraps(importer)
    def handler(con, args) -> None:
        start = time.perf_counter()
        print(importer(con, args).render())
        print(f"took {time.perf_counter() - start:.1f} s")

    return handler


def scales(items: list[str]) -> dict[str, tuple[float, float]]:
    """--scale DIM=MIN:MAX options as {dimension: (min, max)}."""
    out = {}
    for text in items:
        name, lo, hi = parse_scale(text)
        out[name] = (lo, hi)
    return out


@reported
def items(con, args):
    return import_items(con, args.file)


@reported
def responses(con, args):
    return import_responses(con, args.file, dataset=args.dataset, track=args.track, model=args.model)


@reported
def ratings(con, args):
    return import_ratings(con, args.file, dataset=args.dataset, track=args.track, scales=scales(args.scale),
                          missing=args.missing)


@reported
def scores(con, args):
    return import_scores(con, args.file, dataset=args.dataset, track=args.track, metric=args.metric,
                         higher_is_better=args.higher_is_better, signature=args.signature)


@reported
def dstc10(con, args):
    return import_dstc10(con, args.file, dataset=args.dataset, track=args.track, language=args.language,
                         scales=scales(args.scale), missing=args.missing)


@reported
def mtbench(con, args):
    return import_mtbench(con, args.dir, dataset=args.dataset, language=args.language)


@reported
def msde(con, args):
    return import_msde(con, args.dir)


@reported
def published(con, args):
    return import_published(con, args.dir, dataset=args.dataset, scales=scales(args.scale))


@reported
def votes(con, args):
    return import_votes(con, args.file, dataset=args.dataset)


@reported
def sessions(con, args):
    return import_sessions(con, args.file, dataset=args.dataset, track=args.track, max_turns=args.max_turns)


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
