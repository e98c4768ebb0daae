"""The `record` commands' handlers (declared in evalcore.cli.declarations_record)."""
from __future__ import annotations

import os
import sys
import time

from evalcore.metrics import neural
from evalcore.metrics.judge import Endpoint
from evalcore.services import record, record_load, record_verify
from evalcore.store import resolve_db_path


def export(con, args) -> None:
    start = time.perf_counter()
    manifest = record.export(con, args.dataset, args.out, args.tracks)
    size = os.path.getsize(args.out)
    rows = ", ".join(f"{n} {v['rows']:,}" for n, v in manifest["tables"].items() if v["rows"])
    print(f"wrote {args.out}: {size:,} bytes; {rows}")
    print(f"content sha256 {manifest['content_sha256']}")
    print(f"took {time.perf_counter() - start:.1f} s")


def load(con, args) -> None:
    start = time.perf_counter()
    print(record_load.load(con, args.file).render())
    print(f"store: {resolve_db_path(args.db)} ({time.perf_counter() - start:.1f} s)")


def verify(args) -> int:
    start = time.perf_counter()
    # the judge's model and sampling are the record's (record_redo): only where to reach it is given here
    judge = Endpoint(args.judge_base_url, "", api_key_env=args.judge_api_key_env) if args.judge_base_url else None
    found = record_verify.verify(args.file, neural.options(args, judge=judge, judge_concurrency=args.judge_concurrency))
    if args.format == "csv":
        found.differences.to_csv(sys.stdout, index=False)
        print(found.render().splitlines()[0], file=sys.stderr)
    else:
        print(found.render())
    print(f"took {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0 if found.clean else 1
