"""Annotators' keys in the normal form that now leaves out invisible characters.

A name's key (evalcore.core.text.identity_key) now drops format and other default-ignorable characters (a zero-width
space, a soft hyphen, a BOM, direction marks), so 'ali\u200bce' and 'alice' are one name. A person registered before,
under a name holding such a character, kept a key holding it: no spelling of their name reached them any more (the
typed name's key has the character removed), and `task reset-key` could not find them either. Their key is made again
here, so they enter by their name as before.

Where the new key is already another person's ('alice' registered, then 'ali\u200bce' by someone else, which looked
the same on every page), nothing is merged: two people stay two, and the later row keeps its old key. Their answers
stay theirs; whoever runs the tasks sees both on the Rating tasks page (the later one's name holds the character)."""
from __future__ import annotations

from evalcore.core.text import identity_key

VERSION = 19

SQL = ""


def run(con) -> None:
    rows = con.execute("SELECT key, name, created_at FROM annotators ORDER BY created_at, key").fetchall()
    taken = {key for key, _, _ in rows}
    for key, name, _ in rows:
        new = identity_key(name)
        if new != key and new not in taken:
            con.execute("UPDATE annotators SET key = ? WHERE key = ?", [new, key])
            taken.discard(key)
            taken.add(new)
