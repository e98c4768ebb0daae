"""Who may write to a shared dashboard's store. Reading is always open; writing (uploads, scoring
jobs started from a page) is one of:
- read-only: nobody writes through the dashboard (EVALCORE_READ_ONLY=1, or `read_only = true` in
  the `[evalcore]` section of .streamlit/secrets.toml);
- sign-in: an `[auth]` section in secrets.toml makes Streamlit's own st.login (OIDC) the gate;
- password: EVALCORE_UPLOAD_PASSWORD, or `upload_password` under `[evalcore]`;
- open: none of these (a dashboard on one's own machine).
The CLI is not gated: whoever can run it can open the store file anyway.

Guesses (the upload password, a rating task's access code, an annotator's personal secret) are counted per
session, per client address and per server (`attempt`). The client address is the TCP peer, or, when the
operator names the reverse proxy in front (EVALCORE_TRUSTED_PROXIES, or `trusted_proxies` under
`[evalcore]`), the last address in X-Forwarded-For that is not one of those proxies. Streamlit serves through
uvicorn, which reads X-Forwarded-For itself from the addresses in FORWARDED_ALLOW_IPS (127.0.0.1 and ::1 when
unset: any local process could then claim any address); app.py sets that variable from the named proxies,
and to no address at all when none is named (`forwarded_allow_ips`)."""
from __future__ import annotations

import hmac
import ipaddress
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

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


def trusted_proxies(secrets: dict | None = None, environ: dict | None = None) -> list[str]:
    """The reverse proxies the operator named (addresses or networks, e.g. '127.0.0.1' or '10.0.0.0/8'), from
    EVALCORE_TRUSTED_PROXIES (comma-separated) or `trusted_proxies` under `[evalcore]` (a list or a
    comma-separated string); a ValueError names one that is neither."""
    env = os.environ if environ is None else environ
    given = env.get("EVALCORE_TRUSTED_PROXIES")
    if given is None:
        given = dict((secrets or {}).get("evalcore", {}) or {}).get("trusted_proxies", "")
    items = given if isinstance(given, list | tuple) else str(given).split(",")
    out = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"EVALCORE_TRUSTED_PROXIES: {item!r} is not an address or a network "
                             "(for example 127.0.0.1 or 10.0.0.0/8)") from None
        out.append(item)
    return out


def forwarded_allow_ips(secrets: dict | None = None, environ: dict | None = None) -> str:
    """uvicorn's FORWARDED_ALLOW_IPS for the named proxies: '' (nobody's X-Forwarded-For is read) when none is
    named, so that no client can choose the address its guesses are counted against."""
    return ",".join(trusted_proxies(secrets, environ))


class Throttle:
    """Wrong passwords slowed, then locked out. Each key (a session, a client address) may guess FREE (5)
    times freely; after that every wrong guess locks the key for BASE * 2**(k-1) seconds (k: wrong guesses
    past the free ones; 1, 2, 4, ... s, at most CAP = 300 s), and a guess while locked is not checked at
    all. A right guess clears the key. One per process (THROTTLE): a server's sessions share it, so a new
    tab from the same address waits as long as the old one. After five wrong guesses a key gets at most
    6 more checked in the next minute and about 12 an hour thereafter (tests/dashboard/test_access.py)."""

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


class Budget:
    """Wrong guesses one server checks per gate: at most LIMIT in any WINDOW seconds, whoever makes them. Past
    that, no guess at that gate is checked until the oldest wrong one is WINDOW seconds old. A new session, a
    new address (or one a client makes up) does not reset it, so guessing a 24-bit access code from any number
    of sessions takes years at 30 a minute; the price is that a guesser can make the lab's own people wait up
    to a minute at that gate, which they are told. A right guess costs nothing. One per process (BUDGET): each
    page-serving process of `evalcore app --processes N` counts its own."""

    LIMIT = 30
    WINDOW = 60.0

    def __init__(self, clock=None, limit: int | None = None, window: float | None = None):
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self.limit = self.LIMIT if limit is None else limit
        self.window = self.WINDOW if window is None else window
        self.wrong: dict[str, deque] = {}

    def wait(self, gate: str) -> float:
        now = self._clock()
        with self._lock:
            times = self.wrong.get(gate)
            if not times:
                return 0.0
            while times and times[0] <= now - self.window:
                times.popleft()
            return max(0.0, times[0] + self.window - now) if len(times) >= self.limit else 0.0

    def failed(self, gate: str) -> float:
        with self._lock:
            self.wrong.setdefault(gate, deque()).append(self._clock())
        return self.wait(gate)


class Outcome(NamedTuple):
    right: bool
    wait: float     # seconds until the next guess is checked (0: now)
    checked: bool   # False: held back, not checked at all


def attempt(check: Callable[[], bool], keys: tuple[str, ...], gate: str, throttle: Throttle,
            budget: Budget) -> Outcome:
    """One guess at `gate` (checked by calling `check`) under the per-key throttle (`keys`: the session, the
    client address) and the server's budget for that gate. A guess while either holds it back is not checked."""
    left = max(throttle.wait(*keys), budget.wait(gate))
    if left > 0:
        return Outcome(False, left, False)
    if check():
        throttle.succeeded(*keys)
        return Outcome(True, 0.0, True)
    return Outcome(False, max(throttle.failed(*keys), budget.failed(gate)), True)


def guess(rule: Policy, given: str, keys: tuple[str, ...], throttle: Throttle, budget: Budget | None = None,
          gate: str = "password") -> tuple[bool, float]:
    """One upload-password guess, (right, seconds to wait): `attempt` with the policy's constant-time check."""
    right, wait, _ = attempt(lambda: rule.check(given), keys, gate, throttle, budget or Budget())
    return right, wait


def guess_keys(gate: str, session: str | None, address: str | None) -> tuple[str, ...]:
    """What a guess at `gate` is counted against: the session and the client address (None, Streamlit's answer
    for a loopback peer, is the address 'local': every process on the server's own machine is one client)."""
    return (f"{gate}|session:{session}", f"{gate}|address:{address or 'local'}")


THROTTLE = Throttle()
BUDGET = Budget()


class Writers:
    """The sessions the page gate let write (their Streamlit session ids). Streamlit's upload endpoint
    (/_stcore/upload_file/<session>/<file>) takes a file from any session that has a page open; the
    dashboard refuses to keep one from a session not in here (pages/kit/access.guard_uploads guards the endpoint),
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
