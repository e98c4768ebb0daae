"""Chat: a person talks with an anonymous model on a grounded scenario, then rates the whole dialogue (MSDE §3.1).
Every message is stored when it is sent or received (evalcore.store.chats), so a closed tab, a restart or a crash
loses nothing and the person resumes where they stood, on any machine. The model's reply is shown piece by piece
as it arrives, as text; a model that fails mid-reply gives a sentence and a retry, and the person's message stays.
Which endpoint answers is never shown. A chat task opened to a crowd platform takes its workers from the platform's
link (pages/kit/crowd.py): no name, their share of conversations one after another, then their completion code."""
import time

import pandas as pd
import streamlit as st

from evalcore.core.errors import StoreError
from evalcore.core.i18n import N_, _
from evalcore.pagedata import chats
from pages.kit import crowd, lang
from pages.kit.identity import identify, language_first, leave, say
from pages.kit.runtime import cursor
from pages.kit.state import base_url, publish, start
from pages.kit.text import md_escape
from pages.kit.widgets import grid

DRAW_EVERY = 0.1   # seconds between redraws of a streaming reply (its first piece is drawn at once)
HEADERS = (N_("dimension"), N_("scale"))   # the tables' headers, for the catalog

# the task's language before the title is drawn (a task's people read its page in the language of its rubric)
language_first(lambda t: chats.task(cursor(), t), "chat-pick")
con, vs = start(_("Chat"))
open_tasks = chats.open_tasks(con)   # id -> a label that names no model (never the task's name)
study = crowd.study_in_link(con, vs.peek("task"), data=chats)   # a crowd study's link: its worker comes from the platform


def _no_longer_open(task_id: int) -> None:
    """A task closed (or deleted) under the person: said, with the message they had just sent, if any, kept in
    the box (it was not stored); never another task's form in its place."""
    prefix = f"chat-{task_id}"
    cid = st.session_state.get(f"{prefix}-at")
    box = f"{prefix}-say-{cid}"
    sent = st.session_state.get(box) if cid is not None else None
    st.info(_("This chat task is no longer open: it takes no messages now. Ask whoever runs the evaluation for its "
              "new link."))
    if sent:
        st.warning(_("Your last message was not stored: the task was closed while you wrote it. It is still in the "
                     "box below, to copy."))
        st.session_state[box] = sent   # back into the box (a chat input empties itself when sent)
        st.chat_input(_("This chat task is closed"), key=box, disabled=True)
    lang.stop()


def _pick() -> str:
    """The task the person chooses, or their link names (a closed one is said on its own page and stops the run)."""
    wanted = vs.peek("task")
    if wanted and wanted.isdigit() and wanted not in open_tasks and chats.task(con, int(wanted)) is not None:
        publish("chat", {"task": wanted}, vs.notices)   # the person stays on their task's link
        _no_longer_open(int(wanted))
    asked = vs.one("task", list(open_tasks), None,
                   unavailable=_("is not an open chat task (closed, deleted or unknown)"))
    if vs.peek("key") or vs.peek("name"):   # a personal link: fills the form, never stays in the shared link
        st.session_state["chat-link-pending"] = (vs.peek("name") or "", vs.peek("key") or "")
    if asked is None:
        if not open_tasks:
            st.info(_("No chat task is open. Whoever runs the evaluation creates one on the Chat tasks page or with "
                      "`evalcore chat create`, and sends you its link."))
            lang.stop()
        asked = st.selectbox(_("Task"), list(open_tasks), format_func=lambda t: open_tasks[t], key="chat-pick")
    publish("chat", {"task": asked}, vs.notices)
    return asked


if study is not None:   # a closed study is refused by the worker's entry, in the study's own words
    asked = str(study.task_id)
    crowd.publish_study(study, vs.notices, data=chats)
else:
    asked = _pick()
task = chats.task(con, int(asked))
if study is None and (task is None or task.state != "open"):   # closed between the two reads above
    _no_longer_open(int(asked))
lang.for_task(getattr(task, "lang", None))   # the task's language from here on, unless this person picked one
prefix = f"chat-{task.task_id}"
if "chat-link-pending" in st.session_state:
    st.session_state[f"{prefix}-link"] = st.session_state.pop("chat-link-pending")


