"""A crowd study's part of a task's page, for whoever runs the study: the Rating tasks page (kind "rating") and the
Chat tasks page (kind "chat") draw it with the same function. Its settings and pass rule, the link to paste into the
platform, the codes (with write access: a code is what a worker would need to be paid without working), its workers
with their quality, and with write access their platform identifiers on request, exclusions and the decisions'
log, and its set-up: gold units (counted), comprehension questions with their right answers, a chat study's
instruction checks, each with the form that adds it. An open task that is not a crowd study: with write access, the
form that opens it to a platform.

Without write access the codes and the identifiers are in no element the page sends (not hidden: never read)."""
from __future__ import annotations

import streamlit as st

from evalcore.core.errors import StoreError
from evalcore.core import i18n
from evalcore.core.i18n import N_, _, ngettext
from evalcore.pagedata import crowd as crowd_data
from pages.kit.runtime import data
from pages.kit.state import base_url
from pages.kit.text import md_escape, md_message
from pages.kit.widgets import grid

# the headers of the tables this part shows (grid() translates each through the catalog)
HEADERS = (N_("annotator"), N_("outcome"), N_("excluded"), N_("reason"), N_("units"), N_("gold_share"),
           N_("loo_spearman"), N_("competence"), N_("too_fast_share"), N_("straight_lined"), N_("median_seconds"),
           N_("hourly_pay"), N_("other_identity"), N_("platform_id"), N_("decided_at"), N_("decision"),
           N_("decided_by"),
           # a chat study's workers
           N_("conversations"), N_("checks"), N_("checks_passed"), N_("seconds"),
           # the gold units' counts
           N_("kind"), N_("dimension"), N_("expected"))
DECISIONS = {"excluded": N_("excluded"), "put back": N_("put back")}   # a decision as the log shows it


def study_part(con, task, *, kind: str, allowed: bool, who: str | None, prefix: str) -> None:
    """The crowd study of `task` (a rating task, or with kind "chat" a chat task), or the form that opens it to a
    platform. `prefix` begins every widget's key ("tk" on the Rating tasks page, "ct" on the Chat tasks page)."""
    study = crowd_data.study(con, task.task_id, kind)
    said = st.session_state.pop(f"{prefix}-crowd-said", None)
    if study is None:
        if allowed and task.state == "open" and (kind != "chat" or task.people):   # simulators only: no worker
            open_form(con, task, kind=kind, prefix=prefix)
        return
    st.subheader(_("Crowd study"))
    st.text("\n".join(crowd_data.settings_lines(study)))
    st.caption(_("Pass rule: a worker who fails any of these is excluded when they finish (listed below with why; "
                 "put back any time)."))
    st.text("\n".join(f"- {line}" for line in crowd_data.rule_lines(study.pass_rule, kind)))
    st.caption(_("The study link to paste into the platform:"))
    st.code(crowd_data.study_link(study, base_url()), language=None, wrap_lines=True)
    st.caption(md_escape(crowd_data.where_to_paste(study)))
    if allowed:
        st.text(_("Completion code: {code}").format(code=study.completion_code))
        st.text(_("Code for a worker who failed the checks: {code}").format(code=study.failed_code)
                if study.failed_code else
                _("No code for a worker who failed the checks: they get none."))
        back = crowd_data.way_back(study)   # it carries the code
        st.text(_("A worker who passes is sent back to {url}").format(url=back) if back else
                _("No redirect: a worker who passes types the completion code in on the platform."))
        setup_part(con, task, study, kind=kind, prefix=prefix)
    else:
        st.caption(_("The completion codes are shown to those who may write."))
    frame = data(crowd_data.workers, task.task_id, kind)   # MACE over every worker: kept until the store changes
    st.text(crowd_data.counts(frame))
    if said:   # what the last click did, once
        st.success(md_escape(said))
    if frame.empty:
        st.caption(_("No worker has entered yet."))
    else:
        shown = frame.copy()
        shown["outcome"] = shown["outcome"].map(lambda v: _(crowd_data.OUTCOMES[v]) if v in crowd_data.OUTCOMES
                                                else v)
        if allowed and st.toggle(_("Show platform identifiers"), key=f"{prefix}-crowd-ids-{task.task_id}",
                                 help=_("Personal data: to approve and pay the workers on the platform. Shown only "
                                        "to those who may write.")):
            ids = crowd_data.identifiers(con, task.task_id, kind)
            shown.insert(1, "platform_id", shown["annotator"].map(ids))
        two = st.column_config.NumberColumn(format="%.2f")
        grid(shown, width="stretch",
             column_config={"annotator": st.column_config.Column(pinned=True),
                            "reason": st.column_config.Column(width="large"), "gold_share": two,
                            "loo_spearman": two, "competence": two, "too_fast_share": two,
                            "median_seconds": st.column_config.NumberColumn(format="%.1f"), "hourly_pay": two,
                            "seconds": st.column_config.NumberColumn(format="%.0f")})
    if not allowed:
        return
    if not frame.empty:
        decide(con, task, frame, who, kind=kind, prefix=prefix)
    log = crowd_data.decisions(con, task.task_id, kind)
    if len(log):
        st.caption(_("Decisions: who excluded a worker or put them back, when and why (the pass rule decides when a "
                     "worker finishes)"))
        log["decision"] = log["decision"].map(lambda v: _(DECISIONS[v]) if v in DECISIONS else v)
        grid(log, width="stretch", column_config={"reason": st.column_config.Column(width="large")})


