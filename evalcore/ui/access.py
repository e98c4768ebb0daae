"""Who may write to a shared dashboard's store. Reading is always open; writing (uploads, scoring
jobs started from a page) is one of:
- read-only: nobody writes through the dashboard (EVALCORE_READ_ONLY=1, or `read_only = true` in
  the `[evalcore]` section of .streamlit/secrets.toml);
- sign-in: an `[auth]` section in secrets.toml makes Streamlit's own st.login (OIDC) the gate;
- password: EVALCORE_UPLOAD_PASSWORD, or `upload_password` under `[evalcore]`;
- open: none of these (a dashboard on one's own machine).
The CLI is not gated: whoever can run it can open the store file anyway."""
from __future__ import annotations

import hmac
import os
import threading
import time
from dataclasses import dataclass

TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Policy:
    mode: str                 # 'read-only', 'sign-in', 'password' or 'open'
    password: str | None = None

    def check(self, given: str) -> bool:
        """A password mode's check, in constant time."""
        return self.password is not None and hmac.compare_digest(given.encode("utf-8"), self.password.encode("utf-8"))


def policy(secrets: dict | None = None, environ: dict | None = None) -> Policy:
    """The write policy from the environment (first) and the app's secrets."""
    env = os.environ if environ is None else environ
    own = dict((secrets or {}).get("evalcore", {}) or {})
    if str(env.get("EVALCORE_READ_ONLY", own.get("read_only", ""))).strip().lower() in TRUE:
        return Policy("read-only")
    if (secrets or {}).get("auth"):
        return Policy("sign-in")
    password = env.get("EVALCORE_UPLOAD_PASSWORD") or own.get("upload_password")
    if password:
        return Policy("password", str(password))
    return Policy("open")


class Throttle:
    """Wrong passwords slowed, then locked out. Each key (a session, a client address) may guess FREE (5)
    times freely; after that every wrong guess locks the key for BASE * 2**(k-1) seconds (k: wrong guesses
    past the free ones; 1, 2, 4, ... s, at most CAP = 300 s), and a guess while locked is not checked at
    all. A right guess clears the key. One per process (THROTTLE): a server's sessions share it, so a new
    tab from the same address waits as long as the old one. After five wrong guesses a key gets at most
    6 more checked in the next minute and about 12 an hour thereafter (tests/test_access.py)."""

    FREE = 5
    BASE = 1.0
    CAP = 300.0

    def __init__(self, clock=None):

        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self.wrong: dict[str, int] = {}
        self.until: dict[str, float] = {}

    def wait(self, *keys: str) -> float:
        """Seconds until every one of `keys` may guess again (0: now)."""
        now = self._clock()
        with self._lock:
            return max([0.0] + [self.until.get(k, 0.0) - now for k in keys if k])

    def failed(self, *keys: str) -> float:
        """Record a wrong guess for each key; the wait it imposes."""
        now = self._clock()
        with self._lock:
            for k in (k for k in keys if k):
                n = self.wrong[k] = self.wrong.get(k, 0) + 1
                if n > self.FREE:
                    self.until[k] = now + min(self.CAP, self.BASE * 2 ** (n - self.FREE - 1))
        return self.wait(*keys)

    def succeeded(self, *keys: str) -> None:
        with self._lock:
            for k in keys:
                self.wrong.pop(k, None)
                self.until.pop(k, None)


def guess(rule: Policy, given: str, keys: tuple[str, ...], throttle: Throttle) -> tuple[bool, float]:
    """(right, seconds to wait) for one password guess under the throttle: a guess while locked is not
    checked (False and the wait left)."""
    left = throttle.wait(*keys)
    if left > 0:
        return False, left
    if rule.check(given):
        throttle.succeeded(*keys)
        return True, 0.0
    return False, throttle.failed(*keys)


THROTTLE = Throttle()


class Writers:
    """The sessions the page gate let write (their Streamlit session ids). Streamlit's upload endpoint
    (/_stcore/upload_file/<session>/<file>) takes a file from any session that has a page open; the
    dashboard refuses to keep one from a session not in here (pages/views/common.py guards the endpoint),
    so a visitor without the password cannot park files in the server's memory."""

    def __init__(self):
        self._lock = threading.Lock()
        self._ids: set[str] = set()

    def grant(self, session_id: str | None) -> None:
        if session_id:
            with self._lock:
                self._ids.add(session_id)

    def allowed(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._ids


WRITERS = Writers()
