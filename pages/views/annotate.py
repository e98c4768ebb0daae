"""Annotate: one unit at a time of a rating task, for the lab's annotators. Every click is stored at once
(evalcore.store.tasks); closing the tab loses nothing. An annotator is a person, not a typed name: the first
entry with a name issues a personal key (shown once), which later entries with that name need (on any
machine); with a sign-in, the signed-in address is the annotator. Names of models are never shown; texts are
shown as text. Whatever the store or the task refuses is said in a sentence, never a traceback."""
import streamlit as st

from evalcore.core.errors import StoreError
from evalcore.core.i18n import N_, _
from evalcore.pagedata import annotation as ann
from evalcore.store.tasks import TaskClosed
from pages.kit import crowd, lang
from pages.kit.identity import identify, language_first, leave, say
from pages.kit.runtime import cursor, release
from pages.kit.state import base_url, publish, start
from pages.kit.text import md_escape
from pages.kit.widgets import grid

HEADERS = (N_("dimension"), N_("scale"), N_("question"), N_("unit"))   # the tables' headers, for the catalog
# side by side: what each choice is shown as (the stored choice stays 'left', 'tie' or 'right')
SIDES = {"left": N_("Left"), "tie": N_("Tie"), "right": N_("Right")}
SPEAKERS = {"left": N_("Speaker A"), "tie": N_("Tie"), "right": N_("Speaker B")}
FLAGGED = N_("Flagged; thank you.")

# the task's language before the title is drawn (a task's people read its page in the language of its rubric)
language_first(lambda t: ann.task(cursor(), t), "ann-pick")
con, vs = start(_("Annotate"))
study = crowd.study_in_link(con, vs.peek("task"))   # a crowd study's link: its worker comes from the platform
if study is not None:
    asked = str(study.task_id)
    crowd.publish_study(study, vs.notices)
else:
    open_tasks = ann.open_tasks(con)
    asked = vs.one("task", [str(t) for t in open_tasks["task_id"]], None,
                   unavailable=_("is not an open task (closed, deleted or unknown)"))
    if vs.peek("key") or vs.peek("name"):
        # a personal link: its name and key fill the form, and leave the address bar (publish writes the task only),
        # so the link this page shares never carries anyone's identity
        st.session_state["ann-link"] = (vs.peek("name") or "", vs.peek("key") or "")
    if asked is None and st.session_state.get("ann-error"):   # a click on a task that closed meanwhile, say
        st.error(say(st.session_state.pop("ann-error")))
    if asked is None:
        if open_tasks.empty:
            st.info(_("No rating task is open. Whoever runs the evaluation creates one on the Rating tasks page or "
                      "with `evalcore task create`, and sends you its link."))
            lang.stop()
        st.caption(_("Choose the task you were asked to rate (the link you were sent opens it directly)."))
        labels = {str(r.task_id): ann.blind_label(r.task_id, r.mode, r.units) for r in open_tasks.itertuples()}
        asked = st.selectbox(_("Task"), list(labels), format_func=lambda t: labels[t], key="ann-pick")
    publish("annotate", {"task": asked}, vs.notices)
task = ann.task(con, int(asked))
if task is None:   # deleted between the list and now
    st.info(_("This task is no longer open. Ask whoever runs the evaluation for its new link."))
    lang.stop()
lang.for_task(getattr(task, "lang", None))   # the task's language from here on, unless this person picked one
st.text(_("{task}: {dimensions}").format(task=ann.blind_label(task.task_id, task.mode),
                                         dimensions=", ".join(d.dimension for d in task.dimensions)))


# -------------------------------------------------------------- who is rating
who_key, issued_key, unit_key = f"ann-who-{task.task_id}", f"ann-issued-{task.task_id}", f"ann-unit-{task.task_id}"


def _leave() -> None:
    """This browser forgets who rates here (and the unit drawn for them)."""
    leave(who_key, unit_key)


def _intro() -> None:
    st.caption(_("What you will rate"))
    asks = ann.dimensions_table(task)
    # the scales in a table; each definition as wrapped text below it (a table cell cut them at 800 px)
    grid(asks[["dimension", "scale"] + (["question"] if task.mode == "pairwise" else [])], width="stretch")
    for dimension, description in zip(asks["dimension"], asks["description"]):
        if description:
            st.caption(md_escape(_("{dimension}: {description}").format(dimension=dimension, description=description)))


if study is not None:   # a crowd worker: known by the platform's link, checked, then their share of units
    annotator = crowd.worker(con, study, task, intro=_intro, unit_key=unit_key)
else:
    annotator = identify(con, who_key=who_key, issued_key=issued_key, link_key="ann-link",
                         form_key=f"ann-login-{task.task_id}", kept_key="ann-kept",
                         kept_label=_("I have kept my key: start rating"), start_label=_("Start rating"),
                         code_ok=lambda code: ann.code_ok(task, code), intro=_intro, forget=(unit_key,),
                         link_of=lambda name, key: ann.personal_link(base_url(), task.task_id, name, key))
    me, out = st.columns([3, 1])
    me.caption(md_escape(_("Rating as {name}").format(name=annotator)))
    out.button(_("Leave"), key="ann-leave", on_click=_leave,
               help=_("not you, or done for now: this browser forgets who is rating; your answers stay yours"))


