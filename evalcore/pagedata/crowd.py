"""What the Rating tasks page and the Chat tasks page show and do for a crowd study (evalcore.services.crowd): the
study's settings, the link to paste into the platform, its workers with their quality and outcome, the decisions that excluded a worker
or put them back, and the form that opens a task to a platform. Each view takes a rating task's id, or with
kind="chat" a chat task's (a chat task and a rating task may share a number). The platform identifiers are read only by
`identifiers`, which the page calls only for those with write access; every other view carries pseudonyms."""
from __future__ import annotations

from urllib.parse import urlsplit

import duckdb
import pandas as pd

from evalcore.core import i18n
from evalcore.core.i18n import N_, _, ngettext
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
