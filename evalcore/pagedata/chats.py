"""What the Chat and Chat tasks pages show and do: a person's conversation as they see it (the scenario, the
messages, whose turn it is; never which endpoint answers), their writes (one short transaction each, through
evalcore.store.chats), the model's streamed reply kept once, and for the lab: tasks, results, the review queue
and the export."""
from __future__ import annotations

import hmac
import io
import logging
import zipfile

import duckdb
import pandas as pd

from evalcore.core.chat import PLAIN, plain
from evalcore.core.export import safe_csv
from evalcore.core.i18n import N_, _
from evalcore.pagedata.annotation import grounding_lines
from evalcore.pagedata.intake import jobs_shown
from evalcore.pagedata.share import link
from evalcore.services import chats as service
from evalcore.pagedata.crowd import (  # noqa: F401  (the worker's pages read them here)
    crowd_check, crowd_checked, crowd_enter, crowd_outcome, crowd_questions)
from evalcore.services import crowd
from evalcore.services import jobs
from evalcore.simulation import audit
from evalcore.simulation import detection as detecting
from evalcore.store import chats as stored
from evalcore.store.chats import ChatTask
from evalcore.store.transactions import database_path, transaction

log = logging.getLogger("evalcore.chat")
GROUNDING_NAMES = {"knowledge": N_("Knowledge"), "goal": N_("Goal"), "persona": N_("Persona"),
                   "user_profile": N_("User profile")}   # shown through _ (view)
# What a person is told when a reply did not come (keep: services.chats.keep's sentences and core.chat.plain's
# reasons), English as the engine says it; said in the page's language by problem_text.
PROBLEMS = (N_("The reply was interrupted before it finished; nothing of it was stored"),
            N_("The model answered with nothing; nothing was stored"))
NO_ANSWER = N_("The model did not answer ({why})")
WHY = (N_("the server refused the key"), N_("the server does not know the model asked for"), N_("the server is busy"),
       N_("the server failed"), N_("the server refused the request"), N_("the server took too long"),
       N_("the server could not be reached"), N_("its answer could not be read"))


# the bounds of a task's sizes, as `evalcore chat create` takes them (stored.check_bounds)
MAX_SCENARIOS, MAX_PER_SCENARIO, MAX_ROUNDS = stored.MAX_SCENARIOS, stored.MAX_PER_SCENARIO, stored.MAX_ROUNDS
MAX_MESSAGE = stored.MAX_MESSAGE
SCORED = service.reference_free()   # what a chat task's scoring job computes
TaskClosed = stored.TaskClosed   # a write refused because the task closed (the Chat page says so on the task's page)