def _intro() -> None:
    st.text(chats.blind_label(task))   # never the task's name: the lab wrote it, and it can name a model
    st.caption(md_escape(_("You will talk with models you are not told the names of, about a scenario you are "
                           "given, for up to {rounds} rounds (your message and the model's reply), then rate the "
                           "whole conversation on:").format(rounds=task.max_rounds)))
    grid(pd.DataFrame({"dimension": [d.dimension for d in task.dimensions],
                       "scale": [_("{lo} to {hi}").format(lo=f"{d.min:g}", hi=f"{d.max:g}") for d in task.dimensions]}),
         width="stretch")
    for d in task.dimensions:   # each definition as wrapped text (a table cell cuts it at 800 px)
        if d.description:
            st.caption(md_escape(_("{dimension}: {description}").format(dimension=d.dimension,
                                                                         description=d.description)))
    if task.guidelines:
        with st.expander(_("Guidelines")):
            st.text(task.guidelines)


at_key = f"{prefix}-at"
if study is not None:   # a crowd worker: known by the platform's link, checked, then their share of conversations
    person = crowd.worker(con, study, task, intro=_intro, unit_key=at_key, data=chats,
                          next_of=lambda annotator: chats.crowd_next(con, study, task, annotator))
else:
    person = identify(con, who_key=f"{prefix}-who", issued_key=f"{prefix}-issued", link_key=f"{prefix}-link",
                      form_key=f"{prefix}-login", kept_key=f"{prefix}-kept", kept_label=_("I have kept my key: start"),
                      code_ok=lambda code: chats.code_ok(task, code), intro=_intro, start_label=_("Start chatting"),
                      link_of=lambda name, key: chats.personal_link(base_url(), task.task_id, name, key),
                      forget=(at_key,))
    me, out = st.columns([3, 1])
    me.caption(md_escape(_("Chatting as {name}").format(name=person)))
    out.button(_("Leave"), key="chat-leave", on_click=leave, args=(f"{prefix}-who", at_key),
               help=_("not you, or done for now: this browser forgets who is chatting; what you said stays yours"))


def _write(action, *args) -> bool:
    """One write; a refusal is said on the next draw (kept as it is, and said in that draw's language: a callback
    runs before the run chose one)."""
    try:
        action(con, *args)
        return True
    except (ValueError, StoreError) as exc:
        st.session_state[f"{prefix}-error"] = exc
        return False


if st.session_state.get(at_key) is None:
    st.session_state[at_key] = chats.assign(con, task, person)
cid = st.session_state[at_key]
if cid is None:
    st.info(_("Nothing more to talk about for you in this task: every conversation left is on a scenario you have "
              "met already, or taken by others. Thank you."))
    lang.stop()

input_key = f"{prefix}-say-{cid}"
sent = st.session_state.get(input_key)
if sent:   # the message submitted in this run: stored before anything else is drawn
    try:
        chats.say(con, cid, person, sent)
    except chats.TaskClosed:   # closed since the page was drawn: said on the task's own page, the message kept
        if study is not None:   # a crowd worker: the study's own sentence, as at the entry
            st.error(_(crowd.CLOSED))
            lang.stop()
        _no_longer_open(task.task_id)
    except (ValueError, StoreError) as exc:
        st.session_state[f"{prefix}-error"] = exc
        st.session_state[input_key] = sent   # refused: the text goes back into the box, to shorten or send again
# a crowd worker's instruction check: a line of their scenario here (the endpoint never sees it)
view = chats.view(con, task, cid, person,
                  instruction=chats.crowd_instruction(con, study, task, person, cid) if study is not None else None)
conv = view["conversation"]
if st.session_state.get(f"{prefix}-error"):
    st.error(say(st.session_state.pop(f"{prefix}-error")))

if study is not None:   # their place among their conversations, as a crowd worker's page says it
    place, total = chats.crowd_place(con, study, task, person, cid)
    st.caption(_("Conversation {number} of {n} · round {round} of {rounds}").format(
        number=place, n=total, round=view["rounds"], rounds=task.max_rounds))
else:
    st.caption(_("Conversation {number} · {done} finished by you · round {round} of {rounds}").format(
        number=view["number"], done=view["done"], round=view["rounds"], rounds=task.max_rounds))
st.caption(_("Your scenario: talk with the model so that what it holds comes up; end the conversation when it has, "
             "or at round {rounds}").format(rounds=task.max_rounds))
# a fixed height that scrolls: a knowledge scenario runs to 1,300 characters, and the chat must stay in view
with st.container(border=True, height=200 if len(view["scenario"]) else "content"):
    if view["scenario"]:
        for heading, lines in view["scenario"]:
            st.text(_("{heading}:").format(heading=heading) + "\n" + "\n".join(lines))
    else:
        st.text(_("Open chat: talk about anything."))
    if view["opening"] and not view["messages"]:
        st.caption(_("You could start with"))
        st.text(view["opening"])

talking = conv.state == "talking"


