"""Chat tasks: make an interactive evaluation (people talk with blind endpoints on a track's grounded scenarios,
then rate whole dialogues), follow it, review conversations (accept, or send back with a reason, as MSDE's experts
did), read its results per endpoint, and export every message and rating."""
import streamlit as st

from evalcore.core import i18n
from evalcore.core.errors import StoreError
from evalcore.core.i18n import N_, _
from evalcore.pagedata import chats
from pages.kit import crowd_admin, lang
from pages.kit.access import may_write
from pages.kit.runtime import cursor, data, release
from pages.kit.state import page_link, publish, start
from pages.kit.text import md_escape
from pages.kit.widgets import grid

# ids this page shows through _ (a task's and a conversation's state, a job's state, a flag): their words in the catalog
WORDS = (N_("open"), N_("closed"), N_("deleted"), N_("talking"), N_("ended"), N_("rated"), N_("accepted"), N_("sent back"),
         N_("queued"), N_("running"), N_("done"), N_("failed"), N_("interrupted"))
# the headers of the tables this page shows (grid() translates each through the catalog)
HEADERS = (
    # the chat tasks; the tracks scenarios come from
    N_("task_id"), N_("name"), N_("dataset"), N_("track"), N_("skill"), N_("dialogues"), N_("endpoints"),
    N_("scenarios"), N_("per_scenario"), N_("max_rounds"), N_("review"), N_("state"), N_("target"),
    N_("created_at"), N_("language"),
    # per endpoint; sent back; waiting for review
    N_("endpoint"), N_("conversations"), N_("rounds"), N_("goal reached"), N_("conversation_id"), N_("scenario"),
    N_("annotator"), N_("reason"), N_("goal"), N_("ended_at"),
    # the simulated users and their audit
    N_("simulator"), N_("style"), N_("not started"), N_("talking"), N_("rated"), N_("accepted"), N_("sent_back"),
    N_("measure"), N_("system"), N_("systems"), N_("kendall tau"), N_("tau 95% CI"), N_("draws without tau"),
    N_("ranks as people did on"), N_("ranks against people on"), N_("people"), N_("simulated"),
    N_("n people"), N_("n simulated"), N_("difference"), N_("difference 95% CI"), N_("hedges g"), N_("g 95% CI"),
    N_("brought up: simulated"), N_("brought up: people"), N_("brought up: g"), N_("note"),
)
DATASETS_OWN = ""   # the language option that leaves a new chat task in its dataset's language (lang None)
OWN = N_("the simulators themselves")   # the simulated conversations' raters when no judge is picked (an id)

con, vs = start(_("Chat tasks"))
tasks = chats.all_tasks(con)
ids = [str(t) for t in tasks["task_id"]]
chosen = vs.one("task", ids, ids[-1] if ids else None, unavailable=_("is not a chat task of this store"))
publish("chats", {"task": chosen} if chosen else {}, vs.notices)
st.caption(_("People talk with models they are not told the names of, on scenarios drawn from a track's dialogues, "
             "then rate each whole conversation (the Chat page). Accepted conversations become dialogues of the "
             "task's own dataset, which every page and metric reads like any other."))
if not tasks.empty:
    shown_tasks = tasks.drop(columns=["created_by"])
    langs = [getattr(chats.task(con, int(t)), "lang", None) for t in shown_tasks["task_id"]]
    shown_tasks.insert(shown_tasks.columns.get_loc("track") + 1, "language", [i18n.NAMES.get(x, x) for x in langs])
    shown_tasks["state"] = shown_tasks["state"].map(lambda v: _(v) if isinstance(v, str) else v)   # an id, in words
    grid(shown_tasks, width="stretch")
else:
    st.caption(_("Where scenarios can come from: the tracks with stored dialogues (a dialogue's grounding is a "
                 "scenario; a dialogue without one, chit-chat, gives its first utterance as an opening)"))
    grid(chats.tracks_with_dialogues(con), width="stretch")

allowed, who = may_write()
made = st.session_state.pop("ct-created", None)
if made:
    st.success(_("Chat task {task} created. Send the people the link and the access code shown below.")
               .format(task=made))
