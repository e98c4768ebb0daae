"""Who an annotator is, across every rating task of the store.

A person is a name compared by its key (evalcore.core.text.identity_key: 'Carol', ' carol ' and 'ＣＡＲＯＬ'
are one person; invisible characters are no part of a name, so 'Car\u200bol' is Carol too). A new name that
looks like a registered one (text.skeleton: 'Cаrol' with a Cyrillic 'а') is refused as taken. Where the deployment has a sign-in, the signed-in address is the person. Without one, the
first entry with a new name issues a personal key (128 random bits, shown once); later entries with that
name need it, so typing someone's name with the task's access code is no longer being them. Only the key's
sha256 is stored (a random key of that length needs no slow hash: there is nothing to guess it from).

Someone who lost their key asks whoever runs the tasks: `evalcore task reset-key NAME` (or the Rating tasks
page) issues a new one, shown once to them, and the old one stops working. Their answers stay theirs."""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import datetime

import duckdb
import pandas as pd

from evalcore.core import names
from evalcore.core.i18n import _
from evalcore.core.text import bad_character, identity_key, lookalike_letters, normalise_id, skeleton
from evalcore.store.transactions import transaction

MAX_NAME = 80        # characters of an annotator's name
KEY_BYTES = 16       # a personal key's random bytes (22 characters of URL-safe base64)


# A crowd worker's pseudonym (evalcore.store.crowd.pseudonym): given by their platform's link, never typed, and no
# personal key is ever issued for it.
CROWD_NAME = re.compile(r"^(prolific|mturk|generic)-[0-9a-f]{12}$")


class NotThem(ValueError):
    """An entry refused: the name is someone else's (no key, a wrong key, or a signed-in person's)."""


def check_name(name: str) -> str:
    """An annotator's name in its normal form (NFKC, inner whitespace one space); refused with a sentence when
    empty, too long or holding a control character."""
    name = " ".join(normalise_id(name or "").split())
    if not name:
        raise ValueError(_("An annotator needs a name."))
    if len(name) > MAX_NAME:
        raise ValueError(_("An annotator's name has at most {most} characters.").format(most=MAX_NAME))
    bad = bad_character(name)
    if bad:
        raise ValueError(_("An annotator's name may not hold a {bad}.").format(bad=bad))
    return name


def digest(key: str) -> str:
    return hashlib.sha256(key.strip().encode("utf-8")).hexdigest()


def enter(con: duckdb.DuckDBPyConnection, name: str, key: str | None = None, *,
          now: datetime | None = None) -> tuple[str, str | None]:
    """(the person's name as stored, their new personal key or None): a new name is registered and its key
    issued (the caller shows it once); a known name needs its key. NotThem otherwise, saying why."""
    name = check_name(name)
    if CROWD_NAME.match(identity_key(name)):
        raise NotThem(_("Names like {name} are given to crowd workers by their platform's link: choose another "
                        "name.").format(name=repr(name)))
    now = (now or datetime.now()).replace(microsecond=0)
    with transaction(con):
        row = con.execute("SELECT name, secret, signed_in FROM annotators WHERE key = ?",
                          [identity_key(name)]).fetchall()
        if not row:
            alike = [n for (n,) in con.execute("SELECT name FROM annotators ORDER BY created_at, name").fetchall()
                     if skeleton(n) == skeleton(name)]
            if alike:   # a second person shown exactly like the first: the name is taken
                letters = ", ".join(lookalike_letters(name) or lookalike_letters(alike[0]))
                raise NotThem(_("The name {name} looks the same as {taken}, which is taken (it is written with other "
                                "letters: {letters}). If you are {person}, enter that name with your personal key; "
                                "if not, choose another name.").format(name=repr(name), taken=repr(alike[0]),
                                                                        letters=letters, person=alike[0]))
            new = secrets.token_urlsafe(KEY_BYTES)
            con.execute("INSERT INTO annotators VALUES (?, ?, ?, false, ?, ?)",
                        [identity_key(name), name, digest(new), now, now])
            return name, new
    stored, secret, signed_in = row[0]
    if signed_in:
        raise NotThem(_("The name {name} belongs to someone who signs in: sign in to rate as them, or choose "
                        "another name.").format(name=repr(stored)))
    if not (key or "").strip():
        raise NotThem(_("The name {name} is taken (names are compared ignoring case and width). If you are "
                        "{person}, give your personal key; if not, choose another name. Lost your key? Whoever runs "
                        "the task can issue a new one.").format(name=repr(stored), person=stored))
    if secret is None or not hmac.compare_digest(digest(key), secret):
        raise NotThem(_("That is not {person}'s personal key. Whoever runs the task can issue a new one.").format(
            person=stored))
    return stored, None


def signed_in(con: duckdb.DuckDBPyConnection, address: str, *, now: datetime | None = None) -> str:
    """The person a signed-in address is (registered at their first entry; the sign-in vouches for them, so
    a name someone typed before is theirs from now on and its key stops working)."""
    name = check_name(address)
    now = (now or datetime.now()).replace(microsecond=0)
    row = con.execute("SELECT name, signed_in FROM annotators WHERE key = ?", [identity_key(name)]).fetchall()
    if row and row[0][1]:
        return row[0][0]
    with transaction(con):
        if row:
            con.execute("UPDATE annotators SET signed_in = true, secret = NULL, secret_at = NULL WHERE key = ?",
                        [identity_key(name)])
            return row[0][0]
        con.execute("INSERT INTO annotators VALUES (?, ?, NULL, true, ?, NULL)", [identity_key(name), name, now])
    return name


def reset(con: duckdb.DuckDBPyConnection, name: str, *, now: datetime | None = None) -> tuple[str, str]:
    """(the person's name, their new personal key): for someone who lost theirs; the old one stops working.
    A name nobody entered yet is refused (their first entry issues their key)."""
    name = check_name(name)
    with transaction(con):
        row = con.execute("SELECT name, signed_in FROM annotators WHERE key = ?", [identity_key(name)]).fetchall()
        if not row:
            known = [n for (n,) in con.execute("SELECT name FROM annotators ORDER BY name").fetchall()]
            raise names.UnknownName(f"Nobody named {name!r} has entered a task yet (their first entry issues their key)"
                             + (f"; annotators: {', '.join(known[:20])}" if known else ""))
        if row[0][1]:
            raise ValueError(f"{row[0][0]} signs in: they need no personal key")
        if CROWD_NAME.match(identity_key(row[0][0])):
            raise ValueError(f"{row[0][0]} is a crowd worker: they enter by their platform's link, with no key")
        new = secrets.token_urlsafe(KEY_BYTES)
        con.execute("UPDATE annotators SET secret = ?, secret_at = ? WHERE key = ?",
                    [digest(new), (now or datetime.now()).replace(microsecond=0), identity_key(name)])
    return row[0][0], new


def listing(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every annotator: name, whether they sign in, when they first entered and when their key was issued."""
    return con.execute("SELECT name, signed_in, created_at AS first_entry, secret_at AS key_issued FROM annotators "
                       "ORDER BY name").df()
