"""Chat tasks: make an interactive evaluation (people talk with blind endpoints on a track's grounded scenarios,
then rate whole dialogues), follow it, review conversations (accept, or send back with a reason, as MSDE's experts
did), read its results per endpoint, and export every message and rating."""
import streamlit as st

from evalcore.core.errors import StoreError
from evalcore.pagedata import chats
from pages.kit.access import may_write
from pages.kit.runtime import cursor, data, release
from pages.kit.state import page_link, publish, start
from pages.kit.text import md_escape
from pages.kit.widgets import grid

con, vs = start("Chat tasks")
tasks = chats.all_tasks(con)
ids = [str(t) for t in tasks["task_id"]]
chosen = vs.one("task", ids, ids[-1] if ids else None, unavailable="is not a chat task of this store")
publish("chats", {"task": chosen} if chosen else {}, vs.notices)
st.caption("People talk with models they are not told the names of, on scenarios drawn from a track's dialogues, "
           "then rate each whole conversation (the Chat page). Accepted conversations become dialogues of the task's "
           "own dataset, which every page and metric reads like any other.")
if not tasks.empty:
    grid(tasks.drop(columns=["created_by"]), width="stretch")
else:
    st.caption("Where scenarios can come from: the tracks with stored dialogues (a dialogue's grounding is a "
               "scenario; a dialogue without one, chit-chat, gives its first utterance as an opening)")
    grid(chats.tracks_with_dialogues(con), width="stretch")

allowed, who = may_write()
made = st.session_state.pop("ct-created", None)
if made:
    st.success(f"Chat task {made} created. Send the people the link and the access code shown below.")
with st.expander("Create a chat task", expanded=tasks.empty):
    sources, endpoints = chats.tracks_with_dialogues(con), chats.endpoints(con)
    if not allowed:
        st.caption("Creating a chat task needs write access (see above).")
    elif not endpoints:
        st.info("No endpoint is registered: add one on the Upload page (Evaluate an endpoint) or with "
                "`evalcore endpoint add`.")
    elif sources.empty:
        st.info("No dataset has stored dialogues to draw scenarios from.")
    else:
        labels = [f"{r.dataset} · {r.track} ({r.dialogues} dialogues)" for r in sources.itertuples()]
        with st.form("ct-create"):
            at = st.selectbox("Scenarios from", range(len(labels)), format_func=lambda i: labels[i], key="ct-source")
            picked = st.multiselect("Endpoints (shown to people only as 'the model')", endpoints, endpoints[:2],
                                    key="ct-endpoints")
            registered = chats.simulators(con)
            users = st.multiselect("Simulated users (`evalcore simulator add`; they hold conversations on the same "
                                   "scenarios, run by `evalcore chat simulate`)", registered, [], key="ct-sims",
                                   disabled=not registered)
            people = st.checkbox("People hold conversations too", True, key="ct-people")
            c1, c2, c3, c4 = st.columns(4)
            # the bounds `evalcore chat create` takes too (evalcore.store.chats.check_bounds)
            n = c1.number_input("Scenarios", 1, chats.MAX_SCENARIOS, 10, key="ct-n")
            k = c2.number_input("Conversations per scenario and endpoint", 1, chats.MAX_PER_SCENARIO, 1, key="ct-k")
            rounds = c3.number_input("Rounds at most", 1, chats.MAX_ROUNDS, 10, key="ct-rounds")
            seed = c4.number_input("Seed", 0, 2**31 - 1, 0, key="ct-seed")
            review = st.checkbox("A reviewer accepts each conversation before it counts", True, key="ct-review")
            name = st.text_input("Name", max_chars=120, key="ct-name")
            guidelines = st.text_area("Guidelines for the people chatting", max_chars=5000, key="ct-guide")
            if st.form_submit_button("Create chat task"):
                row = sources.iloc[int(at)]
                try:
                    new = chats.create(con, dataset=row["dataset"], track=row["track"], endpoints=picked,
                                       n_scenarios=int(n), per_scenario=int(k), max_rounds=int(rounds), seed=int(seed),
                                       review=review, name=name or None, guidelines=guidelines, created_by=who,
                                       simulators=users or None, people=people)
                except (ValueError, StoreError) as exc:
                    st.error(md_escape(str(exc)))
                else:
                    st.session_state["ct-created"] = new
                    st.query_params["task"] = str(new)
                    st.rerun()

if not chosen:
    st.stop()
task = chats.task(con, int(chosen))
st.subheader(f"Chat task {task.task_id}")
st.text(f"{task.name}\nscenarios from {task.dataset} · {task.track}; endpoints {', '.join(task.endpoints)}; "
        f"{task.per_scenario} per scenario and endpoint; at most {task.max_rounds} rounds; rated on "
        f"{', '.join(d.dimension for d in task.dimensions)}; {task.state}; conversations become dataset {task.target}")