def decide(con, task, frame, who: str | None, *, kind: str, prefix: str) -> None:
    """Exclude a worker or put them back: a logged decision, reversible."""
    c1, c2 = st.columns([1, 2])
    name = c1.selectbox(_("Worker"), list(frame["annotator"]), key=f"{prefix}-crowd-who-{task.task_id}")
    reason = c2.text_input(_("Why"), max_chars=300, key=f"{prefix}-crowd-why-{task.task_id}")
    out = bool(frame.set_index("annotator").loc[name, "excluded"])
    if st.button(_("Put back") if out else _("Exclude"), key=f"{prefix}-crowd-decide-{task.task_id}"):
        try:
            if out:
                crowd_data.include(con, task.task_id, name, reason=reason, by=who or "dashboard", kind=kind)
            else:
                crowd_data.exclude(con, task.task_id, name, reason=reason, by=who or "dashboard", kind=kind)
        except (ValueError, StoreError) as exc:
            st.error(md_escape(str(exc)))
        else:
            if kind == "chat":
                said = (_("{name} put back: the ratings of their conversations count again in the task's results, "
                          "agreement and Metric trust.") if out else
                        _("{name} excluded: the ratings of their conversations left the task's results, agreement "
                          "and Metric trust; put them back any time."))
            else:
                said = (_("{name} put back: their ratings count again in the task's results, agreement and Metric "
                          "trust.") if out else
                        _("{name} excluded: their ratings left the task's results, agreement and Metric trust; put "
                          "them back any time."))
            st.session_state[f"{prefix}-crowd-said"] = said.format(name=name)
            st.rerun()


def setup_part(con, task, study, *, kind: str, prefix: str) -> None:
    """With write access: what the study holds and the forms that add to it, as `evalcore crowd gold`, `crowd
    question` and `crowd instruction --chat` do: a rating study's gold units (how many per kind, dimension and
    expected answers, never which units), a chat study's instruction checks, and the comprehension questions with
    their right answers. A refusal is said and writes nothing; what a form wrote is said once, below."""
    chat = kind == "chat"
    with st.expander(_("Instruction checks and questions") if chat else _("Gold units and checks")):
        if chat:
            instruction_form(con, task, study, prefix=prefix)
        else:
            gold_form(con, task, study, prefix=prefix)
        st.divider()
        question_form(con, task, kind=kind, prefix=prefix)


