"""Can people tell? A dialogue-level rating task over a chat task's accepted conversations, people's and simulated
mixed, asking one question, "Was the user a person?" (Person: 1 a person, 0 a simulated user), and the detection
accuracy it gives against 50%.

The conversations are copied, as dialogues, into a dataset of their own (<target>-detect: turns, one item per model
turn, the endpoint's replies; no ratings), so that one rating task can draw them all: people's and each simulator's
dialogues otherwise live in separate datasets on purpose. Nothing in that dataset says who held a conversation (its
dialogues' split is 'detect', its description neutral, its dialogue ids those of the chat task); the truth is the
chat task's own record of each conversation, read only when the answers are scored.

Accuracy: the share of answers that call a person's conversation a person's (a value of 1) or a simulated one
simulated (0), every annotator's latest live answer to a unit counted once; its 95% interval a percentile bootstrap
over the dialogues (1,000 resamples, seed 0), and the two-sided binomial test against 0.5 (scipy.stats.binomtest).
At 50% people cannot tell; well above it, the simulated users are found out."""
from __future__ import annotations

import math
from datetime import datetime

import duckdb
import numpy as np
import pandas as pd

from evalcore.core import lazy
from evalcore.services import tasks as rating_tasks
from evalcore.store import chats as stored
from evalcore.store import tasks as task_store
from evalcore.store.history import current_user
from evalcore.store.transactions import transaction

stats = lazy.module("scipy.stats")
DIMENSION = "Person"
QUESTION = "Was the user a person? 1: a person; 0: a language model playing the user"
RESAMPLES = 1000


def dataset_of(task: stored.ChatTask) -> str:
    return f"{task.target}-detect"


def create(con: duckdb.DuckDBPyConnection, task_id: int, *, per_dialogue: int = 3, seed: int = 0,
           created_by: str | None = None) -> int:
    """Copy the task's accepted conversations (people's and simulated) into <target>-detect and make the rating
    task that asks who held each; its id. Refused when the task has no accepted conversation of people and of a
    simulator both, or when the detection dataset exists already (one per chat task: its rating task is there)."""
    task = stored.get(con, task_id)
    convs = stored.conversations(con, task_id)
    convs = convs[convs["state"] == "accepted"]
    if convs["simulator"].isna().all() or convs["simulator"].notna().sum() == 0:
        raise ValueError(f"chat task {task_id} needs accepted conversations held by people and by a simulator both")
    target = dataset_of(task)
    if con.execute("SELECT count(*) FROM datasets WHERE dataset = ?", [target]).fetchall()[0][0]:
        raise ValueError(f"dataset {target} exists already: its rating task asks who held each conversation")
    now = datetime.now().replace(microsecond=0)
    with transaction(con):
        con.execute("INSERT INTO datasets (dataset, language, licence, source, description) SELECT ?, language, licence, "
                    "?, ? FROM datasets WHERE dataset = ?",
                    [target, f"chat task {task_id}", f"Conversations of chat task {task_id}, to tell who held them",
                     task.dataset])
        for cid in convs["conversation_id"].astype(int):
            stored.write_dialogue(con, task, stored.conversation(con, cid), target, created_by or current_user(), now)
        con.execute("UPDATE dialogues SET split = 'detect' WHERE dataset = ?", [target])
        con.execute("INSERT OR REPLACE INTO dimensions VALUES (?, ?, 0, 1, ?)", [target, DIMENSION, QUESTION])
    return rating_tasks.create_task(con, dataset=target, mode="absolute", dimensions=[DIMENSION], items=len(convs),
                                    per_item=per_dialogue, seed=seed, level="dialogue", created_by=created_by,
                                    name=f"Chat task {task_id}: who held each conversation?")


def rating_task(con: duckdb.DuckDBPyConnection, task: stored.ChatTask) -> int | None:
    rows = con.execute("SELECT task_id FROM tasks WHERE dataset = ? AND state <> 'deleted' ORDER BY task_id DESC "
                       "LIMIT 1", [dataset_of(task)]).fetchall()
    return int(rows[0][0]) if rows else None


def answers(con: duckdb.DuckDBPyConnection, task: stored.ChatTask) -> pd.DataFrame:
    """Every annotator's latest live answer per unit: (dialogue_id, annotator, value, holder, correct)."""
    rid = rating_task(con, task)
    if rid is None:
        return pd.DataFrame(columns=["dialogue_id", "annotator", "value", "holder", "correct"])
    frame = con.execute(f"""
        SELECT u.item_id AS dialogue_id, a.annotator, arg_max(a.value, a.answer_id) AS value
        FROM ({task_store.LIVE}) a JOIN task_units u ON u.task_id = a.task_id AND u.unit = a.unit
        WHERE a.live AND a.kind = 'rating' AND a.dimension = ? GROUP BY ALL""", [rid, DIMENSION]).df()
    held = {stored.dialogue_id_of(task, int(c)): (s if isinstance(s, str) else "people")
            for c, s in con.execute("SELECT conversation_id, simulator FROM chat_conversations WHERE task_id = ?",
                                    [task.task_id]).fetchall()}
    frame["holder"] = frame["dialogue_id"].map(held)
    frame["correct"] = (frame["value"] >= 0.5) == (frame["holder"] == "people")
    return frame


def accuracy(frame: pd.DataFrame, *, resamples: int = RESAMPLES, seed: int = 0) -> dict:
    """Detection accuracy of the answers, its bootstrap interval over dialogues, the binomial test against 0.5."""
    n = len(frame)
    if not n:
        return {"answers": 0, "dialogues": 0, "accuracy": math.nan, "ci": (math.nan, math.nan), "p": math.nan}
    correct = int(frame["correct"].sum())
    per = frame.groupby("dialogue_id")["correct"].agg(["sum", "count"])
    s, c = per["sum"].to_numpy(float), per["count"].to_numpy(float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(per), size=(resamples, len(per)))
    boot = s[draws].sum(axis=1) / c[draws].sum(axis=1)
    return {"answers": n, "dialogues": len(per), "accuracy": correct / n,
            "ci": (float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))),
            "p": float(stats.binomtest(correct, n, 0.5).pvalue)}


def report(con: duckdb.DuckDBPyConnection, task_id: int) -> dict:
    """{"task": the rating task's id or None, "overall": accuracy over every answer, "per simulator": {name: accuracy
    over the answers on people's and that simulator's conversations}, "verdict": one sentence}."""
    task = stored.get(con, task_id)
    frame = answers(con, task)
    out = {"task": rating_task(con, task), "overall": accuracy(frame), "per simulator": {}}
    for sim in task.simulators:
        out["per simulator"][sim] = accuracy(frame[frame["holder"].isin(["people", sim])])
    out["verdict"] = verdict(out["overall"])
    return out


def verdict(a: dict) -> str:
    if not a["answers"]:
        return "no answers yet to the question \"Was the user a person?\""
    lo, hi = a["ci"]
    shown = f"{a['accuracy']:.2f} [{lo:.2f}, {hi:.2f}] over {a['answers']} answers on {a['dialogues']} dialogues, p {a['p']:.3g}"
    if lo > 0.5:
        return f"people tell simulated users from people: accuracy {shown}"
    if hi < 0.5:
        return f"people take simulated users for people and people for simulated ones: accuracy {shown}"
    return f"cannot say that people tell them apart: accuracy {shown} (the interval holds 0.5)"
