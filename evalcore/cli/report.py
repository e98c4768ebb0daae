"""`evalcore report`: write a dataset's offline report (evalcore.services.report) to a file."""
from __future__ import annotations

import sys
from pathlib import Path

from evalcore.core.text import normalise_id
from evalcore.services.report import build


def report(con, args) -> None:
    tracks = [normalise_id(t) for t in args.tracks] if args.tracks else None   # as names.normalise does for --track
    text = build(con, args.dataset, tracks, tuple(args.view))
    out = Path(args.out)
    # written beside, then moved into place: a reader never opens half a report
    part = out.with_name(out.name + ".part")
    part.write_text(text, encoding="utf-8")
    part.replace(out)
    print(f"wrote {out} ({len(text.encode('utf-8')):,} bytes)", file=sys.stderr)
