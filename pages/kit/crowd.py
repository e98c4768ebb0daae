"""A crowd study's worker on the Annotate page (issue 65), or on the Chat page for a chat task's study: who they are
comes from the platform's link (no name, no access code, no personal key), then the comprehension questions (two
attempts), their share of units (the panel of pages/views/annotate.py, in its crowd mode) or of conversations
(pages/views/chat.py), and the end: the task's completion code, or its other code, and the way back to the platform.
The study's data come from `data`, the page's view module (evalcore.pagedata.annotation, or evalcore.pagedata.chats
for a chat study): the same functions by the same names. The platform's identifier is never shown, nor the pseudonym: "Unit 3 of 6" is all the page says
of where they are. Whatever is refused (an edited link, a preview, a closed study, a second identity) is one
sentence and nothing else."""
from __future__ import annotations

import hashlib
from types import ModuleType
from typing import Callable

import streamlit as st

from evalcore.core.errors import StoreError
from evalcore.core.i18n import _
from evalcore.pagedata import annotation as ann
from pages.kit import lang
from pages.kit.access import client_address
from pages.kit.identity import say
from pages.kit.state import publish
from pages.kit.text import md_escape

# the same sentence the store says when a browser that entered as one worker comes back as another
SECOND = ("This browser has taken part in this study as another worker already: one person takes part once. If this "
          "is a mistake, write to the researchers through the platform.")
CLOSED = "This study is closed: it takes no more answers. Return it on the platform."
# the completion code in large type; a fixed rule, no text of anyone's in it
CODE_STYLE = "<style>.st-key-crowd-code code { font-size: 1.8rem; letter-spacing: 0.08em; }</style>"


PAGES = {"rating": "annotate", "chat": "chat"}   # the page a study's worker is on


def _key(study: ann.Study, name: str) -> str:
    """A session key of the study's worker (a rating task and a chat task may share a number)."""
    return f"crowd-{name}-{study.task_id}" if study.kind == "rating" else f"crowd-chat-{name}-{study.task_id}"


def study_in_link(con, task: str | None, data: ModuleType = ann) -> ann.Study | None:
    """The crowd study the link's task is opened as (None: no such task, or the lab's own annotators rate it)."""
    if not task or not str(task).isdigit():
        return None
    try:
        return data.study_of(con, int(task))
    except (ValueError, StoreError):
        return None


def publish_study(study: ann.Study, notices: list[str], data: ModuleType = ann) -> None:
    """The page's link is the task's alone (publish), while the address bar keeps the platform's identifiers the
    worker came with: a reload of the page resumes them where they were."""
    kept = {name: st.query_params[name] for name in data.crowd_params(study) if st.query_params.get(name)}
    publish(PAGES[study.kind], {"task": str(study.task_id)}, notices)
    if kept:
        st.query_params.update(kept)


def _client() -> str | None:
    """The browser as the server sees it: its address and its User-Agent (None: neither is known)."""
    address = client_address()
    headers = getattr(st.context, "headers", None) or {}
    agent = headers.get("User-Agent") or ""
    return f"{address or ''}|{agent}" if address or agent else None


def _fingerprint(identifier: str) -> str:
    """What the session keeps of the worker's identifier: enough to tell another one, not the identifier."""
    return hashlib.sha256(identifier.encode("utf-8")).hexdigest()


