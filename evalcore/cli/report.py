"""`evalcore report`: write the offline report (evalcore.services.report) of a store's dataset, or of an evaluation
record, to a file."""
from __future__ import annotations

import sys
from pathlib import Path

from evalcore.cli.commands import READS
from evalcore.cli.running import on_store
from evalcore.core.text import normalise_id
from evalcore.services.report import build, build_from_record


def report(args) -> int:
    """A record's report needs no store (it is loaded into a scratch one); a dataset's opens --db as READS."""
    if args.record is None and args.dataset is None:
        raise ValueError("say what to report: --dataset D (of the store at --db) or --record FILE.zip")
    if args.record is not None:
        write(args, build_from_record(args.record, tracks(args), tuple(args.view), dataset=args.dataset,
                                      lang=args.lang))
        return 0
    return on_store(lambda con, a: write(a, build(con, a.dataset, tracks(a), tuple(a.view), lang=a.lang)), args,
                    READS)


def tracks(args) -> list[str] | None:
    return [normalise_id(t) for t in args.tracks] if args.tracks else None   # as names.normalise does for --track


def write(args, text: str) -> None:
    out = Path(args.out)
    # written beside, then moved into place: a reader never opens half a report
    part = out.with_name(out.name + ".part")
    part.write_text(text, encoding="utf-8")
    part.replace(out)
    print(f"wrote {out} ({len(text.encode('utf-8')):,} bytes)", file=sys.stderr)
