"""Interactive evaluation, the way MSDE collected its dialogues (§3.1): chat tasks made from a track's grounded
dialogues, the model's side of each turn (what the endpoint is sent, and its streamed reply kept once), and a
task's results and export.

What the model sees is exactly what generation sends for the same track (the endpoint's template, or the skill's):
the scenario's grounding in the system message and the conversation so far. The person sees the whole scenario
(the information the conversation should bring up: MSDE ran each dialogue until all of it had come up, or the
round limit), and never which endpoint answers."""
from __future__ import annotations

import json
import random
import re
from dataclasses import asdict

import duckdb
import numpy as np
import pandas as pd

from evalcore import __version__
from evalcore.analysis.trust_levels import choices as trust_choices
from evalcore.core import names
from evalcore.core.chat import Reply, Stream
from evalcore.core.i18n import ZH
from evalcore.generation.templates import resolve
from evalcore.ingest.lookup import dataset_language
from evalcore.metrics.registry import METRICS
from evalcore.services import jobs
from evalcore.services.tasks import dimension_specs, language_of
from evalcore.store import chats as stored
from evalcore.store import crowd as crowd_store
from evalcore.simulation.templates import resolve as user_template
from evalcore.store.endpoints import get as get_endpoint
from evalcore.store.simulators import get as get_simulator
from evalcore.store.history import current_user
from evalcore.store.tasks import Dimension
from evalcore.store.transactions import transaction

DIMENSIONS_BY_SKILL = {   # MSDE §3.2 rates Know on knowledge dialogues and Rec on recommendation ones
    "knowledge": ["Info", "Coh", "Know"],
    "recommendation": ["Info", "Coh", "Rec"],
}
DEFAULT_DIMENSIONS = ["Info", "Coh"]
DEFAULT_FLAGS = ["contradiction", "wrong knowledge", "repetition", "off topic"]   # ParlAI model_chat's kind of checks
# The default flags as a person of a zh-CN task reads them (the stored flag stays its English id: exports, ratings
# and the results name it so). Translated by the project's developers with a language model and checked by a
# back-translation (docs/guide/languages.md); a lab's own flags are shown as the lab wrote them.
FLAG_LABELS = {ZH: {"contradiction": "前后矛盾", "wrong knowledge": "知识错误", "repetition": "重复",
                    "off topic": "偏离话题"}}
DEFAULT_SCENARIOS = 10


def track_skill(con: duckdb.DuckDBPyConnection, dataset: str, track: str) -> str | None:
    rows = con.execute("SELECT skill FROM tracks WHERE dataset = ? AND track = ?", [dataset, track]).fetchall()
    if not rows:
        names.require("track", track, [t for (t,) in con.execute(
            "SELECT track FROM tracks WHERE dataset = ? ORDER BY 1", [dataset]).fetchall()])
    return rows[0][0]


def scenarios(con: duckdb.DuckDBPyConnection, dataset: str, track: str, n: int | None, seed: int) -> pd.DataFrame:
    """n of the track's stored dialogues drawn with `seed` (all when n is None), as scenarios: (dialogue_id,
    grounding, opening). A dialogue without grounding (chit-chat) gives its first utterance as the opening."""
    frame = con.execute("""
        SELECT d.dialogue_id, d.grounding,
               (SELECT t.text FROM turns t WHERE t.dataset = d.dataset AND t.dialogue_id = d.dialogue_id
                ORDER BY t.turn_index LIMIT 1) AS first_turn
        FROM dialogues d WHERE d.dataset = ? AND d.track = ? ORDER BY d.dialogue_id""", [dataset, track]).df()
    if frame.empty:
        raise ValueError(f"track {track!r} of {dataset} has no stored dialogues to draw scenarios from "
                         "(import a dataset with dialogues and their grounding)")
    if n is not None:
        if n < 1:
            raise ValueError("--scenarios must be at least 1")
        pick = sorted(random.Random(seed).sample(range(len(frame)), min(n, len(frame))))
        frame = frame.iloc[pick]
    grounding = [json.loads(g) if isinstance(g, str) and g else {} for g in frame["grounding"]]
    return pd.DataFrame({"dialogue_id": frame["dialogue_id"].tolist(), "grounding": grounding,
                         "opening": [None if g else t for g, t in zip(grounding, frame["first_turn"])]})


def asked(entry, seed, items: str) -> list[str]:
    """A signature's tail: how an endpoint is asked (sampling, the seed sent), which items, which evalcore."""
    return [f"t:{entry.temperature}", f"p:{entry.top_p}", f"max:{entry.max_tokens}", f"seed:{seed}", f"items:{items}",
            f"evalcore:{__version__}"]