def _said(prefix: str, message: str, *keys: str) -> None:
    """What a form wrote, said once after the rerun; the form's `keys` emptied so a second click adds nothing."""
    st.session_state[f"{prefix}-crowd-said"] = message
    for key in keys:
        st.session_state.pop(key, None)
    st.rerun()


def gold_form(con, task, study, *, prefix: str) -> None:
    """A rating study's gold units: their counts and the form that adds them (evalcore crowd gold)."""
    n = crowd_data.gold_units(con, task.task_id)
    st.text(ngettext("The task holds {n} gold unit; each worker meets {gold}.",
                     "The task holds {n} gold units; each worker meets {gold}.", n).format(
        n=i18n.number(n), gold=i18n.number(study.gold)))
    if n < study.gold:
        st.caption(_("Add at least {short} more before workers arrive: where gold units run out, a worker rates real "
                     "units instead.").format(short=i18n.number(study.gold - n)))
    counts = crowd_data.gold_counts(con, task.task_id)
    if len(counts):
        counts["kind"] = counts["kind"].map(crowd_data.gold_name)
        grid(counts, width="stretch")
    if task.mode != "absolute" or task.level != "response":
        st.caption(_("Gold units are made for tasks that rate one response at a time."))
        return
    scales = {d.dimension: (d.min, d.max) for d in task.dimensions}
    with st.form(f"{prefix}-crowd-gold-form-{task.task_id}"):
        c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
        kind = c1.selectbox(_("Kind"), crowd_data.GOLD_KINDS, format_func=crowd_data.gold_name,
                            key=f"{prefix}-crowd-gold-kind-{task.task_id}",
                            help=_("Nonsense: a reply of the dataset with its words (Chinese: characters) shuffled, "
                                   "to get the dimension's lowest marks. Copies the knowledge: the item's knowledge "
                                   "copied out as the reply, to get its highest. Custom: the item and the reply you "
                                   "give below."))
        dimension = c2.selectbox(_("Dimension"), list(scales), key=f"{prefix}-crowd-gold-dimension-{task.task_id}",
                                 format_func=lambda d: f"{d} ({scales[d][0]:g}–{scales[d][1]:g})")
        expect = c3.text_input(_("Expected answers"), max_chars=40, key=f"{prefix}-crowd-gold-expect-{task.task_id}",
                               help=_("The answers that pass: LOW or LOW:HIGH within the dimension's scale, e.g. 0 "
                                      "or 1:2"))
        count = c4.number_input(_("Units"), 1, 1000, 1, key=f"{prefix}-crowd-gold-count-{task.task_id}",
                                help=_("Gold units of this kind, each on another item (custom: one)"))
        c5, c6 = st.columns([1, 3])
        item = c5.text_input(_("Item (custom)"), max_chars=200, key=f"{prefix}-crowd-gold-item-{task.task_id}",
                             help=_("The id of the item whose context is shown"))
        response = c6.text_area(_("Reply shown (custom)"), max_chars=4000, height=68,
                                key=f"{prefix}-crowd-gold-response-{task.task_id}")
        if st.form_submit_button(_("Add gold units")):
            try:
                added = crowd_data.add_gold(con, task.task_id, kind=kind, dimension=dimension, expect=expect,
                                            count=int(count), item=item, response=response)
            except (ValueError, StoreError) as exc:
                st.error(md_escape(str(exc)))
            else:
                _said(prefix, ngettext("{n} gold unit added: {kind}, {dimension} expected {expected}.",
                                       "{n} gold units added: {kind}, {dimension} expected {expected}.", added).format(
                    n=i18n.number(added), kind=crowd_data.gold_name(kind), dimension=dimension,
                    expected=expect.strip()))


