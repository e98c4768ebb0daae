"""Who is at the keyboard, for the pages where people give answers (Chat; Annotate's way): the task's access code,
then their name and personal key (issued at their first entry and shown once), or the deployment's sign-in. A wrong
code and a wrong personal key are guesses, counted against this session, this client's address and the server."""
from __future__ import annotations

from typing import Callable

import streamlit as st

from evalcore.core.errors import StoreError
from evalcore.core.i18n import _
from evalcore.pagedata import annotation as ann
from pages.kit import lang
from pages.kit.access import checked_guess, guess_wait, wait_text
from pages.kit.text import md_escape


def say(exc: Exception | str) -> str:
    """A refusal or a store that cannot be used, as the one sentence a page shows (markdown-escaped), in this run's
    language (a refusal kept by a callback is said when it is shown: a callback runs before the run chose one)."""
    if isinstance(exc, str):
        return md_escape(exc)
    if isinstance(exc, StoreError) and type(exc).__name__ != "TaskClosed":
        return md_escape(_("The store cannot be used right now: {reason}").format(reason=exc))
    return md_escape(str(exc))


def language_first(read, pick_key: str) -> None:
    """A task's page in the task's language from its title on (lang.for_task), unless the person picked one: the
    task asked for in the link (or picked in the page's list, session state `pick_key`), read with `read(task_id)`
    (None, or a task without a language: the viewer's language). Anything that fails here is left to the page."""
    wanted = st.query_params.get("task") or st.session_state.get(pick_key)
    if st.session_state.get(lang.PICKED) or not wanted or not str(wanted).isdigit():
        return
    try:
        task = read(int(wanted))
    except (ValueError, StoreError):
        return
    lang.for_task(getattr(task, "lang", None))


def leave(*keys: str) -> None:
    """This browser forgets who is at the keyboard (the session keys given: who they are, what they were shown)."""
    for key in keys:
        st.session_state.pop(key, None)


def identify(con, *, who_key: str, issued_key: str, link_key: str, form_key: str, kept_key: str, kept_label: str,
             code_ok: Callable[[str], bool], link_of: Callable[[str, str], str], intro: Callable[[], None],
             start_label: str, forget: tuple[str, ...] = ()) -> str:
    """The person's name as stored (session state `who_key`); until they are known, draws the entry form (after
    `intro`) and stops the run. `link_key`: (name, key) a personal link filled in; `forget`: what a new entry clears."""
    user = getattr(st, "user", None)
    if not st.session_state.get(who_key) and user is not None and getattr(user, "is_logged_in", False):
        try:
            st.session_state[who_key] = ann.signed_in(con, str(user.get("email") or user.get("name")))
        except (ValueError, StoreError) as exc:
            st.error(say(exc))
            lang.stop()
    if not st.session_state.get(who_key):
        intro()
        link_name, link_secret = st.session_state.get(link_key, ("", ""))
        with st.form(form_key):
            st.caption(_("The task's access code and your name. The first time you enter, you get a personal key: "
                         "keep it, you need it with your name to come back (on any machine). Lost it? Whoever runs "
                         "the task can give you a new one."))
            name = st.text_input(_("Your name"), value=link_name, max_chars=80, key=f"{form_key}-name")
            code = st.text_input(_("Access code"), type="password", key=f"{form_key}-code")
            key = st.text_input(_("Personal key (leave empty the first time)"), value=link_secret, type="password",
                                key=f"{form_key}-key")
            if st.form_submit_button(start_label):
                _enter(con, name, code, key, code_ok, who_key, issued_key, link_key, forget)
        lang.stop()
    who = st.session_state[who_key]
    if st.session_state.get(issued_key):
        issued = st.session_state[issued_key]
        st.success(md_escape(_("Welcome, {name}. Your personal key is below: it is shown this once, and you need "
                               "it with your name to come back. Keep it (or the link) to yourself: whoever has it "
                               "can answer as you.").format(name=who)))
        st.caption(_("Your personal key"))
        st.text(issued)
        st.caption(_("Your personal link (opens this task with your name and key filled in)"))
        st.text(link_of(who, issued))
        st.button(kept_label, key=kept_key, on_click=lambda: st.session_state.pop(issued_key, None))
        lang.stop()
    return who


def _enter(con, name: str, code: str, key: str, code_ok: Callable[[str], bool], who_key: str, issued_key: str,
           link_key: str, forget: tuple[str, ...]) -> None:
    """A login: the task's access code, then the name and personal key. A wrong code and a wrong personal key are
    guesses, counted against this session, this client's address and the server (access.checked_guess), as the
    upload password is: a code is six characters, and a script could otherwise try them all."""
    code_said = checked_guess("task-code", lambda: code_ok(code))
    if not code_said.checked:
        st.error(wait_text("access codes", *guess_wait("task-code")))
        return
    if not code_said.right:
        st.error(_("That is not this task's access code."))
        return
    entered: dict = {}

    def key_right() -> bool:
        # only a personal key given and refused is a wrong guess; a taken name without a key is not one
        try:
            entered["who"] = ann.enter(con, name, key)
        except ann.NotThem as exc:
            entered["error"] = exc
            return not (key or "").strip()
        except (ValueError, StoreError) as exc:
            entered["error"] = exc
        return True

    key_said = checked_guess("personal-key", key_right)
    if not key_said.checked:
        st.error(wait_text("personal keys", *guess_wait("personal-key")))
        return
    if "error" in entered:
        st.error(say(entered["error"]))
        return
    who, issued = entered["who"]
    leave(who_key, *forget)
    st.session_state[who_key] = who
    st.session_state.pop(link_key, None)
    if issued:
        st.session_state[issued_key] = issued
    st.rerun()
