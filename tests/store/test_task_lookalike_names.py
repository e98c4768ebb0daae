"""Look-alike task names (issue 61, C15): a rating task's or chat task's name that looks the same as a stored task's
(equal skeletons: a Cyrillic or Greek letter drawn like a Latin one) without being the same name is refused as taken,
and an invisible character in a name is refused; the store is left byte-identical. The same name again (in another
case or width) stays allowed: tasks are told apart by their ids."""
from __future__ import annotations

import pandas as pd
import pytest

from evalcore.store import chats, tasks
from evalcore.store.tasks import Dimension
from support import fingerprint

DIMS = [Dimension("Info", 0, 2)]
LOOKALIKES = ["Pil\u043et", "\u0420ilot", "P\u0456lot", "Pil\u03bft", "\u0420\u0456l\u043et"]   # Cyrillic о, Р, і; Greek ο
INVISIBLE = ["Pil\u200bot", "Pilot\u00ad", "\ufeffPilot", "Pi\u202elot", "Pilot\u2060"]


def rating_task(con, name: str) -> int:
    units = pd.DataFrame({"item_id": ["t1"], "track": ["toy/chitchat"], "model_a": ["m1"], "model_b": [None]})
    return tasks.create(con, name=name, dataset="toy", mode="absolute", dimensions=DIMS, per_item=1, units=units)


def chat_task(con, name: str) -> int:
    frame = pd.DataFrame({"dialogue_id": ["d0"], "grounding": [{"knowledge": [["山姆", "导演", "人"]]}], "opening": [None]})
    return chats.create(con, name=name, dataset="toy", track="toy/knowledge", target="chat-toy", endpoints=["e1"],
                        settings={"e1": {"signature": "gen:e1"}}, per_scenario=1, max_rounds=2, dimensions=DIMS,
                        flags=[], scenarios=frame)


@pytest.mark.parametrize("make", [rating_task, chat_task], ids=["rating", "chat"])
def test_a_lookalike_task_name_is_refused_as_taken(toy, make):
    first = make(toy, "Pilot")
    before = fingerprint(toy)
    for name in LOOKALIKES:
        with pytest.raises(ValueError, match=rf"looks the same as task {first}'s 'Pilot', which is taken \(it is written "
                                             r"with other letters: U\+0[34].* LETTER "):
            make(toy, name)
        assert fingerprint(toy) == before, name
    for name in INVISIBLE:
        with pytest.raises(ValueError, match=r"a task's name may not hold an invisible character \(U\+"):
            make(toy, name)
        assert fingerprint(toy) == before, name
    # the same name again, or in another case or width, is the same name: allowed as before; another name too
    assert len({make(toy, name) for name in ("Pilot", "pilot", "\uff30ilot", "Pilot 2")}) == 4


def test_rating_and_chat_task_names_are_checked_apart(toy):
    """A chat task may be called like a rating task (they are listed apart), look-alike or not."""
    rating_task(toy, "Pilot")
    assert chat_task(toy, "Pil\u043et")