def worker(con, study: ann.Study, task, *, intro: Callable[[], None], unit_key: str, data: ModuleType = ann,
           next_of: Callable[[str], int | None] | None = None) -> str:
    """The worker's pseudonym, with a unit to rate (a chat study: a conversation to hold) drawn for them by
    `next_of(pseudonym)` (default: data.crowd_next_unit) into session state `unit_key`; until then, draws the
    entry's refusal, the comprehension questions or the end, and stops the run."""
    if next_of is None:
        next_of = lambda annotator: data.crowd_next_unit(con, study, task, annotator)  # noqa: E731
    key = _key(study, "worker")
    try:
        ids = data.crowd_ids(study, {name: st.query_params.get(name) for name in data.crowd_params(study)})
    except data.Refused as exc:
        _refuse(exc)
    known = st.session_state.get(key)   # (fingerprint of their identifier, the worker)
    if ids is not None and known is not None and known[0] != _fingerprint(ids.worker):
        _refuse(_(SECOND))   # the session keeps its first worker
    if ids is None and known is None:
        st.info(_("This study is taken from a crowd platform: open it from the study's page there. The link "
                  "carries who you are on the platform, so there is nothing to type here."))
        lang.stop()
    if ids is not None:
        try:
            found = data.crowd_enter(con, study, ids, client=_client())
        except data.Refused as exc:
            _refuse(exc)
        st.session_state[key] = (_fingerprint(ids.worker), found)
    elif task.state != "open":
        _refuse(_(CLOSED))
    me = st.session_state[key][1]
    if data.crowd_outcome(con, study, me.worker) not in (None, "working"):
        ending(con, study, me.worker, data)
    checked = data.crowd_checked(con, study, me.worker)
    if checked == "failed":
        ending(con, study, me.worker, data)
    if checked == "open":
        comprehension(con, study, task, me.worker, intro, data)
    if st.session_state.get(unit_key) is None:
        st.session_state[unit_key] = next_of(me.annotator)
        if st.session_state[unit_key] is None:   # their share is done
            ending(con, study, me.worker, data)
    return me.annotator


def _refuse(exc: Exception | str) -> None:
    st.error(say(exc))
    lang.stop()


def comprehension(con, study: ann.Study, task, worker_hash: str, intro: Callable[[], None],
                  data: ModuleType = ann) -> None:
    """The comprehension questions, as a form; a failed attempt with one left is said (not which answers were
    wrong) and the form is shown again, emptied. Stops the run."""
    said_key, round_key = _key(study, "said"), _key(study, "round")
    intro()
    if task.guidelines:
        with st.expander(_("Guidelines"), expanded=True):
            st.text(task.guidelines)
    said = st.session_state.pop(said_key, None)
    if said == "again":
        st.warning(_("Not every answer is right. Read the task and the questions again: you have one more "
                     "attempt."))
    elif said == "blank":
        st.warning(_("Answer every question, then check your answers."))
    questions = data.crowd_questions(con, study)
    attempt = st.session_state.get(round_key, 0)
    with st.form(_key(study, "check")):
        st.caption(_("Before you start: a few questions about the task."))
        picks = [st.radio(md_escape(question), list(range(len(options))), index=None,
                          format_func=lambda i, options=options: md_escape(options[i]),
                          key=f"{_key(study, 'q')}-{attempt}-{no}")
                 for no, question, options in questions]
        submitted = st.form_submit_button(_("Check my answers"))
    if submitted:
        if any(pick is None for pick in picks):
            st.session_state[said_key] = "blank"
            st.rerun()
        try:
            passed, left = data.crowd_check(con, study, worker_hash, picks)
        except (ValueError, StoreError) as exc:
            _refuse(exc)
        if not passed and left:
            st.session_state[said_key] = "again"
            st.session_state[round_key] = attempt + 1   # the form again, its answers cleared
        st.rerun()
    lang.stop()


def ending(con, study: ann.Study, worker_hash: str, data: ModuleType = ann) -> None:
    """The worker's end: their code in large type with a sentence (passed: the completion code; failed: the task's
    other code, without saying which check failed), and the way back to the platform. Stops the run."""
    try:
        end = data.crowd_finish(con, study, worker_hash)
    except (ValueError, StoreError) as exc:
        _refuse(exc)
    if end.passed:
        st.success(_("Thank you: you have finished. Your completion code is below: enter it on the platform to "
                     "complete the study."))
    elif end.code:
        st.info(_("Thank you for your time. Your part of this study ends here: enter the code below on the "
                  "platform."))
    else:
        st.info(_("Thank you for your time. Your part of this study ends here: return the study on the platform."))
    if end.code:
        st.html(CODE_STYLE)
        with st.container(key="crowd-code"):
            st.code(end.code, language=None)
    if end.redirect:
        label = _("Back to Prolific") if study.platform == "prolific" else _("Back to the study's platform")
        st.link_button(label, end.redirect, type="primary")
    lang.stop()