with st.expander(_("Create a chat task"), expanded=tasks.empty):
    sources, endpoints = chats.tracks_with_dialogues(con), chats.endpoints(con)
    if not allowed:
        st.caption(_("Creating a chat task needs write access (see above)."))
    elif not endpoints:
        st.info(_("No endpoint is registered: add one on the Upload page (Evaluate an endpoint) or with "
                  "`evalcore endpoint add`."))
    elif sources.empty:
        st.info(_("No dataset has stored dialogues to draw scenarios from."))
    else:
        labels = [_("{dataset} · {track} ({n} dialogues)").format(dataset=r.dataset, track=r.track,
                                                                   n=i18n.number(r.dialogues))
                  for r in sources.itertuples()]
        with st.form("ct-create"):
            at = st.selectbox(_("Scenarios from"), range(len(labels)), format_func=lambda i: labels[i],
                              key="ct-source")
            picked = st.multiselect(_("Endpoints (shown to people only as 'the model')"), endpoints, endpoints[:2],
                                    key="ct-endpoints")
            registered = chats.simulators(con)
            users = st.multiselect(_("Simulated users (`evalcore simulator add`; they hold conversations on the same "
                                     "scenarios, run by `evalcore chat simulate`)"), registered, [], key="ct-sims",
                                   disabled=not registered,
                                   placeholder=_("Choose options") if registered else _("No options to select"))
            people = st.checkbox(_("People hold conversations too"), True, key="ct-people")
            c1, c2, c3, c4 = st.columns(4)
            # the bounds `evalcore chat create` takes too (evalcore.store.chats.check_bounds)
            n = c1.number_input(_("Scenarios"), 1, chats.MAX_SCENARIOS, 10, key="ct-n")
            k = c2.number_input(_("Conversations per scenario and endpoint"), 1, chats.MAX_PER_SCENARIO, 1, key="ct-k")
            rounds = c3.number_input(_("Rounds at most"), 1, chats.MAX_ROUNDS, 10, key="ct-rounds")
            seed = c4.number_input(_("Seed"), 0, 2**31 - 1, 0, key="ct-seed")
            review = st.checkbox(_("A reviewer accepts each conversation before it counts"), True, key="ct-review")
            # the source is picked inside this form (no rerun until it is sent): its dataset's language is the
            # default, chosen by the service once the source is known
            chat_lang = st.selectbox(_("Language"), [DATASETS_OWN, *i18n.LANGS], key="ct-lang",
                                     format_func=lambda v: i18n.NAMES.get(v) or _("The dataset's language"),
                                     help=_("The language its people read the Chat page, the questions and the flags "
                                            "in, whatever their browser's language"))
            name = st.text_input(_("Name"), max_chars=120, key="ct-name")
            guidelines = st.text_area(_("Guidelines for the people chatting"), max_chars=5000, key="ct-guide")
            if st.form_submit_button(_("Create chat task")):
                row = sources.iloc[int(at)]
                try:
                    new = chats.create(con, dataset=row["dataset"], track=row["track"], endpoints=picked,
                                       n_scenarios=int(n), per_scenario=int(k), max_rounds=int(rounds), seed=int(seed),
                                       review=review, name=name or None, guidelines=guidelines, created_by=who,
                                       simulators=users or None, people=people, lang=chat_lang or None)
                except (ValueError, StoreError) as exc:
                    st.error(md_escape(str(exc)))
                else:
                    st.session_state["ct-created"] = new
                    st.query_params["task"] = str(new)
                    st.rerun()

if not chosen:
    lang.stop()   # the language switch drawn first (after st.stop() nothing more is)
task = chats.task(con, int(chosen))
st.subheader(_("Chat task {task}").format(task=task.task_id))
st.text(f"{task.name}\n" + _("scenarios from {dataset} · {track}; endpoints {endpoints}; {per_scenario} per scenario "
                              "and endpoint; at most {rounds} rounds; rated on {dimensions}; {state}; conversations "
                              "become dataset {target}").format(
    dataset=task.dataset, track=task.track, endpoints=", ".join(task.endpoints),
    per_scenario=i18n.number(task.per_scenario), rounds=i18n.number(task.max_rounds),
    dimensions=", ".join(d.dimension for d in task.dimensions), state=_(task.state), target=task.target))
