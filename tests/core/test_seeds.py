"""The one seed rule (evalcore/core/seeds.py): the arithmetic written out, and the orders of existing rating and
chat tasks unchanged by bringing the two copies together (the constants are what each copy gave before)."""
from __future__ import annotations

import hashlib

from evalcore.core.seeds import BIG, seed


def test_the_rule_written_out():
    digest = hashlib.sha256("7\x1forder\x1falice".encode("utf-8")).digest()
    assert seed(7, "order", "alice") == int.from_bytes(digest[:8], "little")
    assert seed(7, "order", "alice", byteorder=BIG) == int.from_bytes(digest[:8], "big")
    assert seed("ab", "c") != seed("a", "bc")    # the separator keeps the parts apart


def test_existing_task_orders_are_kept():
    # store/tasks.py's _seed('a', 1, 'order') (little-endian) and store/chats.py's _seed(3, 'x', 'k') (big-endian),
    # as each module computed them before the rule was one function
    assert seed("a", 1, "order") == 12860920497084250531
    assert seed(3, "x", "k", byteorder=BIG) == 1913224576000368828