def settings_of(con: duckdb.DuckDBPyConnection, task_id: int | None, endpoint_names: list[str], skill: str | None,
                language: str | None) -> dict:
    """Per endpoint: what decides its replies (served model, host, template and its hash, sampling), and the
    signature its responses carry."""
    out = {}
    for name in endpoint_names:
        entry = get_endpoint(con, name)
        template = resolve(entry.template, skill, language)
        tag = "chat" if task_id is None else f"chat{task_id}"
        signature = "|".join([f"gen:{entry.model}@{entry.endpoint().host}", f"tpl:{template.name}#{template.short_hash}",
                              *asked(entry, entry.seed, tag)])
        out[name] = {"served_model": entry.model, "base_url": entry.base_url, "host": entry.endpoint().host,
                     "template": template.name, "template_sha256": template.sha256, "template_source": template.source,
                     "temperature": entry.temperature, "top_p": entry.top_p, "max_tokens": entry.max_tokens,
                     "seed": entry.seed, "signature": signature, "evalcore": __version__}
    return out


def simulator_settings(con: duckdb.DuckDBPyConnection, task_id: int, simulator_names: list[str], skill: str | None,
                       language: str | None) -> dict:
    """Per simulator, frozen into the task: what decides how it plays the user (served model, host, user template
    and its hash with the style's sentence, style, sampling, seed) and the signature its conversations carry."""
    out = {}
    for name in simulator_names:
        sim = get_simulator(con, name)
        entry = get_endpoint(con, sim.endpoint)
        user = user_template(sim.template, skill, language, sim.style)
        seed = entry.seed if entry.seed is not None else sim.seed   # what is sent (evalcore.simulation.run)
        signature = "|".join([f"sim:{entry.model}@{entry.endpoint().host}", f"tpl:{user.name}#{user.sha256[:12]}",
                              f"style:{sim.style}", *asked(entry, seed, f"chat{task_id}")])
        out[name] = {"endpoint": sim.endpoint, "served_model": entry.model, "host": entry.endpoint().host,
                     "template": user.name, "template_source": user.template.source, "template_sha256": user.sha256,
                     "style": sim.style, "temperature": entry.temperature, "top_p": entry.top_p,
                     "max_tokens": entry.max_tokens, "seed": seed, "signature": signature, "evalcore": __version__}
    return out


def create_chat(con: duckdb.DuckDBPyConnection, *, dataset: str, track: str, endpoints: list[str],
                per_scenario: int = 1, max_rounds: int = 10, n_scenarios: int | None = DEFAULT_SCENARIOS, seed: int = 0,
                dimensions: list[str] | None = None, flags: list[str] | None = None, guidelines: str = "",
                name: str | None = None, review: bool = True, target: str | None = None,
                created_by: str | None = None, simulators: list[str] | None = None, people: bool = True,
                lang: str | None = None) -> int:
    """Draw the scenarios and store the task; its id. Its sizes are checked first (stored.check_bounds, the bounds
    the page's controls stop at), before anything is drawn. `lang`: the task's language, zh-CN or en (default: its
    dataset's, services.tasks.task_language): its people see its pages, dimension definitions and flags in it."""
    stored.check_bounds(n_scenarios=n_scenarios, per_scenario=per_scenario, max_rounds=max_rounds)
    names.require("dataset", dataset, [d for (d,) in con.execute("SELECT dataset FROM datasets ORDER BY 1").fetchall()])
    skill = track_skill(con, dataset, track)
    language, _ = dataset_language(con, dataset)
    lang = language_of(con, dataset, lang)
    for e in endpoints:
        get_endpoint(con, e)
    for sim in simulators or []:
        get_simulator(con, sim)
    wanted = dimensions or DIMENSIONS_BY_SKILL.get(skill or "", DEFAULT_DIMENSIONS)
    specs = [Dimension(d.dimension, d.min, d.max, d.description, d.question)
             for d in dimension_specs(con, dataset, wanted, lang=lang)]
    chosen = scenarios(con, dataset, track, n_scenarios, seed)
    target = (target or "").strip() or None
    if target and con.execute("SELECT count(*) FROM datasets WHERE dataset = ?", [target]).fetchall()[0][0] and not \
            con.execute("SELECT count(*) FROM chat_tasks WHERE target = ?", [target]).fetchall()[0][0]:
        raise ValueError(f"dataset {target!r} exists and holds no chat task's dialogues: give another --target")
    # the default name never lists the endpoints: it is the lab's, but a name is easily shown where people chat
    name = (name or "").strip() or f"{dataset} {track}: {len(endpoints)} endpoint{'s' * (len(endpoints) != 1)}"
    return stored.create(con, name=name, dataset=dataset, track=track, target=target, endpoints=endpoints,
                         settings=lambda task_id: settings_of(con, task_id, endpoints, skill, language),
                         per_scenario=per_scenario,
                         max_rounds=max_rounds, dimensions=specs,
                         flags=DEFAULT_FLAGS if flags is None else flags, scenarios=chosen, guidelines=guidelines,
                         seed=seed, review=review, created_by=created_by or current_user(),
                         simulators=(lambda task_id: simulator_settings(con, task_id, simulators, skill, language))
                         if simulators else None, people=people, lang=lang)


