"""A small client for any OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp server, OpenAI).

Standard library only: many requests in flight on a thread pool, retries with exponential backoff on the
failures that pass (429, 5xx, connection errors, timeouts), and every failure returned as a reason, never
raised, so one bad item cannot stop a run.
"""
from __future__ import annotations

import http.client
import json
import os
import random
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlsplit

from evalcore.metrics.options import JUDGE_API_KEY_ENV, JUDGE_MAX_TOKENS, JUDGE_TEMPERATURE

NO_ENDPOINT = ("no judge endpoint: give --judge-base-url and --judge-model (no judge model ships with evalcore; "
               "any OpenAI-compatible server works: vLLM, Ollama, llama.cpp)")
MAX_RETRY_AFTER = 60.0  # seconds: the most a server's Retry-After may make us wait


@dataclass(frozen=True)
class Endpoint:
    """Where the judge runs. The key is read from the environment variable `api_key_env` at call time, so it
    never sits in an object that may be printed, pickled or stored."""
    base_url: str  # with the /v1 part, as the OpenAI client expects: http://127.0.0.1:8000/v1
    model: str
    api_key_env: str = JUDGE_API_KEY_ENV
    temperature: float = JUDGE_TEMPERATURE
    max_tokens: int = JUDGE_MAX_TOKENS
    timeout: float = 60.0

    def signature_part(self) -> str:
        """What decides the judge's answers, for a metric signature: model, server, sampling (never the key)."""
        parts = urlsplit(self.base_url)
        host = (parts.hostname or self.base_url) + (f":{parts.port}" if parts.port else "")
        return f"judge:{self.model}@{host}|t:{self.temperature}|max:{self.max_tokens}"


@dataclass
class Reply:
    text: str | None  # the judge's answer, None on failure
    error: str | None  # why there is no answer
    attempts: int


def availability(endpoint: Endpoint | None) -> str | None:
    """None when the endpoint is usable as far as can be told without the network, else the reason."""
    if endpoint is None:
        return NO_ENDPOINT
    if urlsplit(endpoint.base_url).scheme not in ("http", "https") or not urlsplit(endpoint.base_url).hostname:
        return f"judge base URL {endpoint.base_url!r} is not an http(s) URL like http://127.0.0.1:8000/v1"
    if not endpoint.model.strip():
        return "no judge model: give --judge-model (the name the server serves, e.g. qwen2.5-7b-instruct)"
    return None


class _Retryable(Exception):
    """A failure worth another attempt; `wait` is the server's Retry-After, if it sent one."""

    def __init__(self, reason: str, wait: float | None = None):
        super().__init__(reason)
        self.reason, self.wait = reason, wait


def _short(body: bytes | str, limit: int = 200) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _retry_after(headers) -> float | None:
    try:
        return min(float(headers.get("Retry-After")), MAX_RETRY_AFTER)
    except (TypeError, ValueError):
        return None


def _post(endpoint: Endpoint, messages: list[dict], key: str | None) -> str:
    """One request. Returns the answer text; raises _Retryable, or ValueError for a failure not worth retrying."""
    try:
        body = json.dumps({"model": endpoint.model, "messages": messages, "temperature": endpoint.temperature,
                           "max_tokens": endpoint.max_tokens}).encode("utf-8")
    except TypeError as e:
        raise ValueError(f"messages are not JSON: {e}") from None
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(endpoint.base_url.rstrip("/") + "/chat/completions", data=body,
                                     headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=endpoint.timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as e:  # before URLError: it is one
        reason = f"HTTP {e.code}: {_short(e.read() or b'')}"
        if e.code == 429 or e.code >= 500:
            raise _Retryable(reason, _retry_after(e.headers)) from None
        raise ValueError(reason) from None
    except urllib.error.URLError as e:
        if isinstance(e.reason, TimeoutError):
            raise _Retryable(f"timeout: no answer within {endpoint.timeout:g} s") from None
        raise _Retryable(f"connection error: {e.reason}") from None
    except TimeoutError:  # socket.timeout is TimeoutError since 3.10
        raise _Retryable(f"timeout: no answer within {endpoint.timeout:g} s") from None
    except (OSError, http.client.HTTPException) as e:  # reset, closed mid-answer, garbled status line
        raise _Retryable(f"connection error: {type(e).__name__}: {e}") from None
    try:
        content = json.loads(raw)["choices"][0]["message"]["content"]
    except (ValueError, LookupError, TypeError):
        raise ValueError(f"reply without choices[0].message.content: {_short(raw)}") from None
    if not isinstance(content, str):
        raise ValueError(f"reply without choices[0].message.content: {_short(raw)}")
    return content


def _chat_one(endpoint: Endpoint, messages: list[dict], key: str | None, attempts: int, backoff: float) -> Reply:
    for attempt in range(attempts):
        try:
            return Reply(_post(endpoint, messages, key), None, attempt + 1)
        except ValueError as e:
            return Reply(None, str(e), attempt + 1)
        except _Retryable as e:
            if attempt + 1 == attempts:
                # every reason reads "kind: detail": "HTTP 500: body" -> "HTTP 500 after 3 attempts: body"
                head, _, tail = e.reason.partition(": ")
                return Reply(None, f"{head} after {attempts} attempts: {tail}", attempts)
            wait = backoff * 2 ** attempt
            time.sleep(max(wait, e.wait or 0.0) + random.uniform(0, wait / 10))  # jitter: no lockstep retries
    raise AssertionError("unreachable")


def chat_many(endpoint: Endpoint, conversations: list[list[dict]], *, concurrency: int = 8, retries: int = 3,
              backoff: float = 0.5, on_done: Callable[[int, int], None] | None = None) -> list[Reply]:
    """Send each conversation (a list of chat messages) to `endpoint`; replies in input order.

    At most `concurrency` requests are in flight. `retries` is the number of attempts in all (at least 1);
    attempt k+1 waits backoff * 2**k seconds (or the server's Retry-After, if longer) after a 429, 5xx,
    connection error or timeout; other failures are not retried. `on_done(done, total)` is called from this
    thread after each conversation finishes."""
    total, attempts = len(conversations), max(1, int(retries))
    replies: list[Reply | None] = [None] * total
    if not total:
        return []
    key = os.environ.get(endpoint.api_key_env) or None
    with ThreadPoolExecutor(max_workers=max(1, min(int(concurrency), total))) as pool:
        futures = {pool.submit(_chat_one, endpoint, messages, key, attempts, backoff): i
                   for i, messages in enumerate(conversations)}
        for done, future in enumerate(as_completed(futures), 1):
            replies[futures[future]] = future.result()
            if on_done is not None:
                on_done(done, total)
    return replies  # type: ignore[return-value]
