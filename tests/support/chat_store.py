"""A store with an accepted chat task (support for the tests of where pages open): the default store plus chat task 1
on demo-zh/kdconv/knowledge with endpoints alpha and beta (registered, never asked: the replies are stored here), two
scenarios, two people, every conversation accepted with its dialogue-level ratings and nothing scored. Its dataset,
chat-1-demo-zh, sorts before every dataset of the default store."""
from __future__ import annotations

from pathlib import Path

from evalcore.store import chats as stored
from evalcore.store import connect
from evalcore.store import endpoints as registry

CHAT = "chat-1-demo-zh"


def add_chat_dataset(path: Path) -> Path:
    from evalcore.services import chats as service

    con = connect(path)
    try:
        for name in ("alpha", "beta"):
            registry.add(con, registry.Registered(name, "http://127.0.0.1:9/v1", "served", api_key_env=None))
        task = stored.get(con, service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge",
                                                   endpoints=["alpha", "beta"], n_scenarios=2))
        for person in ("ann", "bob"):
            for _ in range(2):
                cid = stored.assign(con, task, person)
                for r in range(2):
                    stored.reply(con, cid, stored.say(con, cid, person, f"问题{r}"), f"回答{r}")
                stored.end(con, cid, person, goal=True)
                for d in task.dimensions:
                    stored.rate(con, cid, person, d.dimension, 1)
                stored.review(con, cid, "reviewer", accept=True)
        assert task.target == CHAT
        assert con.execute("SELECT count(*) FROM responses WHERE dataset = ?", [CHAT]).fetchall()[0][0] == 8
    finally:
        con.close()
    return path
