"""What the Rating tasks page and the Chat tasks page show and do for a crowd study (evalcore.services.crowd): the
study's settings, the link to paste into the platform, its workers with their quality and outcome, the decisions that excluded a worker
or put them back, and the form that opens a task to a platform. Each view takes a rating task's id, or with
kind="chat" a chat task's (a chat task and a rating task may share a number). The platform identifiers are read only by
`identifiers`, which the page calls only for those with write access; every other view carries pseudonyms. The study's
set-up, as `evalcore crowd gold|question|instruction` adds it: gold units (counted, never which units), comprehension
questions with their right answers (for those with write access), a chat study's instruction checks."""
from __future__ import annotations

from urllib.parse import urlsplit

import duckdb
import pandas as pd

from evalcore.core import i18n
from evalcore.core.i18n import N_, _, ngettext
from evalcore.core.text import bad_character
from evalcore.services import crowd
from evalcore.store import crowd as stored
from evalcore.store import tasks as task_store

Refused = crowd.Refused
Study = crowd.Study
PLATFORMS = crowd.PLATFORMS
RULE = crowd.RULE
# a platform as the page names it (the id stays in the store and the link)
PLATFORM_NAMES = {"prolific": "Prolific", "mturk": "Amazon Mechanical Turk", "generic": N_("another platform")}
# a worker's outcome, shown in the viewer's words
OUTCOMES = {"working": N_("working"), "passed": N_("passed"), "failed": N_("failed")}
# the workers' table as the page shows it, in this order (platform_id after the pseudonym, when asked)
COLUMNS = ["annotator", "outcome", "excluded", "reason", "units", "gold_share", "loo_spearman", "competence",
           "too_fast_share", "straight_lined", "median_seconds", "hourly_pay", "other_identity"]
# a chat study's workers (crowd.chat_quality): conversations finished, instruction checks answered and followed
CHAT_COLUMNS = ["annotator", "outcome", "excluded", "reason", "conversations", "checks", "checks_passed", "gold_share",
                "seconds", "hourly_pay", "other_identity"]


def from_platform(query) -> bool:
    """Whether a page's URL carries a crowd platform's worker identifier (a study's link): its worker sees that page
    alone, without the dashboard's navigation (app.py)."""
    return any(params.worker in query for params in crowd.PARAMS.values())


def platform_name(platform: str) -> str:
    name = PLATFORM_NAMES.get(platform, platform)
    return _(name) if platform == "generic" else name


def study(con: duckdb.DuckDBPyConnection, task_id: int, kind: str = "rating") -> crowd.Study | None:
    """The crowd study a task is opened as (None: the lab's own annotators rate it, or people given the link)."""
    return crowd.study_of(con, task_id, kind)


def study_link(study: crowd.Study, base: str) -> str:
    """The study URL to paste into the platform, on the server of `base` (any path or query in it dropped, as the
    page's other links)."""
    parts = urlsplit(base)
    root = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else base
    return crowd.link(study, root)


def settings_lines(study: crowd.Study) -> list[str]:
    """The study's settings as sentences: the platform, units and gold per worker (a chat study's: conversations,
    and those with an instruction check), the pay."""
    if study.kind == "chat":
        lines = [_("Open to {platform}: each worker holds {units} conversations, {gold} of them with an instruction "
                   "check.").format(platform=platform_name(study.platform), units=i18n.number(study.units),
                                    gold=i18n.number(study.gold))]
    else:
        lines = [_("Open to {platform}: each worker rates {units} units, {gold} of them gold units.").format(
            platform=platform_name(study.platform), units=i18n.number(study.units), gold=i18n.number(study.gold))]
    if study.pay is None:
        lines.append(_("No pay stated: the hourly pay is not computed."))
    else:
        lines.append(_("Pay per worker: {pay} {currency}.").format(pay=i18n.number(study.pay, 2),
                                                                   currency=study.currency)
                     if study.currency else _("Pay per worker: {pay}.").format(pay=i18n.number(study.pay, 2)))
    return lines