url = page_link("chat", {"task": str(task.task_id)})
st.link_button("Open the chat page", url, help="the page people chat on (send them this link)")
st.text(f"People open {url} and give the access code {task.access_code}" if allowed else
        f"People open {url} (the access code is shown to those who may write)")

everything = st.toggle("Count every rated conversation, not only accepted ones", False, key="ct-all",
                       disabled=not task.review)
result = chats.results(con, task.task_id, include_all=everything)
states = result["states"]
st.caption(f"Per endpoint, over {'rated and accepted' if everything else 'accepted'} conversations: rounds, how "
           "often the person said the goal was reached, and the mean whole-dialogue rating with its 95% bootstrap "
           f"interval over conversations. States now: " + ", ".join(f"{v} {k.replace('_', ' ')}"
                                                                      for k, v in sorted(states.items())))
two = st.column_config.NumberColumn(format="%.2f")
grid(result["table"], width="stretch",
     column_config={"rounds": st.column_config.NumberColumn(format="%.1f"),
                    "goal_reached": st.column_config.NumberColumn("goal reached", format="percent"),
                    **{d.dimension: two for d in task.dimensions}})
if len(result["sent_back"]):
    st.caption(f"{len(result['sent_back'])} sent back (each replaced by a fresh conversation for someone else)")
    grid(result["sent_back"], width="stretch")


def scoring_panel() -> None:
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
        words = {"done": "done", "failed": "failed: ", "interrupted": "interrupted (server restarted): ",
                 "queued": "waiting to start", "running": "running: "}
        tail = "" if job["state"] in ("done", "queued") else job["detail"]
        st.progress(job["progress"], text=md_escape(f"Scoring job {job['job_id']} ({', '.join(chats.SCORED)}): "
                                                    f"{words.get(job['state'], job['state'])}{tail}"))
    offer = allowed and state["score"]
    c1, c2, *c3 = st.columns(3 if offer else 2)   # two buttons: half the width each (at 800 px, labels not cut)
    c1.link_button("Metric trust on these dialogues", page_link("trust", {"dataset": task.target, "level": "dialogue"}),
                   help="which metric agrees with the people's whole-dialogue ratings", disabled=not state["ready"])
    c2.link_button("Rate these dialogues with more people", page_link("tasks", {}),
                   help=f"a rating task on {task.target} at dialogue level (K raters per dialogue, blind) gives "
                        "agreement; a pairwise one compares two endpoints' conversations on the same scenario "
                        "(ACUTE-Eval)")
    if offer and c3[0].button("Score the accepted conversations", key="ct-score",
                              help="a job, as an upload's: only values not yet cached are computed"):
        chats.score_accepted(cursor(), task)
        st.rerun()
    if state["missing"]:
        st.caption(md_escape(("Metric trust: " if not state["ready"] else "") + state["missing"] + "."))


busy = (chats.trust_state(con, task)["job"] or {}).get("state") in ("queued", "running")   # redrawn until it ends
st.fragment(run_every=1.5 if busy else None)(scoring_panel)()
with st.expander("Signatures: how each endpoint was asked"):
    for endpoint, setting in task.settings.items():
        st.text(f"{endpoint}: {setting['signature']}")