url = page_link("chat", {"task": str(task.task_id)})
st.link_button(_("Open the chat page"), url, help=_("the page people chat on (send them this link)"))
st.text(_("People open {link} and give the access code {code}").format(link=url, code=task.access_code) if allowed
        else _("People open {link} (the access code is shown to those who may write)").format(link=url))

everything = st.toggle(_("Count every rated conversation, not only accepted ones"), False, key="ct-all",
                       disabled=not task.review)
result = chats.results(con, task.task_id, include_all=everything)
states = result["states"]
now = ", ".join(_("{n} {state}").format(n=i18n.number(v), state=_(k.replace("_", " "))) for k, v in sorted(states.items()))
st.caption((_("Per endpoint, over rated and accepted conversations: rounds, how often the person said the goal was "
              "reached, and the mean whole-dialogue rating with its 95% bootstrap interval over conversations. States "
              "now: {states}") if everything else
            _("Per endpoint, over accepted conversations: rounds, how often the person said the goal was reached, and "
              "the mean whole-dialogue rating with its 95% bootstrap interval over conversations. States now: "
              "{states}")).format(states=now))
two = st.column_config.NumberColumn(format="%.2f")
grid(result["table"], width="stretch",
     column_config={"rounds": st.column_config.NumberColumn(format="%.1f"),
                    "goal_reached": st.column_config.NumberColumn("goal reached", format="percent"),
                    **{d.dimension: two for d in task.dimensions},
                    **{f"{d.dimension} 95% CI": _("{dimension} 95% CI").format(dimension=d.dimension)
                       for d in task.dimensions}})
if len(result["sent_back"]):
    st.caption(_("{n} sent back (each replaced by a fresh conversation for someone else)")
               .format(n=i18n.number(len(result["sent_back"]))))
    grid(result["sent_back"], width="stretch")


def scoring_panel() -> None:
    lang.resume()   # a fragment's rerun runs without app.py: the page's language again
    try:
        scoring()
    finally:
        release()  # a fragment's rerun does not end in app.py: its cursor is given back here


def scoring() -> None:
    """Accepted conversations are scored as an upload is (a job: the reference-free metrics), and Metric trust
    opens on them once it has something to correlate; until then, what is still missing."""
    state = chats.trust_state(cursor(), task)
    job = state["job"]
    if busy and (job or {}).get("state") not in ("queued", "running"):
        st.rerun()   # the job ended: the whole page again (its results, and no more redraws every 1.5 s)
    if job is not None:
        words = {"done": N_("Scoring job {job} ({metrics}): done"),
                 "failed": N_("Scoring job {job} ({metrics}): failed: {detail}"),
                 "interrupted": N_("Scoring job {job} ({metrics}): interrupted (server restarted): {detail}"),
                 "queued": N_("Scoring job {job} ({metrics}): waiting to start"),
                 "running": N_("Scoring job {job} ({metrics}): running: {detail}")}
        said = _(words[job["state"]]) if job["state"] in words else \
            "Scoring job {job} ({metrics}): " + job["state"] + "{detail}"
        st.progress(job["progress"], text=md_escape(said.format(job=job["job_id"], metrics=", ".join(chats.SCORED),
                                                                detail=job["detail"])))
    offer = allowed and state["score"]
    c1, c2, *c3 = st.columns(3 if offer else 2)   # two buttons: half the width each (at 800 px, labels not cut)
    c1.link_button(_("Metric trust on these dialogues"),
                   page_link("trust", {"dataset": task.target, "level": "dialogue"}),
                   help=_("which metric agrees with the people's whole-dialogue ratings"), disabled=not state["ready"])
    c2.link_button(_("Rate these dialogues with more people"), page_link("tasks", {}),
                   help=_("a rating task on {dataset} at dialogue level (K raters per dialogue, blind) gives "
                          "agreement; a pairwise one compares two endpoints' conversations on the same scenario "
                          "(ACUTE-Eval)").format(dataset=task.target))
    if offer and c3[0].button(_("Score the accepted conversations"), key="ct-score",
                              help=_("a job, as an upload's: only values not yet cached are computed")):
        chats.score_accepted(cursor(), task)
        st.rerun()
    if state["missing"]:
        st.caption(md_escape((_("Metric trust: {missing}.") if not state["ready"] else "{missing}.")
                             .format(missing=state["missing"])))


