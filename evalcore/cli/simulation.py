"""`evalcore simulator ...`, `evalcore chat simulate` and `evalcore simulator-audit`: simulated users registered, run
on a chat task, and checked against the task's people. Stored text goes to a terminal with control characters escaped."""
from __future__ import annotations

import json
import sys

import pandas as pd

from evalcore.cli.output import emit, escaped, on_wait, visible
from evalcore.services import jobs
from evalcore.simulation import audit as auditing
from evalcore.simulation import detection
from evalcore.simulation.judging import judge as run_judge
from evalcore.simulation.run import simulate as run_simulation
from evalcore.simulation.templates import resolve
from evalcore.store import Handle, lock_wait, resolve_db_path
from evalcore.store import simulators as registry
from evalcore.store.endpoints import get as get_endpoint


def add(con, args) -> None:
    get_endpoint(con, args.endpoint)   # an unknown endpoint: the sentence listing those registered
    resolve(args.template, "knowledge", "zh", args.style)   # a template that cannot be read is refused now
    registry.add(con, registry.Simulator(args.name, args.endpoint, args.style, args.template, args.seed),
                 replace=args.replace)
    print(f"simulator {escaped(args.name)}: endpoint {args.endpoint}, style {args.style}, template "
          f"{escaped(args.template) or 'each skill' + chr(39) + 's shipped one'}, seed {args.seed}")


def listing(con, args) -> None:
    emit(visible(registry.listing(con)), args.format)


def show(con, args) -> None:
    sim = registry.get(con, args.name)
    user = resolve(sim.template, args.skill, args.language, sim.style)
    print(f"simulator {escaped(sim.name)}: endpoint {sim.endpoint}, style {sim.style}, seed {sim.seed}")
    print(f"user template {user.name} (sha256 with the style {user.sha256[:12]}), for {args.skill}/{args.language}:\n")
    print(escaped(user.template.text))
    print(f"style {sim.style}: {user.style_text}")


def simulate(con, args) -> int:
    """The store is let go while requests are in flight (the dashboard serves it meanwhile), as `generate` does."""
    sims = [s.strip() for s in args.simulators.split(",")] if args.simulators else None
    handle = Handle(resolve_db_path(args.db), con, lock_wait(), on_wait)
    try:
        outcome = run_simulation(con, args.task_id, simulators=sims, concurrency=args.concurrency, progress=True,
                                 handle=handle)
    except KeyboardInterrupt:
        print("\nstopped by Ctrl-C: what was received is stored; run the same command again to go on", file=sys.stderr)
        return 130
    print(escaped(outcome.summary()))
    if outcome.jobs:
        for job in sorted(outcome.jobs):   # scored here and now, as an acceptance from `chat review` is
            jobs.run(handle.con, job)
        print(f"scoring jobs {', '.join(map(str, sorted(outcome.jobs)))} run on the accepted conversations")
    return 1 if outcome.failed else 0


def _cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Intervals as "[lo, hi]" text for a table."""
    if not len(frame):
        return frame
    return frame.map(lambda v: auditing.interval_text(v, "n/a") if isinstance(v, tuple) else v)


def audit(con, args) -> int:
    result = auditing.audit(con, args.task, counted=("rated", "accepted") if args.all else ("accepted",),
                            rated_by=args.rated_by)
    if result["missing"]:
        print(f"simulator audit of chat task {args.task}: nothing to audit yet: {result['missing']}", file=sys.stderr)
        return 1
    told = detection.report(con, args.task)
    if args.format == "json":
        out = {k: json.loads(_cells(result[k]).to_json(orient="records")) for k in
               ("summary", "rankings", "differences", "behaviour")}
        out["verdicts"] = result["verdicts"]
        out["can people tell"] = {"rating task": told["task"], "verdict": told["verdict"],
                                  "overall": told["overall"], "per simulator": told["per simulator"]}
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    print(f"simulator audit of chat task {args.task}: {result['people']} conversations held by people, "
          f"{len(result['conversations']) - result['people']} by simulators, counted: {', '.join(result['counted'])}; "
          f"simulated conversations rated by {escaped(result['rated_by'])}")
    print("intervals: 95% bootstrap, 1,000 resamples (seed 0), of scenarios for rankings, of conversations for behaviour\n")
    for sim, sentences in result["verdicts"].items():
        print(escaped(sim))
        for s in sentences:
            print("  " + escaped(s))
    for title, key in (("rankings", "rankings"), ("each system, simulated minus people", "differences"),
                       ("behaviour of the user, simulated against people (Hedges' g)", "behaviour"),
                       ("side by side", "summary")):
        print(f"\n{title}:")
        emit(visible(_cells(result[key])), "table", 3)
    print("\ncan people tell? " + (f"(rating task {told['task']}) {told['verdict']}" if told["task"] else
                                   f"not asked: `evalcore chat detect {args.task}` makes the rating task"))
    return 0


def judge(con, args) -> int:
    out = run_judge(con, args.task_id, args.judge, held_by=args.held_by,
                    counted=("rated", "accepted") if args.all else ("accepted",), concurrency=args.concurrency)
    print(f"chat task {args.task_id}: {out['judged']} whole-conversation ratings by {args.judge} stored now "
          f"({out['asked']} asked)" + (f"; no rubric for {', '.join(out['skipped'])}" if out["skipped"] else ""))
    for why, n in out["failed"].most_common():
        print(f"  {n} without a rating: {escaped(why)}")
    return 1 if out["failed"] else 0


def detect(con, args) -> int:
    rid = detection.create(con, args.task_id, per_dialogue=args.per_dialogue, seed=args.seed)
    print(rid)
    print(f"rating task {rid} asks \"Was the user a person?\" of every accepted conversation of chat task "
          f"{args.task_id}, people's and simulated mixed: people answer it on the Annotate page; "
          f"`evalcore simulator-audit --task {args.task_id}` reports the detection accuracy", file=sys.stderr)
    return 0
