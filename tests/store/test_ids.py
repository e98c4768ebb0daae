"""Ids of new rows (store.next_id / last_id): max + 1 of the table, 1 in an empty one, taken inside the writing
transaction, so a refused write leaves no gap; names that are not the store's own are refused before any SQL."""
from __future__ import annotations

import pytest

from evalcore.store import last_id, next_id, transaction


def test_max_plus_one_and_no_gap_after_a_refused_write(con):
    con.execute("CREATE TABLE things (thing_id INTEGER, name VARCHAR)")
    assert (last_id(con, "things", "thing_id"), next_id(con, "things", "thing_id")) == (0, 1)
    con.execute("INSERT INTO things VALUES (1, 'a'), (5, 'b')")
    assert next_id(con, "things", "thing_id") == 6
    with pytest.raises(RuntimeError), transaction(con):
        con.execute("INSERT INTO things VALUES (?, 'c')", [next_id(con, "things", "thing_id")])
        raise RuntimeError("refused")
    assert next_id(con, "things", "thing_id") == 6


@pytest.mark.parametrize("table, column", [("things; DROP TABLE things", "thing_id"), ("things", "thing_id) FROM x --"),
                                           ("Things", "thing_id")])
def test_only_the_stores_own_names(con, table, column):
    with pytest.raises(ValueError, match="not a table and column name"):
        next_id(con, table, column)
