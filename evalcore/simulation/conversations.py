"""Conversations of a chat task as the simulation reads them: each one's turns and its scenario's grounding, for
many conversations in one query (a run takes up a thousand at once; the judge reads every counted one)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import duckdb

from evalcore.store import chats as stored


def user_grounding(scene: dict) -> dict:
    """What the simulated user knows of a scenario: its grounding, and a chit-chat scenario's opening line as its
    topic (what a person is offered to start with)."""
    grounding = dict(scene["grounding"] or {})
    if scene.get("opening"):
        grounding.setdefault("topic", [scene["opening"]])
    return grounding


@dataclass
class State:
    """One conversation as the store had it when the run began, then as this run advanced it."""
    conversation_id: int
    simulator: str
    endpoint: str
    state: str
    grounding: dict          # the system's (the scenario's grounding)
    user_grounding: dict     # the simulated user's (with a chit-chat scenario's opening as its topic)
    turns: list = field(default_factory=list)   # (role, text)

    def rounds(self) -> int:
        return sum(role == "assistant" for role, _ in self.turns)


def load(con: duckdb.DuckDBPyConnection, task: stored.ChatTask, ids: list[int]) -> dict[int, State]:
    """The given conversations of the task, read at once (a run lets the store go afterwards)."""
    rows = con.execute("""
        SELECT c.conversation_id, c.simulator, c.endpoint, c.state, s.grounding, s.opening,
               (SELECT list({'role': m.role, 'text': m.text} ORDER BY m.idx) FROM chat_messages m
                WHERE m.conversation_id = c.conversation_id) AS turns
        FROM chat_conversations c JOIN chat_scenarios s ON s.task_id = c.task_id AND s.scenario = c.scenario
        WHERE c.task_id = ? AND list_contains(?, c.conversation_id)""", [task.task_id, ids]).fetchall()
    out = {}
    for cid, sim, endpoint, state, grounding, opening, turns in rows:
        scene = {"grounding": json.loads(grounding), "opening": opening}
        out[int(cid)] = State(int(cid), sim, endpoint, state, scene["grounding"], user_grounding(scene),
                              [(t["role"], t["text"]) for t in turns or []])
    return out