busy = (chats.trust_state(con, task)["job"] or {}).get("state") in ("queued", "running")   # redrawn until it ends
st.fragment(run_every=1.5 if busy else None)(scoring_panel)()
with st.expander(_("Signatures: how each endpoint was asked")):
    for endpoint, setting in task.settings.items():
        st.text(f"{endpoint}: {setting['signature']}")

if task.simulators:
    st.subheader(_("Simulated users"))
    st.caption(_("An LLM plays the user on the same scenarios with the same endpoints. Each simulator's accepted "
                 "conversations become a dataset of their own ({target}-sim-<simulator>), never mixed with people's; "
                 "its ratings are its own answers to the task's questions, not people's. Run the conversations with "
                 "`evalcore chat simulate {task}` (a run that stopped goes on where it stands).")
               .format(target=task.target, task=task.task_id))
    listing = chats.simulated(con, task)
    grid(listing.drop(columns=["signature"]), width="stretch")
    running = (chats.simulation_job(con, task) or {}).get("state") in ("queued", "running")

    def simulation_panel() -> None:
        lang.resume()   # a fragment's rerun runs without app.py: the page's language again
        try:
            job = chats.simulation_job(cursor(), task)
            if running and (job or {}).get("state") not in ("queued", "running"):
                st.rerun()   # the job ended: the whole page again (the conversations, the audit)
            if job is not None:
                st.progress(float(job["progress"] or 0), text=md_escape(
                    (_("Simulation job {job}: {state}: {detail}") if job["detail"] else
                     _("Simulation job {job}: {state}")).format(job=job["job_id"], state=_(job["state"]),
                                                                  detail=job["detail"])))
            left = int(listing["conversations"].sum() - listing["rated"].sum() - listing["accepted"].sum())
            if allowed and task.state == "open" and left and not running and st.button(
                    _("Run the {n} simulated conversations not finished").format(n=i18n.number(left)),
                    key="ct-simulate",
                    help=_("a job, as `evalcore chat simulate {task}`: it goes on when you leave the page, and a run "
                           "that stopped goes on where it stands").format(task=task.task_id)):
                chats.simulate(cursor(), task)
                st.rerun()
        finally:
            release()

    st.fragment(run_every=1.5 if running else None)(simulation_panel)()
    with st.expander(_("Signatures: how each simulator played the user")):
        for row in listing.itertuples():   # whole and wrapped: a table's cell would cut it
            st.text(f"{row.simulator}: {row.signature}")
    judges = chats.judges_of(con, task.task_id)
    own = OWN
    rated_by = st.selectbox(_("Simulated conversations rated by"), [own, *judges], key=f"ct-rated-by-{task.task_id}",
                            format_func=lambda v: _(v) if v == own else v,
                            help=_("the simulators' own answers to the task's questions, or a judge that read each "
                                   "conversation whole (`evalcore chat judge`); people's conversations are always "
                                   "rated by the people who held them")) if judges else own
    audit = data(chats.simulator_audit, task.task_id, everything, None if rated_by == own else rated_by)
    if audit["missing"]:
        st.caption(md_escape(_("Simulator audit: {missing}.").format(missing=audit["missing"])))
    else:
        st.caption((_("Simulator audit: can a simulator stand in for the people of this task? Over rated and "
                      "accepted conversations ({people} held by people): Kendall's tau between the endpoints' values "
                      "from simulated and from people's conversations, with a 95% bootstrap interval over scenarios; "
                      "a verdict claims agreement only when the interval lies above 0.") if everything else
                    _("Simulator audit: can a simulator stand in for the people of this task? Over accepted "
                      "conversations ({people} held by people): Kendall's tau between the endpoints' values from "
                      "simulated and from people's conversations, with a 95% bootstrap interval over scenarios; a "
                      "verdict claims agreement only when the interval lies above 0.")).format(people=audit["people"]))
        for name, sentences in audit["verdicts"].items():
            st.text(name)
            __, lines = st.columns([1, 40])   # each verdict indented under its simulator, wrapped lines too
            for line in sentences:
                lines.text(line)
        two = {c: st.column_config.NumberColumn(format="%.2f") for c in
               ("kendall tau", "people", "simulated", "difference", "hedges g", "brought up: simulated",
                "brought up: people", "brought up: g")}
        grid(audit["summary"].drop(columns=["signature"]), width="stretch", column_config=two)

        def whole(frame):   # every row shown: the rows past the tenth are another simulator's
            return {"height": 38 + 35 * len(frame)}

        with st.expander(_("Rankings and each endpoint's difference (simulated minus people)")):
            grid(audit["rankings"], width="stretch", column_config=two, **whole(audit["rankings"]))
            grid(audit["differences"], width="stretch", column_config=two, **whole(audit["differences"]))
        with st.expander(_("How the simulated users behave against people (Hedges' g, 95% interval over "
                           "conversations)")):
            grid(audit["behaviour"], width="stretch", column_config=two, **whole(audit["behaviour"]))
    told = data(chats.detection, task.task_id)
    if told["task"] is not None:
        st.text(_("Can people tell? (rating task {task}) {verdict}").format(task=told["task"], verdict=told["verdict"]))
    elif allowed and not audit["missing"] and st.button(
            _("Ask people who held each conversation"), key="ct-detect",
            help=_("a rating task over the accepted conversations, people's and simulated mixed, asking \"Was the "
                   "user a person?\" (3 people per conversation); its accuracy against 50% shows here")):
        try:
            chats.ask_who(con, task.task_id, who)
        except (ValueError, StoreError) as exc:
            st.error(md_escape(str(exc)))
        else:
            st.rerun()