# -------------------------------------------------------------- the unit, in a fragment
# A click reruns only this part of the page (not the navigation, title and sign-in): the next unit is drawn
# sooner after the last dimension's click. A fragment's rerun is not app.py's run, whose handler turns a store
# that cannot be used into a sentence: this one says it itself.
@st.fragment
def unit_panel() -> None:
    lang.resume()   # a fragment's rerun runs without app.py: the language the page around it was drawn in
    try:
        down = st.session_state.pop("ann-down", None)
        if down:   # a click just found the store unusable: say so, without waiting for it a second time
            st.warning(say(down))
            st.button(_("Try again"), key="ann-retry")
        else:
            _unit_panel()
    except (ValueError, StoreError) as exc:   # the task closed or deleted, the store busy or full
        st.warning(say(exc))
        st.button(_("Try again"), key="ann-retry")
    finally:
        release()   # give back the cursor the fragment's run took (and the store's lock)


def _act(write, *args) -> bool:
    """One write of the panel's controls (called from their callbacks): True when stored; a refusal is kept to
    be shown on the next draw (the refusal itself: it is said in the language of that draw, a callback runs before
    the run has chosen one), and where the unit is no longer theirs the next one is drawn."""
    try:
        write(con, task, *args)
        return True
    except (ValueError, StoreError) as exc:
        unusable = isinstance(exc, StoreError) and not isinstance(exc, TaskClosed)
        st.session_state["ann-down" if unusable else "ann-error"] = exc
        if ann.moves_on(exc):
            st.session_state[unit_key] = None
        return False


