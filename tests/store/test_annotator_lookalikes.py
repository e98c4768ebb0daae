"""An annotator's name that looks like a registered one (issue 61, C15): with an invisible character it is the
same person (who needs their key), with a Cyrillic or Greek look-alike letter it is refused as taken; either way
no second person shown as 'alice' is stored, and a refusal leaves the store as it was."""
from __future__ import annotations

import pytest

from evalcore.store import annotators
from evalcore.store import endpoints as registry
from support import fingerprint

INVISIBLE = ["ali\u200bce", "al\u00adice", "\ufeffalice", "\u202ealice", "alice\u2060", "ali\u200dce", "\u2066alice\u2069"]
LOOKALIKE = ["\u0430lice", "\u0410lice", "al\u0456ce", "ali\u0441e", "\u03b1lice", "ALIC\u0395"]


def everything(con) -> tuple:
    return fingerprint(con), con.execute("SELECT * FROM annotators ORDER BY key").fetchall()


@pytest.fixture
def alice(con):
    name, key = annotators.enter(con, "alice")
    assert name == "alice" and key
    return key


@pytest.mark.parametrize("variant", INVISIBLE, ids=ascii)
def test_an_invisible_character_does_not_make_a_new_person(con, alice, variant):
    before = everything(con)
    with pytest.raises(annotators.NotThem, match="is taken"):
        annotators.enter(con, variant)
    assert everything(con) == before
    assert annotators.enter(con, variant, alice) == ("alice", None)   # with alice's key: alice herself
    assert annotators.listing(con)["name"].tolist() == ["alice"]


@pytest.mark.parametrize("variant", LOOKALIKE, ids=ascii)
def test_a_lookalike_name_is_taken(con, alice, variant):
    before = everything(con)
    for key in (None, alice):   # not a new person, and not alice either (her key does not make it her name)
        with pytest.raises(annotators.NotThem, match="looks the same as 'alice', which is taken") as refused:
            annotators.enter(con, variant, key)
        assert "CYRILLIC" in str(refused.value) or "GREEK" in str(refused.value)
        assert everything(con) == before


def test_the_first_of_two_lookalikes_holds_the_name(con):
    annotators.enter(con, "\u0430lice")   # Cyrillic first: the Latin one is the look-alike now
    with pytest.raises(annotators.NotThem, match="which is taken"):
        annotators.enter(con, "alice")
    assert annotators.listing(con)["name"].tolist() == ["\u0430lice"]


def test_a_new_name_that_only_shares_letters_is_welcome(con, alice):
    assert annotators.enter(con, "alicia")[1] and annotators.enter(con, "Алиса")[1]


@pytest.mark.parametrize("name", ["lo\u200bcal", "\u202elocal", "l\u043ecal"], ids=ascii)
def test_an_endpoint_named_like_another_is_refused(con, name):
    registry.add(con, registry.Registered("local", "http://127.0.0.1:8000/v1", "m"))
    before = con.execute("SELECT * FROM endpoints").fetchall()
    with pytest.raises(ValueError, match="invisible character|registered already"):
        registry.add(con, registry.Registered(name, "http://127.0.0.1:9000/v1", "m"))
    assert con.execute("SELECT * FROM endpoints").fetchall() == before
