"""One client for every OpenAI-compatible chat endpoint (vLLM, SGLang, Ollama, llama.cpp's server, TGI, hosted
APIs), used by the LLM judges and by generation alike.

Built on httpx2 (the successor of httpx, which the openai package itself builds on) rather than on the openai
package: pooled keep-alive connections and separate connect/read timeouts come with it, a reply is read as a
stream so an endless or megabyte answer is cut at a token and a byte limit instead of filling memory, it imports
in a fifth of the time, and it sends a request without a key (local servers have none; the openai client refuses).
The wire protocol it speaks is small: POST /chat/completions (JSON or server-sent events), GET /models.

Many requests are in flight on a thread pool; a 429, a 5xx, a connection error or a timeout is retried with
exponential backoff (or the server's Retry-After, if longer); every failure comes back as a reason, never raised,
so one bad item cannot stop a run. The key is read at call time (keys.read_key), never kept in an object.
"""
from __future__ import annotations

import functools
import json
import random
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, TypeVar
from urllib.parse import urlsplit

import httpx2

from evalcore.core.keys import DEFAULT_KEY_ENV, read_key

MAX_RETRY_AFTER = 60.0      # seconds: the most a server's Retry-After may make us wait
MAX_BODY = 16 * 1024 * 1024  # bytes of one answer read at most: past it the answer is refused, not parsed
MAX_TEXT = 64 * 1024        # bytes of reply text kept: past it the text is cut (a reply, not a document)
K = TypeVar("K")