def open_tasks(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """The open tasks a person may enter, id -> what they are shown for it (blind_label: never the task's name)."""
    ids = [t for (t,) in con.execute("SELECT task_id FROM chat_tasks WHERE state = 'open' ORDER BY task_id").fetchall()]
    return {str(t): blind_label(stored.get(con, t)) for t in ids}


def blind_label(task: ChatTask) -> str:
    """What a person is shown for a task (services.chats.blind_label: never its name, nor an endpoint's), in this
    run's language."""
    if service.track_hidden(task):
        return _("Chat task {task}").format(task=task.task_id)
    return _("Chat task {task}: scenarios of {track}").format(task=task.task_id, track=task.track)


def flag_label(task: ChatTask, flag: str) -> str:
    """A flag as the task's people read it (services.chats.flag_label: a default flag in the task's language)."""
    return service.flag_label(task, flag)


def problem_text(problem: str) -> str:
    """A sentence keep() returned, in this run's language (one the catalog does not hold stays as it is)."""
    if problem in PROBLEMS:
        return _(problem)
    for __, why in PLAIN + (("", "its answer could not be read"),):
        if problem == NO_ANSWER.format(why=why):
            return _(NO_ANSWER).format(why=_(why))
    return problem


def all_tasks(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return stored.listing(con)


def task(con: duckdb.DuckDBPyConnection, task_id: int) -> ChatTask | None:
    try:
        return stored.get(con, task_id)
    except ValueError:
        return None


def code_ok(task: ChatTask, code: str) -> bool:
    return hmac.compare_digest((code or "").strip().lower(), task.access_code.lower())


def personal_link(base: str, task_id: int, name: str, key: str) -> str:
    """The Chat page of the task with the person's name and key filled in (the page takes both out of the bar)."""
    return link(base, "chat", {"task": str(task_id), "name": name, "key": key})


def assign(con: duckdb.DuckDBPyConnection, task: ChatTask, annotator: str) -> int | None:
    return stored.assign(con, task, annotator)


def view(con: duckdb.DuckDBPyConnection, task: ChatTask, conversation_id: int, annotator: str,
         instruction: str | None = None) -> dict:
    """The conversation as its person sees it: its number among theirs, the scenario as (heading, lines), the
    opening to start with (chit-chat), the messages, its state, rounds, pending reply, their ratings and flags.
    `instruction`: a crowd study's instruction check, one line of the scenario among its first ones (with_line)."""
    conv = stored.conversation(con, conversation_id)
    scene = stored.scenario(con, task.task_id, conv.scenario)
    theirs = stored.mine(con, task.task_id, annotator)
    position = theirs["conversation_id"].tolist().index(conversation_id) + 1 if conversation_id in \
        set(theirs["conversation_id"]) else None
    frame = stored.messages(con, conversation_id)
    talked = conv.state != "talking"
    scenario = [(_(GROUNDING_NAMES[k]) if k in GROUNDING_NAMES else k, short_first(lines))
                for k, lines in grounding_lines(scene["grounding"])]
    return {"conversation": conv, "number": position, "done": int(theirs["state"].isin(["rated", "accepted"]).sum()),
            "scenario": with_line(scenario, instruction),
            "opening": scene["opening"], "messages": list(zip(frame["idx"], frame["role"], frame["text"])),
            "rounds": int((frame["role"] == "assistant").sum()),
            "pending": int(frame["idx"].iloc[-1]) if len(frame) and frame["role"].iloc[-1] == "user" else None,
            # what a person has rated or flagged exists only once the conversation ended: not read while talking
            "ratings": stored.ratings(con, conversation_id) if talked else {},
            "flags": stored.flags(con, conversation_id) if talked else {}}


AT_LINE = 2   # where an instruction check stands in the scenario's first part: among the first lines a person reads


def with_line(scenario: list[tuple[str, list[str]]], line: str | None) -> list[tuple[str, list[str]]]:
    """The scenario with one more line in its first part, among its first lines, like any of them (a crowd study's
    instruction check; the endpoint never sees it: its scenario is the stored one). No scenario: a part of its own."""
    if not line:
        return scenario
    if not scenario:
        return [(_(GROUNDING_NAMES["goal"]), [line])]
    heading, lines = scenario[0]
    at = min(AT_LINE, len([x for x in lines if len(x) <= 120]))
    return [(heading, lines[:at] + [line] + lines[at:])] + scenario[1:]


def short_first(lines: list[str], long: int = 120) -> list[str]:
    """The facts first, the long descriptions after (KdConv's 'Information' paragraphs run to 1,000 characters and
    hid the short facts a person steers by)."""
    return [x for x in lines if len(x) <= long] + [x for x in lines if len(x) > long]


def say(con, conversation_id: int, annotator: str, text: str) -> int:
    return stored.say(con, conversation_id, annotator, text)


def ask(con, conversation_id: int):
    return service.ask(con, conversation_id)


def keep(con, conversation_id: int, after: int, reply) -> str | None:
    """Store a finished reply (None), else the sentence the person sees beside a retry. A failed request is said in
    one sentence that names no model, endpoint or server words (chat.plain: a vLLM 404 names the served model); its
    reason, without the key and control characters, goes to the server's log for whoever runs the evaluation."""
    problem = service.keep(con, conversation_id, after, reply)
    if problem is not None and reply is not None and reply.error is not None:
        log.warning("chat conversation %s: no reply from its endpoint: %s", conversation_id, reply.error)
        return plain(reply.error)
    return problem


def end(con, conversation_id: int, annotator: str, goal: bool | None) -> None:
    stored.end(con, conversation_id, annotator, goal=goal)


def rate(con, conversation_id: int, annotator: str, dimension: str, value: float) -> None:
    """One rating; the scoring job it queued (a task without review accepts a conversation once it is rated) is
    started in a worker process of its own."""
    _start(con, service.rate(con, conversation_id, annotator, dimension, value))


def _start(con, job: int | None) -> None:
    """A scoring job just queued, run in a worker process of its own (it goes on when the page is left; a job not
    started here is run by the server's next check)."""
    if job is not None:
        jobs.start(database_path(con), job)


def flag(con, conversation_id: int, idx: int, annotator: str, name: str, value: bool) -> None:
    stored.flag(con, conversation_id, idx, annotator, name, value)


def create(con, **spec) -> int:
    return service.create_chat(con, **spec)


def tracks_with_dialogues(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """(dataset, track, skill, dialogues): where scenarios can come from."""
    return con.execute("""
        SELECT d.dataset, d.track, t.skill, count(*) AS dialogues FROM dialogues d
        LEFT JOIN tracks t USING (dataset, track)
        WHERE d.dataset NOT IN (SELECT target FROM chat_tasks) AND coalesce(d.split, '') NOT IN ('chat', 'simulated')
        GROUP BY ALL ORDER BY 1, 2""").df()


def endpoints(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [n for (n,) in con.execute("SELECT name FROM endpoints ORDER BY name").fetchall()]


def simulators(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [n for (n,) in con.execute("SELECT name FROM simulators ORDER BY name").fetchall()]


def simulated(con: duckdb.DuckDBPyConnection, task: ChatTask) -> pd.DataFrame:
    """Per simulator of the task: its conversations by state, and its signature."""
    convs = stored.conversations(con, task.task_id)
    convs = convs[convs["simulator"].notna()]
    rows = []
    for name, setting in task.simulators.items():
        mine = convs[convs["simulator"] == name]
        counts = mine["state"].value_counts().to_dict()
        rows.append({"simulator": name, "style": setting.get("style"), "conversations": len(mine),
                     "not started": counts.get("open", 0), "talking": counts.get("talking", 0) + counts.get("ended", 0),
                     "rated": counts.get("rated", 0), "accepted": counts.get("accepted", 0),
                     "dataset": task.target_of(name), "signature": setting.get("signature")})
    return pd.DataFrame(rows)


def simulate(con: duckdb.DuckDBPyConnection, task: ChatTask) -> int:
    """The task's simulated conversations run as a job in a worker process of its own (it goes on when the page is
    left; a job not started here is run by the server's next check); its id."""
    with transaction(con):
        job = jobs.create(con, task.dataset, [{"simulate": {"task": task.task_id}}], kind="simulate")
    _start(con, job)
    return job


def simulation_job(con: duckdb.DuckDBPyConnection, task: ChatTask) -> dict | None:
    """The newest simulation job of the task, as jobs.listing has it (None: none yet)."""
    frame = jobs.listing(con, task.dataset)
    for row in frame.to_dict("records"):
        if row["kind"] == "simulate" and row["tracks"] == f"chat task {task.task_id}":
            return row
    return None


def detection(con: duckdb.DuckDBPyConnection, task_id: int) -> dict:
    """Can people tell? (evalcore.simulation.detection.report)"""
    return detecting.report(con, task_id)


def ask_who(con: duckdb.DuckDBPyConnection, task_id: int, created_by: str | None) -> int:
    """The rating task asking "Was the user a person?" of the task's accepted conversations; its id."""
    return detecting.create(con, task_id, created_by=created_by)


def judges_of(con: duckdb.DuckDBPyConnection, task_id: int) -> list[str]:
    """The judges that rated some of the task's conversations whole (`evalcore chat judge`)."""
    return [j for (j,) in con.execute("""SELECT DISTINCT judge FROM chat_judgments WHERE conversation_id IN
        (SELECT conversation_id FROM chat_conversations WHERE task_id = ?) ORDER BY 1""", [task_id]).fetchall()]


def simulator_audit(con: duckdb.DuckDBPyConnection, task_id: int, include_all: bool = False,
                    rated_by: str | None = None) -> dict:
    """The simulator audit of a task (evalcore.simulation.audit) with its intervals written as "[lo, hi]"."""
    result = audit.audit(con, task_id, counted=("rated", "accepted") if include_all else stored.COUNTED,
                         rated_by=rated_by)
    for key in ("rankings", "differences", "behaviour"):
        frame = result[key]
        for column in [c for c in frame.columns if "CI" in c]:
            frame[column] = [audit.interval_text(v) for v in frame[column]]
    result.pop("task", None)
    return result


def results(con, task_id: int, include_all: bool = False) -> dict:
    counted = ("rated", "accepted") if include_all else stored.COUNTED
    return service.results(con, task_id, counted=counted)


def waiting(con, task_id: int) -> pd.DataFrame:
    """Conversations rated and waiting for a reviewer."""
    frame = stored.conversations(con, task_id)
    return frame.loc[frame["state"] == "rated", ["conversation_id", "scenario", "endpoint", "annotator", "rounds",
                                                 "goal", "ended_at"]]


def transcript(con, conversation_id: int) -> dict:
    conv = stored.conversation(con, conversation_id)
    frame = stored.messages(con, conversation_id)
    return {"conversation": conv, "messages": list(zip(frame["idx"], frame["role"], frame["text"])),
            "ratings": stored.ratings(con, conversation_id), "flags": stored.flags(con, conversation_id)}


def review(con, conversation_id: int, reviewer: str, accept: bool, reason: str = "") -> int | None:
    """Accept or send back; an accepted conversation's scoring job is started (the conversation that takes a
    sent-back one's place is returned)."""
    new, job = service.review(con, conversation_id, reviewer, accept=accept, reason=reason)
    _start(con, job)
    return new


def trust_state(con, task: ChatTask) -> dict:
    """Where Metric trust stands on the task's accepted conversations (services.chats.trust_state)."""
    state = service.trust_state(con, task)
    if state["job"] is not None:   # as the Upload page shows a job: a detail, never "None" or "nan"
        state["job"] = jobs_shown(pd.DataFrame([state["job"]])).iloc[0].to_dict()
    return state


def score_accepted(con, task: ChatTask) -> int:
    """"Score the accepted conversations": their job queued and started; its id."""
    job = service.score_accepted(con, task)
    _start(con, job)
    return job


def set_state(con, task_id: int, state: str) -> None:
    stored.set_state(con, task_id, state)


def export_zip(con, task_id: int) -> bytes:
    """The task's export (messages, ratings, flags, conversations) as CSV files in one zip."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, frame in service.export(con, task_id).items():
            z.writestr(f"{name}.csv", safe_csv(frame))
    return out.getvalue()


# ---------------------------------------------------------------- a crowd study's worker (evalcore.services.crowd)
# The names pages/kit/crowd.py calls on a study's view module (as evalcore.pagedata.annotation has them).
Refused = crowd.Refused
Study = crowd.Study


def study_of(con: duckdb.DuckDBPyConnection, task_id: int) -> crowd.Study | None:
    """The crowd study a chat task is opened as (None: the lab's own people hold its conversations)."""
    return crowd.study_of(con, task_id, "chat")


def crowd_params(study: crowd.Study) -> tuple[str, str, str]:
    params = crowd.PARAMS[study.platform]
    return params.worker, params.study, params.session


def crowd_ids(study: crowd.Study, query: dict[str, str]) -> crowd.Ids | None:
    return crowd.ids_from(study, query)







def crowd_next(con: duckdb.DuckDBPyConnection, study: crowd.Study, task: ChatTask, annotator: str) -> int | None:
    """The worker's conversation in progress, else their next one; None when their share is done."""
    return crowd.next_conversation(con, study, task, annotator)


def crowd_place(con: duckdb.DuckDBPyConnection, study: crowd.Study, task: ChatTask, annotator: str,
                conversation_id: int) -> tuple[int, int]:
    """(the conversation's place among the worker's, 1-based; conversations they hold in all)."""
    return crowd.conversation_place(con, study, task, annotator, conversation_id)


def crowd_instruction(con: duckdb.DuckDBPyConnection, study: crowd.Study, task: ChatTask, annotator: str,
                      conversation_id: int) -> str | None:
    """The instruction check shown inside this conversation's scenario (None: none here)."""
    return crowd.instruction(con, study, task, annotator, conversation_id)


def crowd_finish(con: duckdb.DuckDBPyConnection, study: crowd.Study, worker: str) -> crowd.Ending:
    return crowd.finish(con, study, worker)