def flag_label(task: stored.ChatTask, flag: str) -> str:
    """A flag as the task's people read it: a default flag in the task's language, a lab's own as it was written."""
    return FLAG_LABELS.get(task.lang, {}).get(flag, flag)


def blind_label(task: stored.ChatTask) -> str:
    """What a person chatting or rating is shown for a task: its number and where its scenarios come from, never its
    name (free text the lab wrote, which can name a model in ways no check would catch: an alias, a host, a family)
    and never an endpoint. The track is left out too should it hold an endpoint's or served model's name."""
    return f"Chat task {task.task_id}" if track_hidden(task) else f"Chat task {task.task_id}: scenarios of {task.track}"


def track_hidden(task: stored.ChatTask) -> bool:
    """Whether a blind label leaves the track out: the label with it would name one of the task's endpoints or served
    models (a page words the same two labels in its reader's language: pagedata.chats.blind_label)."""
    label = f"Chat task {task.task_id}: scenarios of {task.track}"
    secret = set(task.endpoints) | {str(s.get("served_model") or "") for s in task.settings.values()} - {""}
    return any(re.search(rf"(?<!\w){re.escape(x)}(?!\w)", label, re.IGNORECASE) for x in secret)


def system_template(con: duckdb.DuckDBPyConnection, task: stored.ChatTask, endpoint: str):
    """The generation template an endpoint of the task answers with, as the task froze it (refused if its file has
    changed since: the replies would not match the task's signature)."""
    setting = task.settings[endpoint]
    language, _ = dataset_language(con, task.dataset)
    source = setting["template_source"]
    template = resolve(setting["template"] if source == "shipped" else source, None, language)
    if template.sha256 != setting["template_sha256"]:
        raise ValueError(f"the template {setting['template']} changed since the task was made (its sha256 was "
                         f"{setting['template_sha256'][:12]}, now {template.sha256[:12]}): its replies would not "
                         "match the task's signature")
    return template


def model_messages(con: duckdb.DuckDBPyConnection, task: stored.ChatTask, conversation_id: int) -> list[dict]:
    """What the endpoint is sent for its next turn: its template over the scenario's grounding and the
    conversation so far (the same rendering generation uses)."""
    conv = stored.conversation(con, conversation_id)
    scene = stored.scenario(con, task.task_id, conv.scenario)
    template = system_template(con, task, conv.endpoint)
    frame = stored.messages(con, conversation_id)
    return template.render(frame["text"].tolist(), scene["grounding"], frame["role"].tolist())


def ask(con: duckdb.DuckDBPyConnection, conversation_id: int) -> tuple[int, Stream] | None:
    """(the message the reply answers, its stream) when the person's last message awaits a reply, else None.
    Iterate the stream for the reply's pieces, then keep() it."""
    after = stored.pending(con, conversation_id)
    if after is None:
        return None
    conv = stored.conversation(con, conversation_id)
    task = stored.get(con, conv.task_id)
    entry = get_endpoint(con, conv.endpoint)
    return after, Stream(entry.endpoint(stream=True), model_messages(con, task, conversation_id))


def keep(con: duckdb.DuckDBPyConnection, conversation_id: int, after: int, reply: Reply | None) -> str | None:
    """Store a finished reply; None once it is stored (or a reply to the same message is already), else the
    sentence to show beside a retry (nothing of the failed reply is stored; the person's message stays)."""
    if reply is None:
        return "The reply was interrupted before it finished; nothing of it was stored"
    if reply.error is not None:
        return f"The model did not answer: {reply.error}"
    if reply.flag == "empty":
        return "The model answered with nothing; nothing was stored"
    stored.reply(con, conversation_id, after, reply.text, attempts=reply.attempts, finish=reply.finish,
                 seconds=round(reply.seconds, 3))
    return None


