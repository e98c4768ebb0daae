"""The viewer's language on every page: their own pick (the switch, kept for the session), else their browser's
language, else the server's default (`evalcore app --lang`, EVALCORE_LANG), else English. A rating or chat task's
language stands in for the browser's and the server's on its pages (for_task). The language is the viewer's, never
the view's: it is not in a page's link, so a shared link opens in its reader's language on the same view."""
from __future__ import annotations

import os
import threading

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from evalcore.core import i18n

PICKED = "evalcore-lang"   # session state: the language this person picked with the switch
_RUN = threading.local()   # this run's place for the switch (place), beside the page's title
SHOWN = "evalcore-lang-shown"   # session state: the language this session's last whole page was drawn in (switch)


def choose() -> str:
    """This run's language, set for everything the run calls (i18n.use); app.py calls it before anything is drawn,
    and a fragment's rerun (which runs without app.py) through runtime.in_fragment."""
    picked = st.session_state.get(PICKED)
    if picked:
        return i18n.use(picked)
    return i18n.use(browser() or i18n.normal(os.environ.get(i18n.ENV_VAR)))


def resume() -> str:
    """In a fragment's rerun (Streamlit runs it without app.py, on a thread of its own): the language the page
    around it was drawn in, a task's or a pick included. In a whole run (a fragment's body is called inline) the run's
    own language, already chosen: the page before this run was drawn in another one after a pick of the switch."""
    ctx = get_script_run_ctx()
    if ctx is None or not ctx.fragment_ids_this_run:
        return i18n.current()
    return i18n.use(st.session_state.get(SHOWN) or choose())


def browser() -> str | None:
    """The browser's language when it is one of the dashboard's (navigator.language), else None."""
    try:
        return i18n.normal(st.context.locale)
    except Exception:   # no browser behind the run (AppTest)
        return None


def for_task(lang: str | None) -> str:
    """On a task's pages (Annotate, Chat), the task's language unless this person picked one with the switch: its
    people read the page in the language of its rubric whatever their browser says."""
    if st.session_state.get(PICKED) or not lang:
        return i18n.current()
    return i18n.use(lang)


def stop() -> None:
    """st.stop() on a page, with the language switch drawn first: once a page has stopped, every Streamlit call raises
    StopException, the one that would draw the switch in app.py's `finally` included (a page that stops for its
    entry form, like Annotate's and Chat's, had no switch)."""
    switch()
    st.stop()


def place(slot) -> None:
    """Where this run's switch goes (an st.empty() beside the title: state.title_row)."""
    _RUN.slot = slot


def switch() -> None:
    """The switch, in the place the page's title row kept for it (app.py calls this once the page ran, however it
    ended), showing the language the page was drawn in. Its key carries that language, so it is drawn anew with it
    selected after a pick or a task's language (a keyed control keeps the value it was first given)."""
    slot = getattr(_RUN, "slot", None)
    _RUN.slot = None
    shown = st.session_state[SHOWN] = i18n.current()
    if slot is None:   # a page that ended before its title
        return

    def picked() -> None:
        value = st.session_state.get(f"lang-switch-{shown}")
        if value:   # a click on the selected option deselects it: nothing picked
            st.session_state[PICKED] = value

    slot.segmented_control(i18n._("Language"), i18n.LANGS, default=shown, format_func=i18n.NAMES.get,
                           key=f"lang-switch-{shown}", on_change=picked, label_visibility="collapsed")