def rule_lines(rule: dict, kind: str = "rating") -> list[str]:
    """The pass rule as sentences, one per condition a worker must meet. A chat study's (kind "chat"): the share of
    instruction checks followed, the comprehension questions, no second identity (reading speed and straight-lining
    are a rating's: crowd.failing does not apply them)."""
    lines = []
    if kind == "chat":
        if rule.get("gold_min") is not None:
            lines.append(_("At least {share} of the instructions given inside a scenario followed.").format(
                share=i18n.percent(rule["gold_min"])))
        rule = {k: v for k, v in rule.items() if k in ("comprehension", "identity")}
    elif rule.get("gold_min") is not None:
        lines.append(_("At least {share} of their gold units answered within the expected range.").format(
            share=i18n.percent(rule["gold_min"])))
    if rule.get("too_fast_max") is not None:
        lines.append(_("At most {share} of their answers given faster than the text can be read.").format(
            share=i18n.percent(rule["too_fast_max"])))
    if rule.get("comprehension"):
        lines.append(_("The comprehension questions passed (two attempts)."))
    if rule.get("straight_lining") is False:
        lines.append(_("Not the same answer on every unit of a dimension."))
    if rule.get("identity"):
        lines.append(_("No second identity tried from the same browser."))
    if rule.get("competence_min") is not None:
        lines.append(_("A competence estimate (MACE) of at least {minimum}.").format(
            minimum=i18n.number(rule["competence_min"], 2)))
    return lines


def where_to_paste(study: crowd.Study) -> str:
    """What to do with the link on the study's platform."""
    if study.platform == "prolific":
        return _("On Prolific: paste it as the study URL and choose \"I'll use URL parameters\"; Prolific fills in "
                 "the worker's, study's and session's identifiers. Give Prolific the completion code below.")
    if study.platform == "mturk":
        return _("On MTurk: make an External Question HIT with this link as its ExternalURL; MTurk appends workerId, "
                 "assignmentId and hitId. Ask for the completion code in the HIT, or set a redirect.")
    return _("On another platform: it appends worker_id, study_id and session_id to this link.")


def way_back(study: crowd.Study) -> str | None:
    """Where a worker who passes is sent with their code (None: they type the code in on the platform). It carries
    the completion code: for those with write access only."""
    return crowd.way_back(study, study.completion_code)


def workers(con: duckdb.DuckDBPyConnection, task_id: int, kind: str = "rating") -> pd.DataFrame:
    """Every worker of the study, COLUMNS: pseudonym, outcome, excluded and why, and their quality (gold share,
    leave-one-out Spearman, MACE competence, answers too fast, straight-lining, median seconds, hourly pay), and the
    second identities they tried. A chat study's, CHAT_COLUMNS: conversations finished, instruction checks answered
    and followed, seconds in conversations, hourly pay. No platform identifier."""
    columns = CHAT_COLUMNS if kind == "chat" else COLUMNS
    found = crowd.study_of(con, task_id, kind)
    if found is None or stored.workers(con, kind, task_id).empty:
        return pd.DataFrame(columns=columns)
    frame = crowd.chat_quality(con, found, crowd.task_of(con, kind, task_id)) if kind == "chat" else \
        crowd.quality(con, found, task_store.get(con, task_id))
    for column in columns:
        if column not in frame:
            frame[column] = None
    return frame[columns].reset_index(drop=True)


def identifiers(con: duckdb.DuckDBPyConnection, task_id: int, kind: str = "rating") -> dict[str, str]:
    """pseudonym -> platform identifier: personal data, for those with write access only (to approve and pay on the
    platform)."""
    frame = stored.workers(con, kind, task_id, identifiers=True)
    return dict(zip(frame["annotator"], frame["platform_id"]))


def counts(frame: pd.DataFrame) -> str:
    """The workers in one sentence: entered, finished, passed, failed, excluded now."""
    n = len(frame)
    outcome = frame["outcome"] if n else pd.Series([], dtype=str)
    return ngettext("{entered} worker entered: {finished} finished, {passed} passed, {failed} failed the pass rule; "
                    "{excluded} excluded now.",
                    "{entered} workers entered: {finished} finished, {passed} passed, {failed} failed the pass rule; "
                    "{excluded} excluded now.", n).format(
        entered=i18n.number(n), finished=i18n.number(int((outcome != "working").sum())),
        passed=i18n.number(int((outcome == "passed").sum())), failed=i18n.number(int((outcome == "failed").sum())),
        excluded=i18n.number(int(frame["excluded"].astype(bool).sum()) if n else 0))


def decisions(con: duckdb.DuckDBPyConnection, task_id: int, kind: str = "rating") -> pd.DataFrame:
    """Every decision that excluded a worker or put them back, oldest first: when, whom, which, why, who."""
    frame = stored.decisions(con, task_id, kind)
    out = pd.DataFrame({"decided_at": frame["decided_at"], "annotator": frame["annotator"],
                        "decision": ["excluded" if e else "put back" for e in frame["excluded"]],
                        "reason": frame["reason"], "decided_by": frame["decided_by"]})
    return out