def results(con: duckdb.DuckDBPyConnection, task_id: int, *, counted: tuple[str, ...] = stored.COUNTED,
            bootstrap: int = 1000, seed: int = 0) -> dict:
    """Per endpoint: conversations, rounds, how often the goal was reached, and per dimension the mean rating with
    a 95% bootstrap interval over conversations; and how many were sent back. Only `counted` states count, and no
    conversation of a crowd worker excluded now."""
    task = stored.get(con, task_id)
    convs = stored.conversations(con, task_id)
    convs = convs[convs["simulator"].isna()]   # people's: simulated users are the simulator audit's (evalcore.simulation)
    # a crowd study's excluded workers count nowhere (their ratings left human_ratings too: evalcore.store.crowd)
    use = convs[convs["state"].isin(counted) & ~convs["annotator"].isin(crowd_store.excluded(con, task_id, "chat"))]
    rows = []
    latest = con.execute("""
        SELECT conversation_id, dimension, arg_max(value, rating_id) AS value FROM chat_ratings
        WHERE conversation_id IN (SELECT conversation_id FROM chat_conversations WHERE task_id = ?)
        GROUP BY ALL""", [task_id]).df()
    rng = np.random.default_rng(seed)
    for endpoint in task.endpoints:
        mine = use[use["endpoint"] == endpoint]
        row = {"endpoint": endpoint, "conversations": len(mine), "scenarios": mine["scenario"].nunique(),
               "rounds": float(mine["rounds"].mean()) if len(mine) else None,
               "goal_reached": float(mine["goal"].dropna().astype(float).mean()) if mine["goal"].notna().any() else None}
        for d in task.dimensions:
            values = latest[(latest["dimension"] == d.dimension)
                            & latest["conversation_id"].isin(mine["conversation_id"])]["value"].to_numpy(float)
            mean, lo, hi = mean_ci(values, bootstrap, rng) if len(values) else (None, None, None)
            row[d.dimension] = mean
            row[f"{d.dimension} 95% CI"] = None if lo is None else f"[{lo:.2f}, {hi:.2f}]"
        rows.append(row)
    return {"task": task, "table": pd.DataFrame(rows), "states": convs["state"].value_counts().to_dict(),
            "sent_back": convs.loc[convs["state"] == "sent_back", ["conversation_id", "scenario", "endpoint",
                                                                      "annotator", "reason"]],
            "counted": list(counted)}


def export(con: duckdb.DuckDBPyConnection, task_id: int) -> dict[str, pd.DataFrame]:
    """Every message with its time, person and endpoint; every rating and flag as given; every conversation."""
    stored.get(con, task_id)
    messages = con.execute("""
        SELECT c.conversation_id, c.scenario, s.dialogue_id AS scenario_dialogue, c.endpoint, c.annotator, c.state,
               m.idx, m.role, m.text, m.created_at, m.attempts, m.finish, m.seconds
        FROM chat_messages m JOIN chat_conversations c USING (conversation_id)
        JOIN chat_scenarios s ON s.task_id = c.task_id AND s.scenario = c.scenario
        WHERE c.task_id = ? ORDER BY c.conversation_id, m.idx""", [task_id]).df()
    ratings = con.execute("""
        SELECT r.conversation_id, c.endpoint, r.annotator, r.dimension, r.value, r.given_at
        FROM chat_ratings r JOIN chat_conversations c USING (conversation_id) WHERE c.task_id = ?
        ORDER BY r.rating_id""", [task_id]).df()
    flags = con.execute("""
        SELECT f.conversation_id, c.endpoint, f.idx, f.annotator, f.flag, f.value, f.given_at
        FROM chat_flags f JOIN chat_conversations c USING (conversation_id) WHERE c.task_id = ?
        ORDER BY f.flag_id""", [task_id]).df()
    return {"messages": messages, "ratings": ratings, "flags": flags,
            "conversations": stored.conversations(con, task_id)}


def mean_ci(values: np.ndarray, resamples: int, rng: np.random.Generator) -> tuple[float, float | None, float | None]:
    """The mean and its 95% percentile bootstrap interval over the values (conversations); no interval for one."""
    mean = float(values.mean())
    if len(values) < 2:
        return mean, None, None
    means = values[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1)
    return mean, float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def describe(task: stored.ChatTask) -> dict:
    """A task as plain fields (CLI --json, the page's settings table)."""
    out = asdict(task)
    out["dimensions"] = [d.dimension for d in task.dimensions]
    out["created_at"] = str(task.created_at)
    return out


