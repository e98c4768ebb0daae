"""Who may write through this dashboard, as a page asks it: the write gate (read-only note, sign-in, password),
guesses at a gate counted per session, client and server, and the guard on Streamlit's upload endpoint that
app.py installs (guard_uploads). The rules themselves are evalcore.pagedata.access's."""
from __future__ import annotations

import math
import sys

import streamlit as st
from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.scriptrunner import get_script_run_ctx

from evalcore.core.i18n import N_, _
from evalcore.pagedata.access import BUDGET, THROTTLE, WRITERS, attempt, guess_keys, policy, trusted_proxies

# What a gate says while guesses are held back, per kind of guess: (this session's wait, the whole server's), whole
# sentences so that each language orders its own words
WAITS = {
    "passwords": (N_("Too many wrong passwords: the next guess is checked in {seconds} s (reload the page then)."),
                  N_("This server has had {limit} wrong passwords in the last {window} s, from one person or "
                     "several: the next guess is checked in {seconds} s (reload the page then).")),
    "access codes": (N_("Too many wrong access codes: the next guess is checked in {seconds} s (reload the page "
                        "then)."),
                     N_("This server has had {limit} wrong access codes in the last {window} s, from one person or "
                        "several: the next guess is checked in {seconds} s (reload the page then).")),
    "personal keys": (N_("Too many wrong personal keys: the next guess is checked in {seconds} s (reload the page "
                         "then)."),
                      N_("This server has had {limit} wrong personal keys in the last {window} s, from one person "
                         "or several: the next guess is checked in {seconds} s (reload the page then).")),
}


def _secrets() -> dict:
    try:
        return st.secrets.to_dict()
    except Exception:  # no secrets.toml: nothing configured
        return {}


def _session_id() -> str | None:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx else None


_UNNAMED_PROXY_SAID: list[bool] = []


def _client_address() -> str | None:
    """The client's address as the server knows it (None: this machine). Said once in the server's log when a
    request came through a proxy that nobody named: then every client behind it counts as one."""
    address = getattr(st.context, "ip_address", None)
    if not _UNNAMED_PROXY_SAID:
        headers = getattr(st.context, "headers", None) or {}
        if headers.get("X-Forwarded-For") and not trusted_proxies(_secrets()):
            _UNNAMED_PROXY_SAID.append(True)
            print("evalcore: requests arrive through a reverse proxy that EVALCORE_TRUSTED_PROXIES does not name: "
                  "its clients' wrong guesses are counted as one client's (README, 'A lab server')",
                  file=sys.stderr, flush=True)
    return address


def client_address() -> str | None:
    """The client's address as the server knows it, for a page (a crowd worker's browser: pages/kit/crowd.py)."""
    return _client_address()


def checked_guess(gate: str, check):
    """One guess at `gate` ('password', 'task-code', ...), counted against this session, this client's address
    and the server (evalcore.pagedata.access.attempt: right, wait, checked); `check()` runs only when none of them
    holds the guess back."""
    return attempt(check, guess_keys(gate, _session_id(), _client_address()), gate, THROTTLE, BUDGET)


def guess_wait(gate: str) -> tuple[float, bool]:
    """(seconds until this session may guess at `gate` again, whether it is the whole server's limit)."""
    mine = THROTTLE.wait(*guess_keys(gate, _session_id(), _client_address()))
    server = BUDGET.wait(gate)
    return max(mine, server), server > mine


def wait_text(what: str, wait: float, server: bool) -> str:
    """The sentence a gate shows while guesses are held back (`what`: 'passwords', 'access codes' or 'personal
    keys'), in this run's language."""
    mine, servers = WAITS.get(what) or (
        f"Too many wrong {what}: the next guess is checked in {{seconds}} s (reload the page then).",
        f"This server has had {{limit}} wrong {what} in the last {{window}} s, from one person or several: the next "
        "guess is checked in {seconds} s (reload the page then).")
    return _(servers if server else mine).format(limit=BUDGET.limit, window=f"{BUDGET.window:g}",
                                                 seconds=math.ceil(wait))


def _on_password() -> None:
    """A guess is checked once, when the box's value changes (not again on every rerun of the page)."""
    given = st.session_state.get("access-password") or ""
    if not given:
        return
    rule = policy(_secrets())
    outcome = checked_guess("password", lambda: rule.check(given))
    st.session_state["access-ok"] = outcome.right
    st.session_state["access-said"] = "wrong" if outcome.checked and not outcome.right else None
    st.session_state["access-password"] = ""  # never kept in the session; a locked guess is not checked


def may_write() -> tuple[bool, str | None]:
    """(allowed, who) for this session under the deployment's write policy (evalcore.pagedata.access); draws
    what the user needs: the read-only note, a sign-in button or a password box. A session allowed to
    write is admitted to Streamlit's upload endpoint (guard_uploads)."""
    rule = policy(_secrets())
    if rule.mode == "read-only":
        st.info(_("This dashboard is read-only: uploads and scoring are off here. Import with the command "
                  "line on the server (see the README), or ask whoever runs it."))
        return False, None
    if rule.mode == "sign-in":
        if not st.user.is_logged_in:
            st.info(_("Sign in to upload; reading needs no sign-in."))
            st.button(_("Sign in"), on_click=st.login, key="access-login")
            return False, None
        WRITERS.grant(_session_id())
        return True, str(st.user.get("email") or st.user.get("name") or "signed in")
    if rule.mode == "password":
        if st.session_state.get("access-ok"):
            WRITERS.grant(_session_id())
            return True, "password"
        wait, server = guess_wait("password")
        st.text_input(_("Upload password"), type="password", key="access-password", on_change=_on_password,
                      disabled=wait > 0,
                      help=_("This dashboard asks for a password before anything is written to its store."))
        if st.session_state.pop("access-said", None) == "wrong":   # said once, for the guess just checked
            st.error(_("Wrong password: nothing can be uploaded."))
        if wait > 0:
            st.error(wait_text("passwords", wait, server))
        return False, None
    WRITERS.grant(_session_id())
    return True, None


def guard_uploads() -> None:
    """Streamlit keeps a file PUT to /_stcore/upload_file/<session>/<file> in memory for any session with a
    page open, uploader or not. Refuse to keep one from a session the write gate has not admitted
    (evalcore.pagedata.access.WRITERS): the request then fails, and nothing stays in the server's memory. Installed
    on Streamlit's uploaded-file manager (the one both its servers use) by app.py's first run; every later call finds
    it installed and returns."""
    keep = MemoryUploadedFileManager.add_file
    if getattr(keep, "guarded", False):
        return

    def add_file(self, session_id, file):
        if not WRITERS.allowed(session_id):
            raise PermissionError("uploads are open only to sessions allowed to write (see the Upload page)")
        return keep(self, session_id, file)

    add_file.guarded = True
    MemoryUploadedFileManager.add_file = add_file
