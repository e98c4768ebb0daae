"""`evalcore estimate` (a system's mean on a human dimension from a predictor calibrated by people, PPI++) and
`evalcore plan` (how many ratings a question needs, or what a budget or a task's ratings settle)."""
from __future__ import annotations

import json
import math
import sys

import pandas as pd

from evalcore.cli.commands import READS
from evalcore.cli.output import emit, escaped, visible
from evalcore.cli.running import on_store
from evalcore.services import estimate as estimating
from evalcore.services import planner


def estimate(con, args) -> int:
    try:
        got = estimating.estimate(con, args.dataset, args.dimension, args.predictor, track=args.track,
                                  assume_random=args.assume_random, task=args.task)
    except estimating.NotRandom as e:
        print(f"estimate refused: {e}", file=sys.stderr)
        return 2
    rows = got["rows"]
    if args.format == "csv":   # one row per model (and track): what the users script against
        emit(rows, "csv")
        return 0
    if args.format == "json":
        print(json.dumps({k: (json.loads(v.to_json(orient="records")) if isinstance(v, pd.DataFrame) else v)
                          for k, v in got.items()}, ensure_ascii=False, indent=2))
        return 0
    print(f"{escaped(got['dataset'])}, {escaped(got['dimension'])}: estimator {got['estimator']}")
    print(f"predictor {escaped(got['predictor'])}: {escaped(got['signature'])}")
    print(f"assumption: {got['assumption']}")
    print(f"stopping: {got['stopping']}")
    print("n_people: responses people rated; n_predicted: responses the predictor valued; people_*: the people-only "
          "estimate at the same ratings; gain: people-only width / calibrated width\n")
    emit(visible(rows), "table", digits=3)
    if len(got["differences"]):
        print("\npaired differences (a - b), 95% intervals; settled: the interval excludes 0")
        emit(visible(got["differences"]), "table", digits=3)
    return 0


def plan(args) -> int:
    """A plan from stated assumptions needs no store; one from a pilot or a task reads it."""
    if args.dataset is None and args.task is None:
        return _plan(None, args)
    return on_store(_plan, args, READS)


def _plan(con, args) -> int:
    got = planner.plan(con, args.question, dataset=args.dataset, dimension=args.dimension, track=args.track,
                       models=[m for m in (args.models or "").split(",") if m] or None, effect=args.effect,
                       sd=args.sd, rater_sd=args.rater_sd, raters=args.raters, budget=args.budget,
                       predictor=args.predictor, r=args.r, p=args.p, half_width=args.half_width, task=args.task)
    if args.format != "table":
        emit(visible(got["rows"]), args.format)
        return 0
    print(f"question: {args.question}; spread from {escaped(got['source'])}; power 0.8, alpha 0.05 (two-sided)")
    for row in got["rows"].to_dict("records"):
        need = row["units_needed"]
        what = "units per system" if args.question in ("difference", "ranking") else "rated units"
        line = (f"  {escaped(row['with'])}: {need:,} {what}" if need is not None and not _nan(need)
                else f"  {escaped(row['with'])}: no number of units reaches it")
        if args.raters > 1 and args.question in ("difference", "ranking"):
            line += f", each rated by {args.raters} people"
        if row["budget"] and not _nan(row["budget"]):
            line += (f"; at {int(row['budget']):,}: power {row['power_at_budget']:.2f}" if not _nan(row["power_at_budget"])
                     else f"; at {int(row['budget']):,}:")
            line += f", interval +-{row['half_width_at_budget']:.3g}" if not _nan(row["half_width_at_budget"]) else ""
            line += f", smallest detectable {row['mde_at_budget']:.3g}" if not _nan(row["mde_at_budget"]) else ""
        print(line)
        if row["notes"]:
            print(f"    {escaped(row['notes'])}")
    if got["resampled"] is not None:
        low, high = got["resampled"]
        print("  the pilot resampled (200 draws of its units): " + (
            f"people only would need {low:,.0f} to {high:,.0f} units per system (10th to 90th percentile)"
            if not (_nan(low) or _nan(high)) else "most resamples reach no plan: the pilot is too small to plan from"))
    if len(got["raters"]) and got["raters"]["units_needed"].notna().all():
        print("\nper number of people rating each unit (units per system, and the ratings they cost):")
        emit(got["raters"], "table")
    if len(got["settles"]):
        print("\nwhat the task's ratings settle (people only, 95% intervals of a - b; detectable: the smallest "
              "difference these ratings find with power 0.8):")
        emit(visible(got["settles"]), "table", digits=3)
    return 0


def _nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)