@dataclass(frozen=True)
class Endpoint:
    """Where a model answers, and how it is asked (its sampling decides the answers, so signatures carry it).
    The key comes from the environment variable `api_key_env` (or .streamlit/secrets.toml) at call time, so it
    never sits in an object that may be printed, pickled or stored."""
    base_url: str  # with the /v1 part, as OpenAI clients expect: http://127.0.0.1:8000/v1
    model: str
    api_key_env: str | None = DEFAULT_KEY_ENV
    temperature: float | None = 0.0
    max_tokens: int = 512
    timeout: float = 60.0   # seconds without a byte of the answer
    top_p: float | None = None
    seed: int | None = None
    stream: bool = False     # ask for server-sent events (generation); the judges read one JSON answer
    max_bytes: int = MAX_TEXT

    @property
    def host(self) -> str:
        parts = urlsplit(self.base_url)
        return (parts.hostname or self.base_url) + (f":{parts.port}" if parts.port else "")

    def signature_part(self) -> str:
        """What decides the judge's answers, for a metric signature: model, server, sampling (never the key)."""
        return f"judge:{self.model}@{self.host}|t:{self.temperature}|max:{self.max_tokens}"

    def body(self, messages: list[dict]) -> dict:
        out = {"model": self.model, "messages": messages, "max_tokens": self.max_tokens}
        for name in ("temperature", "top_p", "seed"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.stream:
            out["stream"] = True
        return out


@dataclass
class Reply:
    text: str | None    # the answer, None on failure
    error: str | None   # why there is no answer
    attempts: int
    finish: str | None = None   # the server's finish_reason; "cut" when this client stopped reading
    seconds: float = 0.0        # from the first attempt to the answer

    @property
    def flag(self) -> str | None:
        """Why an answer is not a plain one: 'empty', 'length' (cut by max_tokens), 'refused' (the server's
        content filter), 'cut' (past this client's token or byte limit); None for a plain answer or a failure."""
        if self.text is None:
            return None
        if self.finish == "cut":
            return "cut"
        if self.finish == "content_filter":
            return "refused"
        if self.finish == "length":
            return "length"
        return "empty" if not self.text.strip() else None


def availability(endpoint: Endpoint | None, missing: str) -> str | None:
    """None when the endpoint is usable as far as can be told without the network, else the reason
    (`missing`: the sentence for no endpoint at all)."""
    if endpoint is None:
        return missing
    parts = urlsplit(endpoint.base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"base URL {endpoint.base_url!r} is not an http(s) URL like http://127.0.0.1:8000/v1"
    if not endpoint.model.strip():
        return "no model name: give the name the server serves (e.g. qwen2.5-7b-instruct)"
    return None


class Retryable(Exception):
    """A failure worth another attempt; `wait` is the server's Retry-After, if it sent one."""

    def __init__(self, reason: str, wait: float | None = None):
        super().__init__(reason)
        self.reason, self.wait = reason, wait


class Refused(ValueError):
    """A failure another attempt would not mend (a 4xx, an answer that is not the protocol's)."""


def short(body: bytes | str, limit: int = 200) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _retry_after(headers) -> float | None:
    try:
        return min(float(headers.get("Retry-After")), MAX_RETRY_AFTER)
    except (TypeError, ValueError):
        return None


def client_for(endpoint: Endpoint, connections: int = 8) -> httpx2.Client:
    """A pooled client for `connections` requests in flight. trust_env=False: a proxy set for the shell must
    not carry requests meant for a local server (NO_PROXY rarely lists 127.0.0.1's port)."""
    timeout = httpx2.Timeout(endpoint.timeout, connect=min(endpoint.timeout, 10.0))
    limits = httpx2.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx2.Client(timeout=timeout, limits=limits, trust_env=False, verify=_tls())


@functools.lru_cache(maxsize=1)
def _tls():
    """One TLS context for every client: reading the CA certificates costs about 50 ms of CPU with the GIL held, on
    each streamed chat reply (a client each), which every other session's script waited through."""
    return httpx2.create_ssl_context(trust_env=False)


def headers(key: str | None) -> dict:
    out = {"Content-Type": "application/json"}
    if key:
        out["Authorization"] = f"Bearer {key}"
    return out


@contextmanager
def _transport(endpoint: Endpoint) -> Iterator[None]:
    """httpx2's failures to reach or hear the server as Retryable, each a sentence."""
    try:
        yield
    except httpx2.TimeoutException:
        raise Retryable(f"timeout: no answer within {endpoint.timeout:g} s") from None
    except (httpx2.TransportError, OSError) as e:   # refused, reset, closed mid-answer, garbled status line
        raise Retryable(f"connection error: {str(e) or type(e).__name__}") from None


def _post(http: httpx2.Client, endpoint: Endpoint, messages: list[dict], key: str | None) -> tuple[str, str | None]:
    """One request: (the answer text, finish_reason); raises Retryable or Refused."""
    try:
        body = json.dumps(endpoint.body(messages), ensure_ascii=False).encode("utf-8")
    except TypeError as e:
        raise Refused(f"messages are not JSON: {e}") from None
    url = endpoint.base_url.rstrip("/") + "/chat/completions"
    with _transport(endpoint), http.stream("POST", url, content=body, headers=headers(key)) as response:
        if response.status_code >= 400:
            reason = f"HTTP {response.status_code}: {short(_read(response, 4096))}"
            if response.status_code in (408, 429) or response.status_code >= 500:
                raise Retryable(reason, _retry_after(response.headers))
            raise Refused(reason)
        if "text/event-stream" in response.headers.get("content-type", ""):
            return _events(response, endpoint)
        return _answer(_read(response, MAX_BODY), endpoint)


def _read(response: httpx2.Response, limit: int) -> bytes:
    """The body, or Refused once it passes `limit` bytes (an answer that never ends is not waited for)."""
    chunks, size = [], 0
    for chunk in response.iter_raw():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            if limit < MAX_BODY:   # an error body: its start says enough
                break
            raise Refused(f"an answer of more than {limit:,} bytes: not read further")
    return b"".join(chunks)


def _cut(text: str, endpoint: Endpoint) -> tuple[str, bool]:
    data = text.encode("utf-8")
    if len(data) <= endpoint.max_bytes:
        return text, False
    return data[:endpoint.max_bytes].decode("utf-8", "ignore"), True


def _answer(raw: bytes, endpoint: Endpoint) -> tuple[str, str | None]:
    try:
        choice = json.loads(raw)["choices"][0]
        content, finish = choice["message"]["content"], choice.get("finish_reason")
    except (ValueError, LookupError, TypeError, AttributeError):
        raise Refused(f"reply without choices[0].message.content: {short(raw)}") from None
    if content is None and finish == "content_filter":
        content = ""
    if not isinstance(content, str):
        raise Refused(f"reply without choices[0].message.content: {short(raw)}")
    text, cut = _cut(content, endpoint)
    return text, "cut" if cut else finish


def _events(response: httpx2.Response, endpoint: Endpoint) -> tuple[str, str | None]:
    """The whole streamed answer: (text, finish_reason)."""
    pieces = _pieces(response, endpoint)
    while True:
        try:
            next(pieces)
        except StopIteration as done:
            return done.value


def _pieces(response: httpx2.Response, endpoint: Endpoint) -> Iterator[str]:
    """Yield the text of server-sent chunks as they arrive until [DONE], a finish_reason, or this client's limits:
    `max_tokens` chunks (a chunk is about a token; a server that streams forever is cut there) or `max_bytes` of
    text. Returns (the whole text, finish_reason) as the generator's value."""
    pieces, size, chunks, finish, buffer = [], 0, 0, None, b""
    for raw in response.iter_raw():
        buffer += raw
        if len(buffer) > MAX_BODY:
            raise Refused(f"a streamed line of more than {MAX_BODY:,} bytes: not read further")
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                return "".join(pieces), finish
            try:
                choice = json.loads(data)["choices"][0]
            except (ValueError, LookupError, TypeError):
                raise Refused(f"a streamed chunk that is not the protocol's: {short(data)}") from None
            piece = (choice.get("delta") or {}).get("content") or ""
            size += len(piece.encode("utf-8"))
            chunks += 1 if piece else 0
            finish = choice.get("finish_reason") or finish
            if size > endpoint.max_bytes or chunks > endpoint.max_tokens:
                text, _ = _cut("".join(pieces) + piece, endpoint)
                return text, "cut"
            if piece:
                pieces.append(piece)
                yield piece
    if finish is None:
        raise Retryable("connection error: the stream ended before its last chunk")
    return "".join(pieces), finish


class Stream:
    """One streamed answer for a person waiting on it: iterate for the text piece by piece as it arrives; once the
    iteration ends, `reply` holds the whole answer or why there is none. A failure before the first piece is retried
    as chat_many retries; after it, the partial text is dropped and the reply is the failure (a retry would show the
    same words twice), so the caller offers its own retry. Nothing raises out of the iteration."""

    def __init__(self, endpoint: Endpoint, messages: list[dict], *, retries: int = 3, backoff: float = 0.5):
        self.endpoint = replace(endpoint, stream=True)
        self.messages, self.retries, self.backoff = messages, max(1, retries), backoff
        self.reply: Reply | None = None
        self.first_piece_at: float | None = None   # time.monotonic() of the first piece (benchmarks read it)

    def __iter__(self) -> Iterator[str]:
        start = time.monotonic()
        key = read_key(self.endpoint.api_key_env)
        with client_for(self.endpoint, 1) as http:
            for attempt in range(self.retries):
                shown = False
                try:
                    url = self.endpoint.base_url.rstrip("/") + "/chat/completions"
                    body = json.dumps(self.endpoint.body(self.messages), ensure_ascii=False).encode("utf-8")
                    with _transport(self.endpoint), http.stream("POST", url, content=body, headers=headers(key)) as response:
                        if response.status_code >= 400:
                            reason = f"HTTP {response.status_code}: {short(_read(response, 4096))}"
                            if response.status_code in (408, 429) or response.status_code >= 500:
                                raise Retryable(reason, _retry_after(response.headers))
                            raise Refused(reason)
                        if "text/event-stream" not in response.headers.get("content-type", ""):
                            text, finish = _answer(_read(response, MAX_BODY), self.endpoint)
                            if text:
                                self.first_piece_at = time.monotonic()
                                yield text
                        else:
                            pieces = _pieces(response, self.endpoint)
                            while True:
                                try:
                                    piece = next(pieces)
                                except StopIteration as done:
                                    text, finish = done.value
                                    break
                                if not shown:
                                    self.first_piece_at, shown = time.monotonic(), True
                                yield piece
                    self.reply = Reply(text, None, attempt + 1, finish, time.monotonic() - start)
                    return
                except Refused as e:
                    self.reply = Reply(None, str(e), attempt + 1, None, time.monotonic() - start)
                    return
                except Retryable as e:
                    if shown or attempt + 1 == self.retries:
                        head, _, tail = e.reason.partition(": ")
                        self.reply = Reply(None, f"{head} after {attempt + 1} attempts: {tail}" if not shown else
                                           f"{head} in the middle of the reply: {tail}", attempt + 1, None,
                                           time.monotonic() - start)
                        return
                    pause = self.backoff * 2 ** attempt
                    time.sleep(max(pause, min(e.wait or 0.0, MAX_RETRY_AFTER)) + random.uniform(0, pause / 10))


def _chat_one(http: httpx2.Client, endpoint: Endpoint, messages: list[dict], key: str | None, attempts: int,
              backoff: float) -> Reply:
    start = time.monotonic()
    for attempt in range(attempts):
        try:
            text, finish = _post(http, endpoint, messages, key)
            return Reply(text, None, attempt + 1, finish, time.monotonic() - start)
        except Refused as e:
            return Reply(None, str(e), attempt + 1, None, time.monotonic() - start)
        except Retryable as e:
            if attempt + 1 == attempts:
                # every reason reads "kind: detail": "HTTP 500: body" -> "HTTP 500 after 3 attempts: body"
                head, _, tail = e.reason.partition(": ")
                return Reply(None, f"{head} after {attempts} attempts: {tail}", attempts, None, time.monotonic() - start)
            pause = backoff * 2 ** attempt
            time.sleep(max(pause, e.wait or 0.0) + random.uniform(0, pause / 10))  # jitter: no lockstep retries
    raise AssertionError("unreachable")


def chat_iter(endpoint: Endpoint, conversations: Iterable[tuple[K, list[dict]]], *, concurrency: int = 8,
              retries: int = 3, backoff: float = 0.5, stop: threading.Event | None = None) -> Iterator[tuple[K, Reply]]:
    """(key, reply) for each (key, messages), as the replies come. At most `concurrency` requests are in flight
    and at most twice that many conversations are taken from the iterable ahead of their replies, so memory does
    not grow with the number of items. `retries` is the number of attempts in all; attempt k+1 waits
    backoff * 2**k s (or the server's Retry-After, if longer) after a 429, 5xx, connection error or timeout;
    other failures are not retried. Setting `stop` sends nothing more; what is in flight still comes back."""
    attempts, width = max(1, int(retries)), max(1, int(concurrency))
    key = read_key(endpoint.api_key_env)
    source = iter(conversations)
    pending: dict[Future, K] = {}
    http, pool = client_for(endpoint, width), ThreadPoolExecutor(max_workers=width)
    finished = False

    def fill() -> None:
        while len(pending) < 2 * width and not (stop is not None and stop.is_set()):
            try:
                name, messages = next(source)
            except StopIteration:
                return
            pending[pool.submit(_chat_one, http, endpoint, messages, key, attempts, backoff)] = name

    try:
        fill()
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield pending.pop(future), future.result()
            fill()
        finished = True
    finally:
        # Ctrl-C or a caller that stopped reading: what is in flight is dropped, not waited for (a slow model's
        # answer can take minutes); closing the connections ends those requests at once
        pool.shutdown(wait=finished, cancel_futures=not finished)
        http.close()


def chat_many(endpoint: Endpoint, conversations: list[list[dict]], *, concurrency: int = 8, retries: int = 3,
              backoff: float = 0.5, on_done: Callable[[int, int], None] | None = None) -> list[Reply]:
    """Send each conversation (a list of chat messages) to `endpoint`; replies in input order (see chat_iter).
    `on_done(done, total)` is called from this thread after each conversation finishes."""
    total = len(conversations)
    replies: list[Reply | None] = [None] * total
    for done, (i, reply) in enumerate(chat_iter(endpoint, enumerate(conversations), concurrency=min(concurrency, max(total, 1)),
                                                retries=retries, backoff=backoff), 1):
        replies[i] = reply
        if on_done is not None:
            on_done(done, total)
    return replies  # type: ignore[return-value]


def served_models(endpoint: Endpoint) -> list[str]:
    """The names GET /models lists (raises Retryable or Refused, as a request does)."""
    url = endpoint.base_url.rstrip("/") + "/models"
    with client_for(endpoint, 1) as http:
        with _transport(endpoint):
            response = http.get(url, headers=headers(read_key(endpoint.api_key_env)))
        if response.status_code >= 400:
            raise Refused(f"HTTP {response.status_code}: {short(response.content[:4096])}")
        try:
            return sorted(str(m["id"]) for m in response.json()["data"])
        except (ValueError, LookupError, TypeError):
            raise Refused(f"GET /models answered without data[].id: {short(response.content)}") from None
