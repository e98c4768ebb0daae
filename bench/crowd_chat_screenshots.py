"""The docs' screenshots of a chat task's crowd study on the Chat tasks page (docs/guide/crowd.md, "Chat studies"),
in Chromium.

    python bench/crowd_chat_screenshots.py [--out docs/img/screens]

A fresh store (`evalcore init`), two endpoints registered (never called: the replies are stored as theirs would
be), a chat task on demo-zh's kdconv/knowledge track made in English and opened to Prolific (2 conversations per
worker, 1 of them with an instruction check, 2.00 GBP), the instruction "mention the word giraffe"; four workers
with made-up Prolific identifiers hold their conversations through the services and a reviewer accepts each: the
fourth does not follow the instruction and is excluded by the pass rule when they finish, and the lab excludes the
second by hand. Then `python app.py` on that store, and the Chat tasks page of that task, scrolled to its crowd
study, at 1400 and 800 px (the server allows writing, as a lab's own does: the codes and the exclusion controls are
shown). Every file is a PNG under --out; the script prints what it wrote.
"""
from __future__ import annotations

import sys
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.crowd_screenshots import shoot  # noqa: E402

WORKERS, CARELESS, BY_HAND = 4, 3, 1


def study(db: Path) -> int:
    """The study and its workers, as the docstring says; the chat task's id."""
    from evalcore.services import chats as chat_service
    from evalcore.services import crowd
    from evalcore.store import chats as chat_store
    from evalcore.store import connect
    from evalcore.store import endpoints as registry

    con = connect(db)
    for name in ("model-a", "model-b"):
        registry.add(con, registry.Registered(name, "http://127.0.0.1:9/v1", "m", api_key_env=None), replace=True)
    task_id = chat_service.create_chat(con, dataset="demo-zh", track="kdconv/knowledge",
                                       endpoints=["model-a", "model-b"], n_scenarios=6, max_rounds=3, review=True,
                                       lang="en", name="Crowd chat pilot")
    opened = crowd.open_study(con, task_id, kind="chat", platform="prolific", completion_code="C1A2B3",
                              failed_code="F9E8D7", units=2, gold=1, pay=2.0, currency="GBP")
    crowd.add_instruction(con, task_id, "In your first message, mention the word giraffe.", "giraffe")
    task = chat_store.get(con, task_id)
    start = datetime.now().replace(microsecond=0) - timedelta(hours=1)
    names = {}
    for n in range(WORKERS):
        worker = crowd.enter(con, opened, crowd.Ids(f"6a{n:022x}", "65f0c0ffee", f"sess{n}"),
                             client=f"10.0.0.{n}|Firefox", now=start)
        names[n] = worker.annotator
        now = start
        while (cid := crowd.next_conversation(con, opened, task, worker.annotator, now=now)) is not None:
            told = crowd.instruction(con, opened, task, worker.annotator, cid)
            text = "你好，我们聊聊这个吧" + ("，giraffe" if told and n != CARELESS else "")
            idx = chat_store.say(con, cid, worker.annotator, text, now=now + timedelta(seconds=30))
            chat_store.reply(con, cid, idx, "好的。", now=now + timedelta(seconds=33))
            chat_store.end(con, cid, worker.annotator, goal=True, now=now + timedelta(seconds=240 + 30 * n))
            for d in task.dimensions:
                chat_store.rate(con, cid, worker.annotator, d.dimension, d.max,
                                now=now + timedelta(seconds=260 + 30 * n))
            chat_service.review(con, cid, "lab", accept=True)
            now += timedelta(minutes=6)
        crowd.finish(con, opened, worker.worker, now=now)
    crowd.exclude(con, task_id, names[BY_HAND], reason="replies pasted from elsewhere", by="lab", kind="chat")
    con.close()
    return task_id


def main() -> None:
    shoot(study, "chats", "crowd-chats")


if __name__ == "__main__":
    main()
