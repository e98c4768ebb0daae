"""`evalcore trust`: which metric to trust for which skill, the verdicts first, then the table as a person
reads it (or as CSV or JSON for a program)."""
from __future__ import annotations

import sys

from evalcore.analysis.options import DIALOGUE_VALUE
from evalcore.analysis.trust import POOLED
from evalcore.analysis.trust_levels import choices, dimensions, missing
from evalcore.analysis.trust_opening import opening
from evalcore.analysis.trust_verdicts import report
from evalcore.cli.analysis import chosen_models, other_configs, reference_copies
from evalcore.cli.output import emit
from evalcore.core.words import count


def trust(con, args) -> None:
    args.level, args.origin = setting(con, args)
    reference_copies(con, args)
    other_configs(con, args)
    options = dict(flavor=args.flavor, tokenizer=args.tokenizer, aggregate=args.aggregate, models=chosen_models(args),
                   system_aggregate=args.system_aggregate, alpha=args.alpha, adjust=args.adjust)
    dims = dimensions(con, args.dataset)
    frame, said = report(con, args.dataset, level=args.level, method=args.method, dimension=args.dimension,
                         origin=args.origin, dimensions=dims, **options)
    # The verdicts first, one line per skill: on standard output before a table, on standard error before
    # CSV or JSON (which stay machine-readable).
    out = sys.stdout if args.format == "table" else sys.stderr
    print(f"{args.method.capitalize()} with human {args.dimension} at {args.level} level ({args.origin} metric "
          f"values); significant: p < {args.alpha:g}" + (", Holm-adjusted over each skill's metrics" if args.adjust ==
                                                          "holm" else ""), file=out)
    if args.level == "dialogue":
        print(DIALOGUE_VALUE, file=out)
    for row in said.itertuples():
        print(row.text + (f"\n    {row.robust}" if row.robust else ""), file=out)
    print(file=out)
    if args.format != "table":
        emit(frame, args.format, 3)
        return
    table, undefined = as_read(frame)
    for line in undefined:
        print(line)
    if table:
        print(("\n" if undefined else "") + table)


def setting(con, args) -> tuple[str, str]:
    """The level and origin: as given, else the first with a verdict for some skill (evalcore.analysis.trust_opening.opening,
    as the dashboard opens), saying which and why; a dataset with no level to correlate is an error saying what
    is missing."""
    if args.level and args.origin:
        return args.level, args.origin
    if not choices(con, args.dataset):
        raise ValueError(missing(con, args.dataset))
    found = opening(con, args.dataset, method=args.method, dimension=args.dimension, flavor=args.flavor,
                    tokenizer=args.tokenizer, aggregate=args.aggregate, models=chosen_models(args),
                    system_aggregate=args.system_aggregate, level=args.level, origin=args.origin)
    if found.level is None:
        if args.level or args.origin:   # the user's own level or origin: trust() says why, and what works here
            return args.level or "system", args.origin or "computed"
        raise ValueError(f"nothing to correlate in {args.dataset!r}: {found.why}")
    print(f"note: --level {found.level} --origin {found.origin} (the first with a verdict in {args.dataset!r}"
          + (f"; {found.why}" if found.why else "") + "; give both to choose)", file=sys.stderr)
    return found.level, found.origin


def as_read(frame):
    """The trust table as printed for a person: every defined cell, blanks for what a cell lacks (no NaN, None
    or <NA>), and the cells with no correlation as one line per track and reason (the table would repeat it
    for every metric)."""
    undefined = frame[frame["r"].isna()].sort_values("track", key=lambda t: t.eq(POOLED), kind="stable")
    shown = frame[frame["r"].notna()].drop(columns=["ci"])
    lines, said = [], set()
    for (skill, track, note), part in undefined.groupby(["skill", "track", "note"], sort=False):
        if track == POOLED and (skill, note) in said:
            continue   # the pooled cell of a skill whose tracks said it already
        said.add((skill, note))
        where = f"{skill}, pooled over its tracks" if track == POOLED else f"{skill}, {track}"
        lines.append(f"no correlation ({where}): {note or 'undefined'}, for {count(len(part), 'metric')}")
    text = shown.round(3).astype(object).where(shown.notna(), "")
    return text.to_string(index=False) if len(shown) else "", lines