def question_form(con, task, *, kind: str, prefix: str) -> None:
    """The comprehension questions with their right answers, and the form that adds one (evalcore crowd
    question)."""
    asked = crowd_data.questions_with_answers(con, task.task_id, kind)
    if asked:
        st.caption(_("Comprehension questions: a worker answers them before the real work, in two attempts at "
                     "most."))
        lines = []
        for no, question, options, right in asked:
            lines.append(_("Question {no}: {question}").format(no=no, question=question))
            lines += [f"  {k}. {option}" for k, option in enumerate(options, 1)]
            lines.append("  " + _("Right answer: {number}. {answer}").format(number=right + 1,
                                                                          answer=options[right]))
        st.text("\n".join(lines))
    else:
        st.caption(_("No comprehension question: workers start the real work at once."))
    keys = [f"{prefix}-crowd-{what}-{task.task_id}" for what in ("question", "options", "answer")]
    with st.form(f"{prefix}-crowd-question-form-{task.task_id}"):
        question = st.text_input(_("Question"), max_chars=500, key=keys[0])
        c1, c2 = st.columns([3, 1])
        options = c1.text_area(_("Answers offered, one a line (two to six)"), max_chars=2000, height=140,
                               key=keys[1])
        answer = c2.number_input(_("The right answer's line"), 1, crowd_data.MAX_OPTIONS, 1, key=keys[2])
        if st.form_submit_button(_("Add the question")):
            try:
                no = crowd_data.add_question(con, task.task_id, question, options, int(answer), kind=kind)
            except (ValueError, StoreError) as exc:
                st.error(md_escape(str(exc)))
            else:
                _said(prefix, _("Comprehension question {no} added.").format(no=no), *keys)


def instruction_form(con, task, study, *, prefix: str) -> None:
    """A chat study's instruction checks with their expected words, and the form that adds one (evalcore crowd
    instruction --chat)."""
    told = crowd_data.instructions(con, task.task_id)
    if told:
        st.caption(ngettext("Instruction checks: one is shown inside the scenario of {gold} conversation of each "
                            "worker, in turn; one of the worker's messages there must contain its word.",
                            "Instruction checks: one is shown inside the scenario of {gold} conversations of each "
                            "worker, in turn; one of the worker's messages there must contain its word.",
                            study.gold).format(gold=i18n.number(study.gold)))
        lines = []
        for no, text, expect in told:
            lines.append(_("Instruction {no}: {text}").format(no=no, text=text))
            lines.append("  " + _("Expected word: {word}").format(word=expect))
        st.text("\n".join(lines))
    else:
        st.caption(_("No instruction check yet: add one before workers arrive."))
    keys = [f"{prefix}-crowd-instruction-{task.task_id}", f"{prefix}-crowd-expect-{task.task_id}"]
    with st.form(f"{prefix}-crowd-instruction-form-{task.task_id}"):
        c1, c2 = st.columns([3, 1])
        text = c1.text_area(_("Instruction"), max_chars=crowd_data.MAX_INSTRUCTION, height=68, key=keys[0],
                            help=_("In the task's language, e.g. \"In your first message, mention the word "
                                   "giraffe.\""))
        expect = c2.text_input(_("Expected word"), max_chars=100, key=keys[1],
                               help=_("The word one of the worker's messages in that conversation contains (case "
                                      "and width ignored)"))
        if st.form_submit_button(_("Add the instruction check")):
            try:
                no = crowd_data.add_instruction(con, task.task_id, text, expect)
            except (ValueError, StoreError) as exc:
                st.error(md_escape(str(exc)))
            else:
                _said(prefix, _("Instruction check {no} added.").format(no=no), *keys)


