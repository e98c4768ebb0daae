"""`evalcore chat ACTION`: interactive evaluations (people talk with blind endpoints on a track's scenarios, then
rate whole dialogues) created, listed, shown with their results, reviewed, closed, reopened, deleted and exported.
Stored text goes to a terminal with its control characters escaped."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from evalcore.cli import crowd
from evalcore.cli.output import emit, escaped, visible
from evalcore.core.export import safe_csv
from evalcore.core.text import CONTROL
from evalcore.services import chats as service
from evalcore.services import jobs
from evalcore.store import chats as stored
from evalcore.store import history


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def create(con, args) -> None:
    guidelines = ""
    if args.guidelines:
        try:
            guidelines = Path(args.guidelines).read_text(encoding="utf-8-sig")   # Notepad's byte-order mark is not text
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"--guidelines {args.guidelines}: cannot be read as UTF-8 text ({exc})") from None
    if args.platform:   # a crowd study's settings, checked before anything is written
        crowd.settings(args)
        if args.no_people:
            raise ValueError("--platform needs people to hold the conversations: drop --no-people")
    task_id = service.create_chat(con, dataset=args.dataset, track=args.track, endpoints=_split(args.endpoints) or [],
                                  per_scenario=args.per_scenario, max_rounds=args.max_rounds,
                                  n_scenarios=args.scenarios, seed=args.seed, dimensions=_split(args.dimensions),
                                  flags=_split(args.flags), guidelines=guidelines, name=args.name,
                                  review=not args.no_review, target=args.target, created_by=history.current_user(),
                                  simulators=_split(args.simulators), people=not args.no_people, lang=args.lang)
    task = stored.get(con, task_id)
    n = len(stored.conversations(con, task_id))
    print(task_id)
    holders = int(task.people) + len(task.simulators)
    print(f"chat task {task_id}: {n} conversations ({n // task.per_scenario // len(task.endpoints) // holders} scenarios x "
          f"{len(task.endpoints)} endpoints x {task.per_scenario}"
          + (f" x {holders} holders: {'people, ' if task.people else ''}{', '.join(task.simulators)}" if task.simulators
             else "") + ")"
          + (f"; people open the dashboard's /chat?task={task_id} page and give the access code {task.access_code} "
             f"with their name; accepted conversations become dataset {task.target}" if task.people else "")
          + (f"; `evalcore chat simulate {task_id}` runs the simulated ones (each simulator's become dataset "
             f"{task.target}-sim-<simulator>)" if task.simulators else ""), file=sys.stderr)
    if args.platform:
        crowd.opened(con, task_id, args, kind="chat")


def listing(con, args) -> None:
    emit(visible(stored.listing(con)), args.format)


def show(con, args) -> None:
    task = stored.get(con, args.task_id)
    print(CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}",
                      json.dumps(service.describe(task), indent=2, ensure_ascii=False, default=str)))
    result = service.results(con, args.task_id, counted=("rated", "accepted") if args.all else stored.COUNTED)
    states = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in sorted(result["states"].items()))
    print(f"\nconversations: {states}")
    print(f"per endpoint, over {'rated and accepted' if args.all else 'accepted'} conversations (ratings: mean and 95% "
          "bootstrap interval over conversations):")
    emit(visible(result["table"]), "table", 2)
    if len(result["sent_back"]):
        print(f"\n{len(result['sent_back'])} sent back:")
        emit(visible(result["sent_back"]), "table")


def review(con, args) -> None:
    stored.get(con, args.task_id)   # an unknown task is an error, not an empty queue
    if args.conversation is None:
        if args.accept or args.send_back:
            raise ValueError("say which conversation: --conversation ID")
        waiting = stored.conversations(con, args.task_id)
        waiting = waiting.loc[waiting["state"] == "rated", ["conversation_id", "scenario", "endpoint", "annotator",
                                                             "rounds", "goal", "ended_at"]]
        emit(visible(waiting), "table")
        print(f"{len(waiting)} waiting for review", file=sys.stderr)
        return
    conv = stored.conversation(con, args.conversation)
    if conv.task_id != args.task_id:
        raise ValueError(f"conversation {args.conversation} belongs to chat task {conv.task_id}, not {args.task_id}")
    if not (args.accept or args.send_back):
        raise ValueError("give --accept or --send-back REASON")
    new, job = service.review(con, args.conversation, history.current_user() or "reviewer", accept=args.accept,
                              reason=args.send_back or "")
    if args.accept:
        task = stored.get(con, args.task_id)
        print(f"conversation {args.conversation} accepted: dialogue {stored.dialogue_id_of(task, args.conversation)} "
              f"of {task.target_of(conv.simulator)}")
        # scored here and now, as `endpoint generate` scores its replies (the job was recorded with the acceptance)
        jobs.run(con, job)
        state, detail = con.execute("SELECT state, detail FROM jobs WHERE job_id = ?", [job]).fetchall()[0]
        print(f"scoring job {job} ({', '.join(service.reference_free())}): {state}: {escaped(detail)}")
    else:
        print(f"conversation {args.conversation} sent back; conversation {new} takes its place, for someone else")


def close(con, args) -> None:
    stored.set_state(con, args.task_id, "closed")
    print(f"chat task {args.task_id} closed")


def reopen(con, args) -> None:
    stored.set_state(con, args.task_id, "open")
    print(f"chat task {args.task_id} open again")


def delete(con, args) -> None:
    stored.set_state(con, args.task_id, "deleted")
    print(f"chat task {args.task_id} deleted (every message and rating is kept; `evalcore chat reopen "
          f"{args.task_id}` brings it back; its accepted dialogues stay in {stored.get(con, args.task_id).target})")


def export(con, args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in service.export(con, args.task_id).items():
        (out / f"{name}.csv").write_bytes(safe_csv(frame))
        print(f"{out / f'{name}.csv'}: {len(frame)} rows")