def exclude(con: duckdb.DuckDBPyConnection, task_id: int, annotator: str, *, reason: str, by: str,
            kind: str = "rating") -> int:
    """Exclude a worker (Refused: not a worker of the task, or excluded already): their ratings leave every
    analysis, logged."""
    return crowd.exclude(con, task_id, annotator, reason=reason, by=by, kind=kind)


def include(con: duckdb.DuckDBPyConnection, task_id: int, annotator: str, *, reason: str, by: str,
            kind: str = "rating") -> int:
    """Put a worker back (Refused: not excluded): their ratings count again, logged."""
    return crowd.include(con, task_id, annotator, reason=reason, by=by, kind=kind)


def open_study(con: duckdb.DuckDBPyConnection, task_id: int, *, platform: str, completion_code: str,
               failed_code: str | None, redirect: str | None, units: int, gold: int, pay: float | None,
               currency: str | None, gold_min: float, too_fast_max: float | None = None,
               kind: str = "rating") -> crowd.Study:
    """Open an open task to a crowd platform from the page's form (Refused, with its sentence: a setting refused).
    Empty texts are settings not given. A chat study's units are conversations, its gold their instruction checks,
    and its pass rule reads no reading speed (too_fast_max is a rating's)."""
    if not _blank(completion_code):
        raise Refused(_("A crowd study needs its completion code: the code a worker who passes gets."))
    rule = {"gold_min": float(gold_min)}
    if too_fast_max is not None and kind != "chat":
        rule["too_fast_max"] = float(too_fast_max)
    return crowd.open_study(con, task_id, kind, platform=platform, completion_code=completion_code.strip(),
                            failed_code=_blank(failed_code), redirect=_blank(redirect), units=int(units),
                            gold=int(gold), pay=pay, currency=_blank(currency), pass_rule=rule)


def _blank(value: str | None) -> str | None:
    return (value or "").strip() or None


# ---------------------------------------------------------------- a study's set-up: gold units, questions, checks
# The same calls and refusals as `evalcore crowd gold|question|instruction` (evalcore/cli/crowd.py), from the forms
# of the study's part (write access only).
GOLD_KINDS = stored.GOLD_KINDS
# a gold unit's kind as the page names it (the id stays in the store and the CLI)
GOLD_NAMES = {"nonsense": N_("nonsense"), "copies-knowledge": N_("copies the knowledge"), "custom": N_("custom")}
GOLD_COLUMNS = ["kind", "dimension", "expected", "units"]
MAX_OPTIONS = 6   # the answers one comprehension question offers on the page's form
MAX_INSTRUCTION = stored.MAX_INSTRUCTION   # characters of a chat study's instruction


def gold_name(kind: str) -> str:
    return _(GOLD_NAMES[kind]) if kind in GOLD_NAMES else kind


def gold_counts(con: duckdb.DuckDBPyConnection, task_id: int) -> pd.DataFrame:
    """How many gold units the task holds per kind, dimension and expected answers (GOLD_COLUMNS; the kind an id):
    counts only, never which units are gold."""
    frame = stored.gold(con, task_id)
    if frame.empty:
        return pd.DataFrame(columns=GOLD_COLUMNS)
    frame["expected"] = [f"{low:g}" if low == high else f"{low:g}:{high:g}"
                         for low, high in zip(frame["low"], frame["high"])]
    out = frame.groupby(["why", "dimension", "expected"], sort=True)["unit"].nunique().reset_index()
    return out.rename(columns={"why": "kind", "unit": "units"})[GOLD_COLUMNS]


def gold_units(con: duckdb.DuckDBPyConnection, task_id: int) -> int:
    """How many units of the task are gold."""
    return len(stored.gold_units(con, task_id))


