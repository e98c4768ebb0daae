"""`evalcore task ACTION`: human rating tasks created, listed, shown, closed, reopened, deleted and exported, and
the annotators who entered them. Stored text goes to a terminal with its control characters escaped."""
from __future__ import annotations

import json
import sys

from evalcore.cli import crowd
from evalcore.cli.output import emit, visible
from evalcore.core.text import CONTROL
from evalcore.services import tasks
from evalcore.store import annotators as people
from evalcore.store import history
from evalcore.store import tasks as stored


def create(con, args) -> int | None:
    split = lambda text: [t.strip() for t in (text or "").split(",") if t.strip()] or None  # noqa: E731
    try:   # flags that do not go together are a usage error (exit 2, as the parser's own), before any reading
        tasks.check_sampling(args.mode, args.sampling, args.level, args.judge)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.platform:   # a crowd study's settings, checked before anything is written
        crowd.settings(args)
    task_id = tasks.create_task(con, dataset=args.dataset, mode=args.mode, dimensions=split(args.dimensions) or [],
                                items=args.items, per_item=args.per_item, tracks=split(args.tracks),
                                models=split(args.models), seed=args.seed, name=args.name, sampling=args.sampling,
                                ties=not args.no_ties, guidelines=args.guidelines, created_by=history.current_user(),
                                level=args.level, judge=args.judge, lang=args.lang)
    task = stored.get(con, task_id)
    n_units = len(stored.units(con, task_id))
    print(task_id)
    print(f"task {task_id}: {n_units} units, K = {task.per_item}; annotators open the "
          f"dashboard's /annotate?task={task_id} page and give the access code {task.access_code} with their name",
          file=sys.stderr)
    if task.sampling == "active":
        print(f"active sampling drew {n_units} units where {args.items} were asked for (each response is drawn on "
              f"its own with its probability, stored with the unit: the count varies around the number asked)",
              file=sys.stderr)
    if args.platform:
        crowd.opened(con, task_id, args)
    for note in tasks.coverage(con, task_id):
        print(f"warning: {note}", file=sys.stderr)


def listing(con, args) -> None:
    emit(visible(stored.listing(con)), args.format)


def export(con, args) -> None:
    frame = tasks.export(con, args.task_id)
    if sys.stdout.isatty():   # to a terminal: escaped; to a file: the stored text (an importer says what is wrong)
        frame = visible(frame)
    if args.format == "csv":
        frame.to_csv(sys.stdout, index=False)
    else:
        print(frame.to_json(orient="records", lines=True, force_ascii=False, date_format="iso"), end="")


def show(con, args) -> None:
    shown = tasks.describe(stored.get(con, args.task_id))
    print(CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(shown, indent=2, ensure_ascii=False)))
    emit(visible(stored.progress(con, stored.get(con, args.task_id))), "table")


def annotators(con, args) -> None:
    emit(visible(people.listing(con)), args.format)


def reset_key(con, args) -> None:
    person, key = people.reset(con, args.annotator)
    print(key)
    print(f"a new personal key for {person}, shown this once (the old one no longer works): they enter with "
          "their name and this key", file=sys.stderr)


def delete(con, args) -> None:
    sid = stored.delete(con, args.task_id)
    print(f"task {args.task_id} deleted: its ratings and votes are set aside under submission {sid} "
          f"(`python -m evalcore restore {sid}` brings them back)")


def close(con, args) -> None:
    stored.set_state(con, args.task_id, "closed")
    print(f"task {args.task_id} closed")


def reopen(con, args) -> None:
    stored.set_state(con, args.task_id, "open")
    print(f"task {args.task_id} open again")
