"""`evalcore crowd ACTION` (with --chat: of a chat task): a rating or chat task opened for a crowd platform, its link, gold units and comprehension
questions, a chat study's instruction checks, its workers and their quality, and exclusions (evalcore.services.crowd). Stored text goes to a terminal
with its control characters escaped; platform identifiers are printed only when asked (--with-identifiers)."""
from __future__ import annotations

import sys

from evalcore.cli.output import emit, visible
from evalcore.services import crowd
from evalcore.store import crowd as crowd_store
from evalcore.store import history
from evalcore.store import tasks as stored


def settings(args) -> dict:
    """The study's settings from `task create --platform` or `crowd open`."""
    if not args.completion_code:
        raise ValueError("--completion-code is needed with --platform: the code a worker who passes gets")
    return dict(platform=args.platform, completion_code=args.completion_code, failed_code=args.failed_code,
                redirect=args.redirect, units=args.units_per_worker, gold=args.gold_per_worker, pay=args.pay,
                currency=args.currency, pass_rule={"gold_min": args.gold_min, "too_fast_max": args.too_fast_max})


def _kind(args) -> str:
    return "chat" if getattr(args, "chat", False) else "rating"


def opened(con, task_id: int, args, kind: str = "rating") -> None:
    study = crowd.open_study(con, task_id, kind=kind, **settings(args))
    if kind == "chat":
        print(f"chat task {task_id} is open to {study.platform}: {study.units} conversations per worker"
              + (f", {study.gold} of them with an instruction check (add it: `evalcore crowd instruction --chat "
                 f"{task_id} --text ... --expect WORD`)" if study.gold else ""), end="", file=sys.stderr)
    else:
        print(f"task {task_id} is open to {study.platform}: {study.units} units per worker"
              + (f", {study.gold} of them gold (add them: `evalcore crowd gold {task_id} ...`)" if study.gold else ""),
              end="", file=sys.stderr)
    print(f"; paste this link into the platform (your dashboard's address in place of localhost): "
          + crowd.link(study, "http://localhost:8501"), file=sys.stderr)


def open_command(con, args) -> None:
    opened(con, args.task_id, args, _kind(args))


def link_command(con, args) -> None:
    study = _study(con, args.task_id, _kind(args))
    print(crowd.link(study, args.base))


def _study(con, task_id: int, kind: str = "rating"):
    crowd.task_of(con, kind, task_id)
    study = crowd.study_of(con, task_id, kind)
    if study is None:
        flag = " --chat" if kind == "chat" else ""
        raise ValueError(f"{'chat ' if kind == 'chat' else ''}task {task_id} is not open to a crowd platform "
                         f"(`evalcore crowd open{flag} {task_id} ...`)")
    return study


def gold_command(con, args) -> None:
    if _kind(args) == "chat":
        raise ValueError("a chat study's gold checks are instructions inside the scenario: `evalcore crowd "
                         "instruction --chat TASK --text ... --expect WORD`")
    _study(con, args.task_id)
    low, __, high = args.expect.partition(":")
    try:
        low_v, high_v = float(low), float(high) if high else None
    except ValueError:
        raise ValueError(f"--expect is LOW or LOW:HIGH, e.g. 0 or 1:2, got {args.expect!r}") from None
    units = crowd.make_gold(con, args.task_id, why=args.kind, dimension=args.dimension, low=low_v, high=high_v,
                            count=args.count, item_id=args.item, response=args.response)
    print(f"task {args.task_id}: gold units {', '.join(map(str, units))} added ({args.kind}, {args.dimension} "
          f"expected {args.expect})")


def question_command(con, args) -> None:
    kind = _kind(args)
    _study(con, args.task_id, kind)
    no = crowd_store.add_question(con, args.task_id, args.question, args.option, args.answer - 1, kind=kind)
    print(f"task {args.task_id}: comprehension question {no} added")


def instruction_command(con, args) -> None:
    if _kind(args) != "chat":
        raise ValueError("instruction checks are a chat study's: give --chat (a rating study's are `crowd gold`)")
    study = _study(con, args.task_id, "chat")
    no = crowd.add_instruction(con, args.task_id, args.text, args.expect)
    print(f"chat task {args.task_id}: instruction check {no} added (shown inside the scenario of {study.gold} "
          f"conversation{'s' * (study.gold != 1)} per worker)")


def workers_command(con, args) -> None:
    kind = _kind(args)
    _study(con, args.task_id, kind)
    emit(visible(crowd_store.workers(con, kind, args.task_id, identifiers=args.with_identifiers)), args.format)


def quality_command(con, args) -> None:
    kind = _kind(args)
    study = _study(con, args.task_id, kind)
    if kind == "chat":
        emit(visible(crowd.chat_quality(con, study, crowd.task_of(con, kind, args.task_id))), args.format)
    else:
        emit(visible(crowd.quality(con, study, stored.get(con, args.task_id))), args.format)


def exclude_command(con, args) -> None:
    kind = _kind(args)
    _study(con, args.task_id, kind)
    flag = " --chat" if kind == "chat" else ""
    decision = crowd.exclude(con, args.task_id, args.annotator, reason=args.reason, by=history.current_user(),
                             kind=kind)
    print(f"{args.annotator} excluded (decision {decision}): their ratings of {'chat ' * (kind == 'chat')}task "
          f"{args.task_id} left every analysis; `evalcore crowd include{flag} {args.task_id} {args.annotator} "
          "--reason ...` puts them back")


def include_command(con, args) -> None:
    kind = _kind(args)
    _study(con, args.task_id, kind)
    decision = crowd.include(con, args.task_id, args.annotator, reason=args.reason, by=history.current_user(),
                             kind=kind)
    print(f"{args.annotator} put back (decision {decision}): their ratings of {'chat ' * (kind == 'chat')}task "
          f"{args.task_id} count again")
