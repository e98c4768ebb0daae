"""The judges' side of the chat client (evalcore.core.chat): what a judge run says when no endpoint is given or
it cannot be used. Endpoint, Reply and chat_many are the shared client's, so judges and generation speak to a
server the same way (retries, Retry-After, limits, keys read at call time)."""
from __future__ import annotations

from evalcore.core.chat import Endpoint, Reply, chat_many
from evalcore.core.chat import availability as _availability

NO_ENDPOINT = ("no judge endpoint: give --judge-base-url and --judge-model, or --judge-endpoint NAME (`evalcore "
               "endpoint list`) (no judge model ships with evalcore; any OpenAI-compatible server works: vLLM, "
               "Ollama, llama.cpp)")

__all__ = ["NO_ENDPOINT", "Endpoint", "Reply", "availability", "chat_many"]


def availability(endpoint: Endpoint | None) -> str | None:
    """None when the judge endpoint is usable as far as can be told without the network, else the reason."""
    reason = _availability(endpoint, NO_ENDPOINT)
    if reason is None or endpoint is None:
        return reason
    if not endpoint.model.strip():
        return "no judge model: give --judge-model (the name the server serves, e.g. qwen2.5-7b-instruct)"
    return "judge " + reason