waiting = chats.waiting(con, task.task_id)
with st.expander(_("Review ({n} waiting)").format(n=i18n.number(len(waiting))), expanded=bool(len(waiting)) and allowed):
    if not allowed:
        st.caption(_("Reviewing needs write access (see above)."))
    elif waiting.empty:
        st.caption(_("Nothing waits for review."))
    else:
        grid(waiting, width="stretch")
        cid = st.selectbox(_("Conversation"), waiting["conversation_id"].tolist(), key="ct-review-pick")
        shown = chats.transcript(con, int(cid))
        for idx, role, text in shown["messages"]:
            with st.chat_message("user" if role == "user" else "assistant"):
                st.text(text)
                if shown["flags"].get(int(idx)):
                    st.caption(md_escape(_("flagged: {flags}").format(
                        flags=", ".join(_(f) for f in sorted(shown["flags"][int(idx)])))))
        st.text(_("Ratings: {ratings}").format(ratings=", ".join(f"{d} {v:g}" for d, v in sorted(shown["ratings"].items()))))
        reason = st.text_input(_("Reason, when sending it back"), max_chars=2000, key=f"ct-reason-{cid}")
        a, b = st.columns(2)
        try:
            if a.button(_("Accept"), key=f"ct-accept-{cid}"):
                chats.review(con, int(cid), who or "reviewer", True)
                st.rerun()
            if b.button(_("Send back"), key=f"ct-back-{cid}"):
                chats.review(con, int(cid), who or "reviewer", False, reason)
                st.rerun()
        except (ValueError, StoreError) as exc:
            st.error(md_escape(str(exc)))

if allowed:
    c1, c2 = st.columns(2)
    opened = task.state == "open"
    if c1.button(_("Close (no new conversations)") if opened else _("Reopen"), key="ct-state"):
        chats.set_state(con, task.task_id, "closed" if opened else "open")
        st.rerun()
    c2.download_button(_("Download every message and rating (zip of CSV)"), chats.export_zip(con, task.task_id),
                       file_name=f"chat-task-{task.task_id}.zip", mime="application/zip", key="ct-export")
# a crowd study's part (pages/kit/crowd_admin.py, as on the Rating tasks page): its settings, link, workers and
# decisions; codes and identifiers with write access only. An open task that is not one: the form that opens it.
crowd_admin.study_part(con, task, kind="chat", allowed=allowed, who=who, prefix="ct")
