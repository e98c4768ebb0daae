"""The one rule for a seed drawn from names: SHA-256 of the parts' text joined by U+001F (a separator no name
holds, so ("ab", "c") and ("a", "bc") differ), its first 8 bytes read as a whole number, fed to numpy's
default_rng. The same parts give the same order on any machine and any Python, unlike hash().

The byte order is part of the rule and differs between the two callers for a reason that must stay: rating
tasks (store/tasks.py: each annotator's order of units, which side a pairwise unit shows) have read the bytes
little-endian since they were built, chat tasks (store/chats.py: each person's order of endpoints and scenarios)
big-endian. Changing either would give a person halfway through an open task a different order on their next
visit, and an exported task's order could no longer be recomputed from its seed. A new caller uses LITTLE."""
from __future__ import annotations

import hashlib
from typing import Literal

LITTLE: Literal["little"] = "little"
BIG: Literal["big"] = "big"   # chat tasks only (see above)


def seed(*parts, byteorder: Literal["little", "big"] = LITTLE) -> int:
    """A 64-bit seed from `parts` (each written with str())."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], byteorder)
