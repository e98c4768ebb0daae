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