def _unit_panel() -> None:
    if st.session_state.get(unit_key) is None:
        st.session_state[unit_key] = (ann.next_unit(con, task, annotator) if study is None
                                      else ann.crowd_next_unit(con, study, task, annotator))
    unit = st.session_state[unit_key]
    if study is not None and unit is None:   # a crowd worker's share is done: the whole page draws their end
        st.rerun()
    # their answers on the unit and the units they answered, in one query (a draw follows every click)
    given, history = ann.standing(con, task, unit, annotator) if unit is not None else ({}, [])
    if study is not None:   # a crowd worker: "Unit 3 of 6", their place, never the task's number of the unit
        place, total = ann.place_among(study, history, unit)
        st.progress(min((place - 1) / max(total, 1), 1.0))
        mark = f"p{place}"   # what the unit's controls are keyed by: its place (a gold unit's number would show)
    else:
        done, total = ann.my_progress(con, task, annotator)
        st.progress(min(done / max(total, 1), 1.0),
                    text=_("{done} rated by you; {total} units in the task").format(done=done, total=total))
        mark = unit
    if st.session_state.get("ann-error"):
        st.error(say(st.session_state.pop("ann-error")))
    if st.session_state.get("ann-note"):
        st.success(_(st.session_state.pop("ann-note")))
    if unit is None:
        st.info(md_escape(ann.nothing_left(con, task, annotator)))
        st.button(_("Look again"), key="ann-again")
        return
    if task.guidelines:
        with st.expander(_("Guidelines"), expanded=(place == 1) if study is not None else done == 0):
            st.text(task.guidelines)
    # the unit's text, read once while it is theirs: the clicks on it redraw it unchanged
    seen = st.session_state.get(f"ann-view-{task.task_id}")
    if seen is not None and seen[0] == (unit, annotator):
        view = seen[1]
    else:
        view = ann.unit_view(con, task, unit, annotator)
        st.session_state[f"ann-view-{task.task_id}"] = ((unit, annotator), view)
    st.caption(_("Unit {unit}").format(unit=unit) if study is None else
               _("Unit {unit} of {n}").format(unit=place, n=total))
    for speaker, text in view["turns"]:
        with st.chat_message("user" if speaker == "User" else "assistant"):
            st.text(text)
    for heading, lines in ann.grounding_lines(view["grounding"]):
        with st.expander(_("Grounding: {heading}").format(heading=md_escape(ann.grounding_heading(heading)))):
            st.text("\n".join(lines))

    revisit = bool(given) and len(given) == len(task.dimensions)
    answered = set(given)   # grows with each answer this draw's controls store (_answered)

    def _answered(dimension: str, value_of) -> None:  # noqa: B023
        """A click: stored at once; on a new unit, the last dimension answered moves on to the next unit."""
        choice = st.session_state.get(f"ann-{task.task_id}-{mark}-{dimension}")
        if choice is None or not _act(ann.answer, unit, annotator, dimension, value_of(choice)):
            return
        # the unit's answers as drawn plus those stored since by this draw's controls (clicks sent together run
        # their callbacks in one rerun): all given, the next unit
        answered.add(dimension)
        if not revisit and answered >= {d.dimension for d in task.dimensions}:
            st.session_state[unit_key] = None

    if task.level == "dialogue":   # whole conversations: the model's turns are what is rated
        labels = [_("The conversation")] if task.mode == "absolute" else [_("Speaker A's conversation"),
                                                                          _("Speaker B's conversation")]
        for label, turns in zip(labels, view["dialogues"]):
            with st.container(border=True):
                st.caption(label)
                for speaker, text in turns:
                    with st.chat_message("user" if speaker == "User" else "assistant"):
                        st.text(text)
    if task.mode == "absolute":
        if task.level != "dialogue":
            with st.container(border=True):
                st.caption(_("Response"))
                st.text(view["responses"][0])
        for dim in task.dimensions:
            st.text(_("{dimension} ({lo} to {hi})").format(dimension=dim.dimension, lo=f"{dim.min:g}",
                                                            hi=f"{dim.max:g}"))
            if dim.description:
                st.caption(md_escape(dim.description))
            st.segmented_control(dim.dimension, dim.scale(), default=given.get(dim.dimension),
                                 format_func=lambda v: f"{v:g}", key=f"ann-{task.task_id}-{mark}-{dim.dimension}",
                                 label_visibility="collapsed", on_change=_answered, args=(dim.dimension, float))
    else:
        if task.level != "dialogue":
            left, right = st.columns(2)
            for col, label, text in ((left, _("Left response"), view["responses"][0]),
                                     (right, _("Right response"), view["responses"][1])):
                with col, st.container(border=True):
                    st.caption(label)
                    st.text(text)
        choices = ["left", "tie", "right"] if task.ties else ["left", "right"]
        names = SPEAKERS if task.level == "dialogue" else SIDES
        for dim in task.dimensions:
            st.text(dim.question or dim.dimension)
            st.segmented_control(dim.dimension, choices, default=ann.choice_of(view["sides"], given.get(dim.dimension)),
                                 format_func=lambda c: _(names[c]), key=f"ann-{task.task_id}-{mark}-{dim.dimension}",
                                 label_visibility="collapsed", on_change=_answered,
                                 args=(dim.dimension, lambda c: ann.vote_value(view["sides"], c)))

    # -------------------------------------------------------------- skip, back, flag
    earlier = [u for u in history if u != unit]

    def _skip() -> None:
        if _act(ann.skip, unit, annotator):
            st.session_state[unit_key] = None

    def _go(to: int | None) -> None:
        st.session_state[unit_key] = to

    def _flag() -> None:
        if _act(ann.flag, unit, annotator, st.session_state.get(f"ann-flag-{mark}", "")):
            st.session_state["ann-note"] = FLAGGED   # said in the language of the draw that shows it
            st.session_state[f"ann-flag-{mark}"] = ""

    c1, c2, c3 = st.columns(3)
    if study is not None:   # a crowd worker has no skip: it would let them pick the units they find easy
        c1, c2, c3 = None, c1, c2
    else:
        c1.button(_("Skip this unit"), key=f"ann-skip-{mark}", on_click=_skip,
                  help=_("Give this unit up: someone else takes your place on it, and what you answered on it stops "
                         "counting. Back brings you to it again while a place is free."))
    c2.button(_("Back"), key=f"ann-back-{mark}", disabled=not earlier, on_click=_go,
              args=(earlier[-1] if earlier else None,),
              help=_("the unit you answered before this one: change an answer (the change is kept)"))
    if revisit:
        c3.button(_("Next"), key=f"ann-next-{mark}", on_click=_go, args=(None,))
    with st.expander(_("Flag a problem with this unit")):
        st.text_area(_("What is wrong (the person running the task reads it)"), max_chars=2000,
                     key=f"ann-flag-{mark}")
        st.button(_("Flag"), key=f"ann-flag-button-{mark}", on_click=_flag)
    if earlier and study is None:   # the task's unit numbers: a crowd worker is shown none
        with st.expander(_("Your earlier units ({n})").format(n=len(earlier))):
            grid({"unit": earlier})
    # A new unit starts at its top: the page keeps its scroll position across reruns, so the next unit's header
    # and the start of a long context were off-screen. Streamlit runs this script when the element changes (the
    # unit number in it), not on a rerun that draws the same unit the same way. It holds no user text. Drawn
    # last: first in the panel it held the unit's drawing back (click to next unit 0.74 s against 0.50 s).
    # The only value in it is the unit's number (a crowd worker's: its place), made an int here so no text can ever
    # reach the script.
    st.html(f"<script>/* unit {int(unit if study is None else place)} */ for (const el of [window.parent.document.querySelector("
            "'[data-testid=\"stMain\"]'), window.parent.document.querySelector('[data-testid=\"stAppViewContainer\"]'"
            ")]) { if (el) el.scrollTo({top: 0}); } window.scrollTo({top: 0});</script>",
            unsafe_allow_javascript=True, width="content")


unit_panel()