def open_form(con, task, *, kind: str, prefix: str) -> None:
    """The form that opens an open task to a crowd platform (evalcore crowd open, --chat for a chat task); gold
    units, instruction checks and comprehension questions are added in the study's part once it is open
    (setup_part)."""
    chat = kind == "chat"
    with st.expander(_("Open to a crowd platform")):
        if chat:
            st.caption(md_message(_("Workers of Prolific, MTurk or another platform then arrive by the study's link "
                                    "on the Chat page, with no name or access code to type, hold their conversations "
                                    "one after another and leave with the completion code. Instruction checks and "
                                    "comprehension questions are added in the study's part of this page once it "
                                    "is open.")))
        else:
            st.caption(md_message(_("Workers of Prolific, MTurk or another platform then arrive by the study's link, "
                                    "with no name to type, and leave with the completion code. Gold units and "
                                    "comprehension questions are added in the study's part of this page once it is "
                                    "open.")))
        with st.form(f"{prefix}-crowd-open-{task.task_id}"):
            c1, c2, c3 = st.columns(3)
            platform = c1.selectbox(_("Platform"), crowd_data.PLATFORMS, format_func=crowd_data.platform_name,
                                    key=f"{prefix}-crowd-platform")
            code = c2.text_input(_("Completion code"), max_chars=64, key=f"{prefix}-crowd-code",
                                 help=_("The code the platform expects from a worker who completed the study"))
            failed = c3.text_input(_("Code for a failed check (optional)"), max_chars=64, key=f"{prefix}-crowd-failed",
                                   help=_("The code a worker who failed the checks gets; without it, they get none"))
            redirect = st.text_input(_("Redirect (optional)"), max_chars=500, key=f"{prefix}-crowd-redirect",
                                     help=_("An https:// address the worker is sent to at the end, {code} replaced "
                                            "by their code; on Prolific, Prolific's completion page by default"))
            c4, c5, c6, c7 = st.columns(4)
            if chat:
                units = c4.number_input(_("Conversations per worker"), 1, 100, 3, key=f"{prefix}-crowd-units")
                gold = c5.number_input(_("Instruction checks per worker"), 0, 100, 0,
                                       key=f"{prefix}-crowd-gold",
                                       help=_("The instruction is shown inside the scenario of that many of each "
                                              "worker's conversations (add it in the study's part once it is open)"))
            else:
                units = c4.number_input(_("Units per worker"), 1, 1000, 10, key=f"{prefix}-crowd-units")
                gold = c5.number_input(_("Gold units per worker"), 0, 999, 0, key=f"{prefix}-crowd-gold")
            pay = c6.number_input(_("Pay per worker (optional)"), 0.0, 1e6, None, step=0.1, key=f"{prefix}-crowd-pay")
            currency = c7.text_input(_("Currency"), max_chars=8, key=f"{prefix}-crowd-currency")
            c8, c9 = st.columns(2)
            too_fast = None
            if chat:
                gold_min = c8.number_input(_("Least share of instruction checks followed"), 0.0, 1.0,
                                           float(crowd_data.RULE["gold_min"]), step=0.05,
                                           key=f"{prefix}-crowd-gold-min")
            else:
                gold_min = c8.number_input(_("Least share of gold units passed"), 0.0, 1.0,
                                           float(crowd_data.RULE["gold_min"]), step=0.05,
                                           key=f"{prefix}-crowd-gold-min")
                too_fast = c9.number_input(_("Largest share of answers faster than reading"), 0.0, 1.0,
                                           float(crowd_data.RULE["too_fast_max"]), step=0.05,
                                           key=f"{prefix}-crowd-too-fast")
            if st.form_submit_button(_("Open to the platform")):
                try:
                    opened = crowd_data.open_study(con, task.task_id, platform=platform, completion_code=code,
                                                   failed_code=failed, redirect=redirect, units=int(units),
                                                   gold=int(gold), pay=pay, currency=currency,
                                                   gold_min=gold_min, too_fast_max=too_fast, kind=kind)
                except (ValueError, StoreError) as exc:
                    st.error(md_escape(str(exc)))
                else:
                    st.session_state[f"{prefix}-crowd-said"] = (
                        _("Chat task {task} is open to {platform}: paste the study link below into the platform.")
                        if chat else
                        _("Task {task} is open to {platform}: paste the study link below into the platform.")).format(
                        task=task.task_id, platform=crowd_data.platform_name(opened.platform))
                    st.rerun()
