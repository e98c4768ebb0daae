"""What an endpoint sends is untrusted text: its error bodies, its finish reasons, the model names it lists and the
replies themselves. Each passes here once, where the chat client turns it into a reason or a reply (core.chat), so
generation, the chat, the judges and `endpoint test` print, store and show only what is made safe here:

- a secret is removed: the key in use wherever it appears, and in a reason anything that looks like one (a bearer
  token, an Authorization or api_key field, an sk-... key, the user:password of a URL), since a server may echo the
  request's headers in its error body;
- control characters go (text.CONTROL: C0 but tab and newlines, DEL, C1; a terminal acts on ESC and BEL, and every
  importer refuses them) and lone surrogates become U+FFFD (text.SURROGATE: JSON's "\\ud800" decodes to one, and no
  encoding can write it), and a reply says in its note what was removed.

A reply keeps text that merely looks like a token (a model may explain the Authorization header): only the key in
use is taken out of it, and only a key of KEY_IN_REPLY characters or more (a placeholder key such as 'EMPTY' is no
secret, and would cut words out of replies)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote

from evalcore.core.text import CONTROL, SURROGATE

REMOVED = "[removed]"
KEY_IN_REASON = 4    # characters a key has at least to be looked for in a reason
KEY_IN_REPLY = 12    # ... and in a reply's text
# What looks like a secret in a server's words, each replaced by REMOVED (the name before it kept, so the reason
# still says what was refused): a header or field named like a credential, a bearer or basic token, a key by its
# well-known prefix, the user:password part of a URL.
SECRETS = [
    re.compile(r"(?i)((?:proxy-)?authorization|x-api-key|api[-_ ]?key|access[-_]?token|secret|password|token)"
               r"([\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|token)\s+)?[^\s\"',;&}]+"),
    re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=\-]{4,}"),
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}|\b(?:hf|gsk|ghp|gho|xai)[_-][A-Za-z0-9_\-]{8,}|\bAIza[0-9A-Za-z_\-]{20,}"),
    re.compile(r"(?<=://)[^/\s@:]*:[^/\s@]*(?=@)"),
]


def _key_forms(key: str | None, least: int) -> list[str]:
    """The key as a server may echo it: as sent, and percent-encoded (in a URL it quotes)."""
    if not key or len(key) < least:
        return []
    return sorted({key, quote(key, safe="")}, key=len, reverse=True)


def redact(text: str, key: str | None) -> str:
    """`text` (a server's words) without the key in use and without anything that looks like a secret."""
    for form in _key_forms(key, KEY_IN_REASON):
        text = text.replace(form, REMOVED)
    for pattern in SECRETS:
        text = pattern.sub(lambda m: (m.group(1) + m.group(2) if m.lastindex and m.lastindex >= 2 else "") + REMOVED,
                           text)
    return text


def reason(body: bytes | str, key: str | None = None, limit: int = 200) -> str:
    """A server's words as one line of a reason: decoded, secrets removed (before the cut, so half a key is not
    left), control characters and lone surrogates out, whitespace one space, at most `limit` characters."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    text = redact(text, key)
    text = SURROGATE.sub("\ufffd", CONTROL.sub(" ", text))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def label(value, key: str | None = None, limit: int = 40) -> str:
    """A short word a server chose (a finish reason, a model it lists) made safe to print and store."""
    return reason(str(value), key, limit)


@dataclass
class Cleaner:
    """A reply's text made safe piece by piece as it streams (feed each piece, then end()): control characters
    removed, lone surrogates replaced (a pair split over two pieces joined again), the key in use removed. What may
    be the start of the key, or the first half of a surrogate pair, is held back until the next piece decides it,
    so no piece shown carries either. `note` says what was removed, for the reply's reason."""
    key: str | None = None
    held: str = ""
    removed: dict = field(default_factory=lambda: {"control": 0, "surrogate": 0, "key": 0})

    def feed(self, piece: str) -> str:
        text = self.held + piece
        self.removed["control"] += len(CONTROL.findall(piece))
        text = CONTROL.sub("", text)
        # a high surrogate then a low one, split over two pieces, is one character again
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
        forms = _key_forms(self.key, KEY_IN_REPLY)
        for form in forms:
            self.removed["key"] += text.count(form)
            text = text.replace(form, REMOVED)
        keep = 0
        if text and "\ud800" <= text[-1] <= "\udbff":
            keep = 1
        for form in forms:   # the longest end of the text that begins the key
            keep = max(keep, next((n for n in range(min(len(form) - 1, len(text)), 0, -1)
                                   if form.startswith(text[-n:])), 0))
        text, self.held = (text[:-keep], text[-keep:]) if keep else (text, "")
        self.removed["surrogate"] += len(SURROGATE.findall(text))
        return SURROGATE.sub("\ufffd", text)

    def end(self) -> str:
        """What was held back, made safe (the reply is over: a half key is no key, a half pair is lone)."""
        text, self.held = self.held, ""
        self.removed["surrogate"] += len(SURROGATE.findall(text))
        return SURROGATE.sub("\ufffd", text)

    def whole(self, text: str) -> str:
        """A reply that came in one piece."""
        return self.feed(text) + self.end()

    @property
    def note(self) -> str | None:
        parts = []
        if self.removed["control"]:
            parts.append(f"{self.removed['control']} control character{'s' * (self.removed['control'] > 1)} removed")
        if self.removed["surrogate"]:
            parts.append(f"{self.removed['surrogate']} lone surrogate{'s' * (self.removed['surrogate'] > 1)} "
                         "replaced by U+FFFD")
        if self.removed["key"]:
            parts.append("the key in use removed")
        return ", ".join(parts) or None
