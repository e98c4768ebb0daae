"""Handler of `export eee` (declared in evalcore.cli.declarations_eee)."""
from __future__ import annotations

import time

from evalcore.core.text import normalise_id
from evalcore.services.eee_export import export_eee


def export(con, args) -> None:
    start = time.perf_counter()
    tracks = [normalise_id(t) for given in args.tracks or [] for t in given.split(",") if t.strip()] or None
    print(export_eee(con, args.dataset, args.out, tracks=tracks, organization=args.organization).render())
    print(f"took {time.perf_counter() - start:.1f} s")
