"""A chat endpoint's base URL: what may be registered, and how a stored one is shown and used.

A base URL says where a server answers (scheme, host, port, path) and nothing else. A user name and password in
it (`http://user:sk-...@host/v1`) or a query (`?api_key=sk-...`) is where a key gets pasted by mistake: it would be
stored, printed by every listing and sent with every request. So they are refused at registration, in a sentence
that says which part is wrong and never repeats it (as --api-key-env refuses a key), and a URL stored before this
rule is shown and used without them (`without_secrets`)."""
from __future__ import annotations

import argparse
import re
from urllib.parse import urlsplit, urlunsplit

from evalcore.core.i18n import N_, _

EXAMPLE = "http://127.0.0.1:8000/v1"
KEY_ADVICE = N_("put the key in an environment variable and give its name with --api-key-env (the page's "
              "'Key variable')")
_SPACE_OR_CONTROL = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


def problem(url: str) -> str | None:
    """Why `url` cannot be registered as a base URL, in a sentence that never repeats it (what was given may
    hold a key); None when it can."""
    if not isinstance(url, str) or not url:
        return _("the base URL is empty: give the server's OpenAI API root, like {example}").format(example=EXAMPLE)
    if url != url.strip():
        return _("the base URL starts or ends with a space (or another blank): give it without one")
    if _SPACE_OR_CONTROL.search(url):
        return _("the base URL holds a space or a control character: a URL has none")
    try:
        parts = urlsplit(url)
        port = parts.port   # urllib raises ValueError for a port out of 0..65535 or not a number
    except ValueError:
        return _("the base URL cannot be read as a URL (its host or port is malformed): give one like {example}").format(
            example=EXAMPLE)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return _("the base URL is not an http(s) URL like {example}").format(example=EXAMPLE)
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return _("the base URL holds a user name/password (before '@'): {advice}").format(advice=_(KEY_ADVICE))
    if parts.query or "?" in url:
        return _("the base URL holds a query ('?' and what follows): {advice}; the base URL ends at its path, like "
                 "{example}").format(advice=_(KEY_ADVICE), example=EXAMPLE)
    if "#" in url:
        return _("the base URL holds a fragment ('#' and what follows): it ends at its path, like {example}").format(
            example=EXAMPLE)
    if port == 0:
        return _("the base URL's port is 0: give the port the server listens on (1 to 65535)")
    return None


def base_url(text: str) -> str:
    """An argparse type for --base-url: `text` itself, or an argparse error (exit 2, the option named) saying
    what is wrong without repeating it."""
    why = problem(text)
    if why:
        raise argparse.ArgumentTypeError(why)
    return text


def without_secrets(url: str) -> str:
    """`url` without a user name, password, query or fragment: how a base URL stored before they were refused is
    shown and used (nothing from those parts is printed, stored again or sent)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(a base URL that cannot be read)"
    if parts.username is None and parts.password is None and not parts.query and not parts.fragment:
        return url
    if ":" in host:   # an IPv6 address is written in brackets
        host = f"[{host}]"
    netloc = host + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def held_secrets(url: str) -> bool:
    """Whether a stored base URL held a user name, password, query or fragment (what `without_secrets` drops)."""
    return without_secrets(url) != url