def _next_label() -> str:
    """The button after a conversation: the next one, or a crowd worker's end after their last."""
    if study is not None and place >= total:
        return _("Finish and get your completion code")
    return _("Next conversation")


rating = conv.state in ("ended", "rated")


def _flagged(idx: int, before: frozenset) -> None:
    """A change of a reply's flags: each flag set or cleared is its own write."""
    now = set(st.session_state.get(f"{prefix}-flags-{cid}-{idx}") or [])
    for name in sorted(now ^ before):
        _write(chats.flag, cid, idx, person, name, name in now)


for idx, role, text in view["messages"]:
    with st.chat_message("user" if role == "user" else "assistant"):
        st.text(text)
        if role == "assistant" and rating and task.flags:
            had = frozenset(view["flags"].get(int(idx), set()))
            st.pills(_("Flag this reply"), list(task.flags), selection_mode="multi", default=sorted(had),
                     format_func=lambda f: chats.flag_label(task, f),
                     key=f"{prefix}-flags-{cid}-{idx}", label_visibility="collapsed", on_change=_flagged,
                     args=(int(idx), had), help=_("optional: what is wrong with this reply"))

failed_key = f"{prefix}-failed-{cid}"
if talking:
    full = view["rounds"] >= task.max_rounds
    failure = st.session_state.get(failed_key)
    failed = bool(failure) and view["pending"] is not None and failure[0] == view["pending"]
    st.chat_input(_("The model did not answer: retry, or end the conversation") if failed else
                  _("The model is answering…") if view["pending"] is not None else
                  (_("Round limit reached: end the conversation") if full else _("Your message")),
                  # no max_chars: Streamlit's server would cut a longer message silently; say() refuses it in one
                  # sentence instead, and the text goes back into the box
                  key=input_key, disabled=view["pending"] is not None or full)
    if view["pending"] is not None:
        with st.chat_message("assistant"):
            if failed:
                st.warning(md_escape(_("{problem}. Your message is kept; try again, or end the conversation.").format(
                    problem=chats.problem_text(failure[1]).rstrip("."))))
                st.button(_("Retry"), key=f"{prefix}-retry-{cid}",
                          on_click=lambda: st.session_state.pop(failed_key, None))
            else:
                shown = st.empty()
                asked_for = chats.ask(con, cid)
                if asked_for is not None:
                    after, stream = asked_for
                    text, drawn_at = "", 0.0
                    for piece in stream:
                        text += piece
                        if time.monotonic() - drawn_at >= DRAW_EVERY:   # each redraw wakes the server to send it
                            shown.text(text)
                            drawn_at = time.monotonic()
                    shown.text(text)
                    problem = chats.keep(con, cid, after, stream.reply)
                    if problem:
                        st.session_state[failed_key] = (after, problem)
                    st.rerun()
    if view["rounds"] and (view["pending"] is None or failed):
        with st.form(f"{prefix}-end-{cid}", border=False):
            goal = st.checkbox(_("Everything in the scenario came up (the goal was reached)"),
                               key=f"{prefix}-goal-{cid}")
            if st.form_submit_button(_("End the conversation and rate it")):
                if _write(chats.end, cid, person, goal):
                    st.rerun()
elif rating:
    st.subheader(_("Rate the whole conversation"))
    st.caption(_("Each rating is stored when you click it. Flag single replies above if something was wrong with "
                 "them."))

    def _rated(dimension: str) -> None:
        value = st.session_state.get(f"{prefix}-rate-{cid}-{dimension}")
        if value is not None:
            _write(chats.rate, cid, person, dimension, float(value))

    for d in task.dimensions:
        st.text(_("{dimension} ({lo} to {hi})").format(dimension=d.dimension, lo=f"{d.min:g}", hi=f"{d.max:g}"))
        if d.description:
            st.caption(md_escape(d.description))
        st.segmented_control(d.dimension, d.scale(), default=view["ratings"].get(d.dimension),
                             format_func=lambda v: f"{v:g}", key=f"{prefix}-rate-{cid}-{d.dimension}",
                             label_visibility="collapsed", on_change=_rated, args=(d.dimension,))
    if conv.state == "rated":
        st.success(_("Thank you: this conversation is rated (you can still change a rating until it is "
                     "reviewed)."))
        st.button(_next_label(), key=f"{prefix}-next", on_click=lambda: st.session_state.pop(at_key, None))
else:
    st.success(_("Thank you: this conversation is accepted.") if conv.state == "accepted" else
               md_escape(_("This conversation was sent back: {reason}").format(reason=conv.reason)))
    st.button(_next_label(), key=f"{prefix}-next", on_click=lambda: st.session_state.pop(at_key, None))
