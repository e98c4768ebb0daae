"""A chat task held by people and by simulators (support for the simulation tests): on a copy of the default store,
the local SimServer's three systems (sys-good, sys-mid, sys-bad) and two simulators (grounded: uses the scenario;
ignorer: ignores it), registered; 3 scenarios of a demo-zh track, one conversation per (scenario, system, holder),
no review. people_talk holds the people's side through the store as the Chat page does: each person rates a system
by its quality (good 2, mid 1, bad 0 on every dimension; the goal reached for good and mid), the scenario's first
knowledge value or opening line in their first message."""
from __future__ import annotations

from evalcore.services import chats as service
from evalcore.store import chats as stored
from evalcore.store import endpoints as registry
from evalcore.store import simulators as sims

SYSTEMS = ("sys-good", "sys-mid", "sys-bad")
SIMULATORS = {"grounded": "sim-grounded", "ignorer": "sim-ignore"}
QUALITY = {"sys-good": 2, "sys-mid": 1, "sys-bad": 0}
PEOPLE = ("ann", "bob", "cai", "dan")


def setup(con, url: str, *, track: str = "kdconv/knowledge", simulators: dict | None = None,
          systems: tuple = SYSTEMS, people: bool = True, scenarios: int = 3, lang: str | None = None) -> stored.ChatTask:
    simulators = SIMULATORS if simulators is None else simulators
    for model in (*systems, *simulators.values()):
        registry.add(con, registry.Registered(model, url, model, api_key_env=None), replace=True)
    for name, endpoint in simulators.items():
        sims.add(con, sims.Simulator(name, endpoint, "cooperative", None, 0), replace=True)
    task_id = service.create_chat(con, dataset="demo-zh", track=track, endpoints=list(systems), n_scenarios=scenarios,
                                  max_rounds=5, review=False, simulators=list(simulators), people=people, lang=lang)
    return stored.get(con, task_id)


def people_talk(con, task: stored.ChatTask, rounds: int = 2) -> None:
    for person in PEOPLE:
        while (cid := stored.assign(con, task, person)) is not None:
            conv = stored.conversation(con, cid)
            scene = stored.scenario(con, task.task_id, conv.scenario)
            knowledge = (scene["grounding"] or {}).get("knowledge") or []
            first = scene["opening"] or (f"我想知道{knowledge[0][-1]}" if knowledge else "你好")
            for r in range(rounds):
                said = first if r == 0 else f"还有呢？{r}"
                stored.reply(con, cid, stored.say(con, cid, person, said), "好的" if QUALITY[conv.endpoint] else "嗯")
            stored.end(con, cid, person, goal=QUALITY[conv.endpoint] >= 1)
            for d in task.dimensions:
                stored.rate(con, cid, person, d.dimension, min(d.max, max(d.min, QUALITY[conv.endpoint])))