def add_gold(con: duckdb.DuckDBPyConnection, task_id: int, *, kind: str, dimension: str, expect: str, count: int,
             item: str | None = None, response: str | None = None) -> int:
    """Gold units added, as `evalcore crowd gold` adds them (Refused, with its sentence: no crowd study, the
    expected answers not LOW or LOW:HIGH or outside the dimension's scale, a custom unit without its item and reply,
    too few items to make them); how many were added."""
    if crowd.study_of(con, task_id) is None:
        raise Refused(_("Task {task} is not open to a crowd platform.").format(task=task_id))
    low, __, high = (expect or "").strip().partition(":")
    try:
        low_v, high_v = float(low), float(high) if high.strip() else None
    except ValueError:
        raise Refused(_("The expected answer is LOW or LOW:HIGH, e.g. 0 or 1:2, not {got}.").format(
            got=repr(expect))) from None
    if kind == "custom" and (not _blank(item) or not _blank(response)):
        raise Refused(_("A custom gold unit needs its item and the reply shown."))
    _written(response)
    units = crowd.make_gold(con, task_id, why=kind, dimension=dimension, low=low_v, high=high_v, count=int(count),
                            item_id=_blank(item) if kind == "custom" else None,
                            response=response if kind == "custom" else None)
    return len(units)


def questions_with_answers(con: duckdb.DuckDBPyConnection, task_id: int,
                           kind: str = "rating") -> list[tuple[int, str, list[str], int]]:
    """The study's comprehension questions in order: (number, question, options, the right option's index from 0).
    The right answers: for those with write access only (the workers' page reads crowd.questions, without them)."""
    right = stored.right_answers(con, task_id, kind)
    return [(no, text, options, int(right[no])) for no, text, options in crowd.questions(con, task_id, kind)]


def add_question(con: duckdb.DuckDBPyConnection, task_id: int, question: str, options: str, answer: int,
                 kind: str = "rating") -> int:
    """A comprehension question added, as `evalcore crowd question` adds it: `options` one a line, `answer` the right
    one's number from 1 (Refused, with its sentence: no crowd study, no text, fewer than two different options or
    more than six, the answer not one of them, a control character); its number."""
    if crowd.study_of(con, task_id, kind) is None:
        raise Refused(_("Task {task} is not open to a crowd platform.").format(task=task_id))
    offered = [line.strip() for line in (options or "").splitlines() if line.strip()]
    if len(offered) > MAX_OPTIONS:
        raise Refused(_("A comprehension question offers at most {most} answers here, one a line; this one "
                        "{n}.").format(most=MAX_OPTIONS, n=len(offered)))
    for text in (question, *offered):
        _written(text)
    return stored.add_question(con, task_id, question, offered, int(answer) - 1, kind=kind)


def instructions(con: duckdb.DuckDBPyConnection, task_id: int) -> list[tuple[int, str, str]]:
    """A chat study's instruction checks in order: (number, instruction, the word a message must contain)."""
    return stored.instructions(con, task_id, "chat")


def add_instruction(con: duckdb.DuckDBPyConnection, task_id: int, text: str, expect: str) -> int:
    """An instruction check added to a chat study, as `evalcore crowd instruction --chat` adds it (Refused, with
    its sentence: no crowd study, no text or word, too long, a control character); its number."""
    if crowd.study_of(con, task_id, "chat") is None:
        raise Refused(_("Chat task {task} is not open to a crowd platform.").format(task=task_id))
    return crowd.add_instruction(con, task_id, text, expect)


def _written(text: str | None) -> None:
    """Refused when a text people will read holds a control character (as the CLI's written_text)."""
    bad = bad_character(text or "")
    if bad:
        raise Refused(_("A text people will read may not hold a {bad}.").format(bad=bad))


# ---------------------------------------------------------------- a worker's own pages (Annotate, Chat)
# The same on both pages: evalcore.pagedata.annotation and evalcore.pagedata.chats carry these names, with their own
# crowd_next / crowd_place, for pages/kit/crowd.py (which takes the page's module).
def crowd_enter(con: duckdb.DuckDBPyConnection, study: Study, ids: crowd.Ids, client: str | None):
    """The worker, entered or resumed (Refused: a preview, a closed study, a second identity)."""
    return crowd.enter(con, study, ids, client=client)


def crowd_questions(con: duckdb.DuckDBPyConnection, study: Study) -> list[tuple[int, str, list[str]]]:
    return crowd.questions(con, study.task_id, study.kind)


def crowd_check(con: duckdb.DuckDBPyConnection, study: Study, worker: str,
                answers: list[int | None]) -> tuple[bool, int]:
    return crowd.check(con, study, worker, answers)


def crowd_checked(con: duckdb.DuckDBPyConnection, study: Study, worker: str) -> str:
    return crowd.checked(con, study, worker)


def crowd_outcome(con: duckdb.DuckDBPyConnection, study: Study, worker: str) -> str | None:
    """'working', 'passed' or 'failed' (None: not entered)."""
    found = stored.worker(con, study.kind, study.task_id, worker)
    return found.outcome if found else None