if task.simulators:
    st.subheader("Simulated users")
    st.caption(f"An LLM plays the user on the same scenarios with the same endpoints. Each simulator's accepted "
               f"conversations become a dataset of their own ({task.target}-sim-<simulator>), never mixed with people's; "
               f"its ratings are its own answers to the task's questions, not people's. Run the conversations with "
               f"`evalcore chat simulate {task.task_id}` (a run that stopped goes on where it stands).")
    listing = chats.simulated(con, task)
    grid(listing.drop(columns=["signature"]), width="stretch")
    running = (chats.simulation_job(con, task) or {}).get("state") in ("queued", "running")

    def simulation_panel() -> None:
        try:
            job = chats.simulation_job(cursor(), task)
            if running and (job or {}).get("state") not in ("queued", "running"):
                st.rerun()   # the job ended: the whole page again (the conversations, the audit)
            if job is not None:
                st.progress(float(job["progress"] or 0), text=md_escape(
                    f"Simulation job {job['job_id']}: {job['state']}" + (f": {job['detail']}" if job["detail"] else "")))
            left = int(listing["conversations"].sum() - listing["rated"].sum() - listing["accepted"].sum())
            if allowed and task.state == "open" and left and not running and st.button(
                    f"Run the {left} simulated conversations not finished", key="ct-simulate",
                    help=f"a job, as `evalcore chat simulate {task.task_id}`: it goes on when you leave the page, and "
                         "a run that stopped goes on where it stands"):
                chats.simulate(cursor(), task)
                st.rerun()
        finally:
            release()

    st.fragment(run_every=1.5 if running else None)(simulation_panel)()
    with st.expander("Signatures: how each simulator played the user"):
        for row in listing.itertuples():   # whole and wrapped: a table's cell would cut it
            st.text(f"{row.simulator}: {row.signature}")
    judges = chats.judges_of(con, task.task_id)
    own = "the simulators themselves"
    rated_by = st.selectbox("Simulated conversations rated by", [own, *judges], key=f"ct-rated-by-{task.task_id}",
                            help="the simulators' own answers to the task's questions, or a judge that read each "
                                 "conversation whole (`evalcore chat judge`); people's conversations are always "
                                 "rated by the people who held them") if judges else own
    audit = data(chats.simulator_audit, task.task_id, everything, None if rated_by == own else rated_by)
    if audit["missing"]:
        st.caption(md_escape(f"Simulator audit: {audit['missing']}."))
    else:
        st.caption(f"Simulator audit: can a simulator stand in for the people of this task? Over "
                   f"{'rated and accepted' if everything else 'accepted'} conversations ({audit['people']} held by "
                   "people): Kendall's tau between the endpoints' values from simulated and from people's "
                   "conversations, with a 95% bootstrap interval over scenarios; a verdict claims agreement only "
                   "when the interval lies above 0.")
        for name, sentences in audit["verdicts"].items():
            st.text(name)
            _, lines = st.columns([1, 40])   # each verdict indented under its simulator, wrapped lines too
            for line in sentences:
                lines.text(line)
        two = {c: st.column_config.NumberColumn(format="%.2f") for c in
               ("kendall tau", "people", "simulated", "difference", "hedges g", "brought up: simulated",
                "brought up: people", "brought up: g")}
        grid(audit["summary"].drop(columns=["signature"]), width="stretch", column_config=two)

        def whole(frame):   # every row shown: the rows past the tenth are another simulator's
            return {"height": 38 + 35 * len(frame)}

        with st.expander("Rankings and each endpoint's difference (simulated minus people)"):
            grid(audit["rankings"], width="stretch", column_config=two, **whole(audit["rankings"]))
            grid(audit["differences"], width="stretch", column_config=two, **whole(audit["differences"]))
        with st.expander("How the simulated users behave against people (Hedges' g, 95% interval over conversations)"):
            grid(audit["behaviour"], width="stretch", column_config=two, **whole(audit["behaviour"]))
    told = data(chats.detection, task.task_id)
    if told["task"] is not None:
        st.text(f"Can people tell? (rating task {told['task']}) {told['verdict']}")
    elif allowed and not audit["missing"] and st.button(
            "Ask people who held each conversation", key="ct-detect",
            help="a rating task over the accepted conversations, people's and simulated mixed, asking \"Was the user "
                 "a person?\" (3 people per conversation); its accuracy against 50% shows here"):
        try:
            chats.ask_who(con, task.task_id, who)
        except (ValueError, StoreError) as exc:
            st.error(md_escape(str(exc)))
        else:
            st.rerun()

waiting = chats.waiting(con, task.task_id)
with st.expander(f"Review ({len(waiting)} waiting)", expanded=bool(len(waiting)) and allowed):
    if not allowed:
        st.caption("Reviewing needs write access (see above).")
    elif waiting.empty:
        st.caption("Nothing waits for review.")
    else:
        grid(waiting, width="stretch")
        cid = st.selectbox("Conversation", waiting["conversation_id"].tolist(), key="ct-review-pick")
        shown = chats.transcript(con, int(cid))
        for idx, role, text in shown["messages"]:
            with st.chat_message("user" if role == "user" else "assistant"):
                st.text(text)
                if shown["flags"].get(int(idx)):
                    st.caption(md_escape("flagged: " + ", ".join(sorted(shown["flags"][int(idx)]))))
        st.text("Ratings: " + ", ".join(f"{d} {v:g}" for d, v in sorted(shown["ratings"].items())))
        reason = st.text_input("Reason, when sending it back", max_chars=2000, key=f"ct-reason-{cid}")
        a, b = st.columns(2)
        try:
            if a.button("Accept", key=f"ct-accept-{cid}"):
                chats.review(con, int(cid), who or "reviewer", True)
                st.rerun()
            if b.button("Send back", key=f"ct-back-{cid}"):
                chats.review(con, int(cid), who or "reviewer", False, reason)
                st.rerun()
        except (ValueError, StoreError) as exc:
            st.error(md_escape(str(exc)))

if allowed:
    c1, c2 = st.columns(2)
    opened = task.state == "open"
    if c1.button("Close (no new conversations)" if opened else "Reopen", key="ct-state"):
        chats.set_state(con, task.task_id, "closed" if opened else "open")
        st.rerun()
    c2.download_button("Download every message and rating (zip of CSV)", chats.export_zip(con, task.task_id),
                       file_name=f"chat-task-{task.task_id}.zip", mime="application/zip", key="ct-export")
