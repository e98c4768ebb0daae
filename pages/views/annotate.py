"""Annotate: one unit at a time of a rating task, for the lab's annotators. Every click is stored at once
(evalcore.store.tasks); closing the tab loses nothing, and giving the same name again (on any machine)
resumes at the next unit. Names of models are never shown; texts are shown as text."""
import streamlit as st

from evalcore.core.errors import StoreError
from evalcore.ui import annotation as ann
from pages.views.common import grid, md_escape, publish, release, start

con, vs = start("Annotate")
open_tasks = ann.open_tasks(con)
asked = vs.one("task", [str(t) for t in open_tasks["task_id"]], None,
               unavailable="is not an open task (closed, deleted or unknown)")
if asked is None:
    if open_tasks.empty:
        st.info("No rating task is open. Whoever runs the evaluation creates one on the Rating tasks page or with "
                "`evalcore task create`, and sends you its link.")
        st.stop()
    st.caption("Choose the task you were asked to rate (the link you were sent opens it directly).")
    labels = {str(r.task_id): f"{r.task_id}: {r.name} ({r.mode}, {r.units} units)" for r in open_tasks.itertuples()}
    asked = st.selectbox("Task", list(labels), format_func=lambda t: labels[t], key="ann-pick")
publish("annotate", {"task": asked}, vs.notices)
task = ann.task(con, int(asked))
st.text(f"{task.name}: {task.mode}, {', '.join(d.dimension for d in task.dimensions)}")

# -------------------------------------------------------------- who is rating
who_key = f"ann-who-{task.task_id}"
user = getattr(st, "user", None)
if user is not None and getattr(user, "is_logged_in", False):
    st.session_state[who_key] = str(user.get("email") or user.get("name"))
if not st.session_state.get(who_key):
    st.caption("What you will rate")
    grid(ann.dimensions_table(task), width="stretch")
    with st.form(f"ann-login-{task.task_id}"):
        st.caption("Give your name (the same one each time: it is how you resume) and the task's access code.")
        name = st.text_input("Your name", max_chars=80)
        code = st.text_input("Access code", type="password")
        if st.form_submit_button("Start rating"):
            if not name.strip():
                st.error("A name is needed.")
            elif not ann.code_ok(task, code):
                st.error("That is not this task's access code.")
            else:
                st.session_state[who_key] = " ".join(name.split())
                st.rerun()
    st.stop()
annotator = st.session_state[who_key]

# -------------------------------------------------------------- the unit, in a fragment
# A click reruns only this part of the page (not the navigation, title and sign-in): the next unit is drawn
# sooner after the last dimension's click.
@st.fragment
def unit_panel() -> None:
    try:
        _unit_panel()
    finally:
        release()   # a fragment's rerun is not app.py's run: give back the cursor it took (and the store's lock)


def _unit_panel() -> None:
    unit_key = f"ann-unit-{task.task_id}"
    if st.session_state.get(unit_key) is None:
        st.session_state[unit_key] = ann.next_unit(con, task, annotator)
    unit = st.session_state[unit_key]
    done, total = ann.my_progress(con, task, annotator)
    st.progress(min(done / max(total, 1), 1.0), text=f"{done} rated by you; {total} units in the task")
    if unit is None:
        st.success("Nothing left for you in this task: every unit has its annotators. Thank you!")
        return

    if task.guidelines:
        with st.expander("Guidelines", expanded=done == 0):
            st.text(task.guidelines)
    view = ann.unit_view(con, task, unit, annotator)
    st.caption(f"Unit {unit}")
    for speaker, text in view["turns"]:
        with st.chat_message("user" if speaker == "User" else "assistant"):
            st.text(text)
    for heading, lines in ann.grounding_lines(view["grounding"]):
        with st.expander(f"Grounding: {md_escape(heading)}"):
            st.text("\n".join(lines))

    if st.session_state.get("ann-error"):
        st.error(md_escape(st.session_state.pop("ann-error")))
    given = ann.my_answers(con, task, unit, annotator)
    revisit = bool(given) and len(given) == len(task.dimensions)

    def _answered(dimension: str, value_of) -> None:  # noqa: B023
        """A click: stored at once; on a new unit, the last dimension answered moves on to the next unit."""
        key = f"ann-{task.task_id}-{unit}-{dimension}"
        choice = st.session_state.get(key)
        if choice is None:
            return
        try:
            ann.answer(con, task, unit, annotator, dimension, value_of(choice))
        except (ValueError, StoreError) as exc:   # the task was closed meanwhile, say
            st.session_state["ann-error"] = str(exc)
            return
        mine = ann.my_answers(con, task, unit, annotator)
        if not revisit and len(mine) == len(task.dimensions):
            st.session_state[unit_key] = None

    if task.mode == "absolute":
        with st.container(border=True):
            st.caption("Response")
            st.text(view["responses"][0])
        for dim in task.dimensions:
            st.text(f"{dim.dimension} ({dim.min:g} to {dim.max:g})")
            if dim.description:
                st.caption(md_escape(dim.description))
            st.segmented_control(dim.dimension, dim.scale(), default=given.get(dim.dimension),
                                 format_func=lambda v: f"{v:g}", key=f"ann-{task.task_id}-{unit}-{dim.dimension}",
                                 label_visibility="collapsed", on_change=_answered, args=(dim.dimension, float))
    else:
        left, right = st.columns(2)
        for col, label, text in ((left, "Left response", view["responses"][0]),
                                 (right, "Right response", view["responses"][1])):
            with col, st.container(border=True):
                st.caption(label)
                st.text(text)
        choices = ["left", "tie", "right"] if task.ties else ["left", "right"]
        names = {"left": "Left", "tie": "Tie", "right": "Right"}
        for dim in task.dimensions:
            st.text(dim.question or dim.dimension)
            st.segmented_control(dim.dimension, choices, default=ann.choice_of(view["sides"], given.get(dim.dimension)),
                                 format_func=names.get, key=f"ann-{task.task_id}-{unit}-{dim.dimension}",
                                 label_visibility="collapsed", on_change=_answered,
                                 args=(dim.dimension, lambda c: ann.vote_value(view["sides"], c)))

    # -------------------------------------------------------------- skip, back, flag
    earlier = [u for u in ann.history_of(con, task, annotator) if u != unit]
    c1, c2, c3 = st.columns(3)
    with c1:
        if st.button("Skip this unit", key=f"ann-skip-{unit}", help="someone else rates it; you are not asked again"):
            ann.skip(con, task, unit, annotator)
            st.session_state[unit_key] = None
            st.rerun()
    with c2:
        if st.button("Back", key=f"ann-back-{unit}", disabled=not earlier,
                     help="the unit you answered before this one: change an answer (the change is kept)"):
            st.session_state[unit_key] = earlier[-1]
            st.rerun()
    with c3:
        if revisit and st.button("Next", key=f"ann-next-{unit}"):
            st.session_state[unit_key] = None
            st.rerun()
    with st.expander("Flag a problem with this unit"):
        comment = st.text_area("What is wrong (the person running the task reads it)", max_chars=2000,
                               key=f"ann-flag-{unit}")
        if st.button("Flag", key=f"ann-flag-button-{unit}"):
            try:
                ann.flag(con, task, unit, annotator, comment)
                st.success("Flagged; thank you.")
            except ValueError as exc:
                st.error(md_escape(str(exc)))
    if earlier:
        with st.expander(f"Your earlier units ({len(earlier)})"):
            grid({"unit": earlier})


unit_panel()