# ------------------------------------------------------------------ accepted conversations scored, as an upload is

def reference_free() -> list[str]:
    """What a conversation is scored on by its task's job: the metrics that need no reference (a conversation has
    none: nobody wrote the reply it should have given), no model and no server (DIST1, DIST2)."""
    return [n for n, m in METRICS.items() if not m.needs_references and not m.needs_model]


def queue_scoring(con: duckdb.DuckDBPyConnection, task: stored.ChatTask, dataset: str | None = None) -> int:
    """Inside an acceptance's transaction: the scoring job of the task's dataset, recorded as queued (the server
    runs a queued job nobody ran, as it does an upload's); its id. A job of the same steps still queued is the one:
    it reads the dialogues when it starts, so it scores this one too (a started one may have read them already).
    `dataset`: where the accepted dialogue went (a simulator's own dataset, ChatTask.target_of); the task's target
    when None."""
    dataset = dataset or task.target
    steps = [{"track": task.track, "flavor": "default", "tokenizer": None, "metrics": reference_free()}]
    for job_id, raw in con.execute("SELECT job_id, steps FROM jobs WHERE dataset = ? AND state = 'queued' "
                                   "ORDER BY job_id DESC", [dataset]).fetchall():
        if json.loads(raw) == steps:
            return int(job_id)
    return jobs.create(con, dataset, steps)


def review(con: duckdb.DuckDBPyConnection, conversation_id: int, reviewer: str, *, accept: bool,
           reason: str = "") -> tuple[int | None, int | None]:
    """Accept a conversation or send it back (stored.review); (the conversation that takes a sent-back one's place,
    the scoring job an accepted one was queued with: start it, or the server runs it at its next check)."""
    queued: dict = {}
    new = stored.review(con, conversation_id, reviewer, accept=accept, reason=reason,
                        then=lambda c, task, where: queued.setdefault("job", queue_scoring(c, task, where)))
    return new, queued.get("job")


def rate(con: duckdb.DuckDBPyConnection, conversation_id: int, annotator: str, dimension: str,
         value: float) -> int | None:
    """One rating (stored.rate); the scoring job queued when it accepted the conversation (a task without review)."""
    queued: dict = {}
    stored.rate(con, conversation_id, annotator, dimension, value,
                then=lambda c, task, where: queued.setdefault("job", queue_scoring(c, task, where)))
    return queued.get("job")


def trust_state(con: duckdb.DuckDBPyConnection, task: stored.ChatTask) -> dict:
    """Where Metric trust stands on the task's accepted conversations: {"ready": a dialogue-level view has something
    to correlate, "missing": what is still missing in a few words (None when ready and nothing runs), "job": the
    newest scoring job of the dataset as jobs.listing has it (None: none yet), "score": whether scoring them now
    would help (nothing queued or running, and something to score)}."""
    accepted = int(con.execute("SELECT count(*) FROM chat_conversations WHERE task_id = ? AND state = 'accepted'",
                               [task.task_id]).fetchall()[0][0])
    rated = int(con.execute("SELECT count(*) FROM human_ratings WHERE dataset = ? AND target = 'dialogue'",
                            [task.target]).fetchall()[0][0])
    recent = jobs.listing(con, task.target, limit=1)
    job = recent.iloc[0].to_dict() if len(recent) else None
    busy = job is not None and job["state"] in ("queued", "running")
    failed = job is not None and job["state"] in ("failed", "interrupted")
    ready = bool(accepted) and ("dialogue", "computed") in trust_choices(con, task.target)
    if not accepted:
        missing = "no accepted conversations yet: accept rated ones under Review"
    elif not rated:
        missing = "no dialogue-level ratings yet"
    elif busy:
        missing = (f"scoring job {job['job_id']} is {job['state']}" + (f" ({job['detail']})" if job["detail"] else "")
                   + (": the conversations accepted since are scored when it ends" if ready else ""))
    elif failed:
        missing = f"scoring job {job['job_id']} {job['state']}: {job['detail'] or 'no reason recorded'}"
    elif not ready:
        missing = "the accepted conversations are not scored yet"
    else:
        missing = None
    return {"ready": ready, "missing": missing, "job": job,
            "score": bool(accepted) and not busy and (failed or not ready)}


def score_accepted(con: duckdb.DuckDBPyConnection, task: stored.ChatTask) -> int:
    """"Score the accepted conversations": their job recorded as queued in one short write; its id."""
    with transaction(con):
        return queue_scoring(con, task)
