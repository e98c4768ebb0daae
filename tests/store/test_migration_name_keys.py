"""Migration 19: an annotator registered before invisible characters left names (a key holding a zero-width space)
gets the key of the new normal form, so their name reaches them again; where that key is someone else's, two people
stay two (nothing merged)."""
from __future__ import annotations

from datetime import datetime

from evalcore.store import annotators as people
from evalcore.store import connect


def _legacy(path, rows):
    """A store at version 18 holding annotators whose keys were made by the old normal form (invisibles kept)."""
    con = connect(path)
    con.execute("DELETE FROM schema_version WHERE version >= 19")
    for name, key in rows:
        con.execute("INSERT INTO annotators VALUES (?, ?, ?, false, ?, ?)",
                    [name.casefold(), name, people.digest(key), datetime(2026, 1, 1), datetime(2026, 1, 1)])
    con.close()


def test_a_legacy_name_with_an_invisible_character_is_reached_again(tmp_path):
    path = tmp_path / "s.duckdb"
    _legacy(path, [("do\u200bra", "dora-key")])
    con = connect(path)   # migrates to the latest version
    try:
        assert con.execute("SELECT key FROM annotators").fetchall() == [("dora",)]
        name, issued = people.enter(con, "dora", "dora-key")
        assert (name, issued) == ("do\u200bra", None)   # their answers keep the name they were given under
        assert people.reset(con, "dora")[0] == "do\u200bra"
    finally:
        con.close()


def test_a_legacy_look_alike_of_someone_else_is_not_merged_into_them(tmp_path):
    path = tmp_path / "s.duckdb"
    _legacy(path, [("alice", "alice-key"), ("ali\u200bce", "other-key")])
    con = connect(path)
    try:
        keys = sorted(k for (k,) in con.execute("SELECT key FROM annotators").fetchall())
        assert keys == ["alice", "ali\u200bce"]   # two people stay two
        assert people.enter(con, "alice", "alice-key") == ("alice", None)
        assert con.execute("SELECT count(*) FROM annotators").fetchall() == [(2,)]
    finally:
        con.close()
