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

Every request has two time limits: `timeout` seconds without a byte, and `deadline` seconds in all (by default
DEADLINE_FACTOR x timeout), so a server that drips a byte every few seconds, or streams empty chunks or comment
lines for ever, ends too; every line of a stream counts against the endpoint's token limit, not only those with text.
What the server says passes through core.untrusted once, where it becomes a reason or a reply: the key and anything
like a secret removed, control characters and lone surrogates out (a reply says what was removed in its note).
"""
from __future__ import annotations

import functools
import json
import random
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import closing, contextmanager
from dataclasses import dataclass, replace
from typing import Callable, TypeVar
from urllib.parse import urlsplit

import httpx2

from evalcore.core.keys import DEFAULT_KEY_ENV, read_key
from evalcore.core.untrusted import Cleaner, label, reason
from evalcore.core.urls import problem

MAX_RETRY_AFTER = 60.0      # seconds: the most a server's Retry-After may make us wait
MAX_BODY = 16 * 1024 * 1024  # bytes of one answer read at most: past it the answer is refused, not parsed
MAX_TEXT = 64 * 1024        # bytes of reply text kept: past it the text is cut (a reply, not a document)
DEADLINE_FACTOR = 3         # a request's whole time, at most, in timeouts (Endpoint.deadline unset)
SPARE_LINES = 64            # lines of a stream beyond max_tokens: the role and finish chunks, a server's keep-alives
OVERDUE = "timeout: the answer took more than"   # how a request past its deadline is worded
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
    deadline: float | None = None   # seconds one request may take in all; None: DEADLINE_FACTOR x timeout

    @property
    def total(self) -> float:
        """Seconds one request may take, from sending it to the last byte of its answer."""
        return self.deadline if self.deadline is not None else DEADLINE_FACTOR * self.timeout

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
    finish: str | None = None   # the server's finish_reason; "cut" when this client stopped reading; then, after
    #                             "; ", what was removed from the text (core.untrusted): "stop; 2 control characters removed"
    seconds: float = 0.0        # from the first attempt to the answer

    @property
    def flag(self) -> str | None:
        """Why an answer is not a plain one: 'empty', 'length' (cut by max_tokens), 'refused' (the server's
        content filter), 'cut' (past this client's token or byte limit); None for a plain answer or a failure."""
        if self.text is None:
            return None
        finish = (self.finish or "").split("; ")[0]
        if finish == "cut":
            return "cut"
        if finish == "content_filter":
            return "refused"
        if finish == "length":
            return "length"
        return "empty" if not self.text.strip() else None

    @property
    def cleaned(self) -> str | None:
        """What was removed from the text before it was kept (control characters, lone surrogates, the key)."""
        return (self.finish or "").partition("; ")[2] or None


def answered(text: str, finish: str | None, cleaner: Cleaner, attempts: int, seconds: float) -> Reply:
    """A reply as it is kept: its text made safe (core.untrusted), and what was removed said after its finish."""
    note = cleaner.note
    finish = None if finish is None else finish.replace(";", ",")   # a server's "; " would pass for a note
    return Reply(text, None, attempts, f"{finish or 'none'}; {note}" if note else finish, seconds)


def failed(why: str, key: str | None, attempts: int, seconds: float) -> Reply:
    """A failure as it is kept: the reason without the key or anything like a secret, one line, no control
    characters (a server's error body may echo the request's Authorization header)."""
    return Reply(None, reason(why, key, limit=400), attempts, None, seconds)


PLAIN = (("HTTP 401", "the server refused the key"), ("HTTP 403", "the server refused the key"),
         ("HTTP 404", "the server does not know the model asked for"), ("HTTP 429", "the server is busy"),
         ("HTTP 5", "the server failed"), ("HTTP", "the server refused the request"),
         ("timeout", "the server took too long"), ("connection error", "the server could not be reached"))


def plain(error: str | None) -> str:
    """A failure as one sentence that names no model, endpoint or server words (a blind chat shows this; the
    reason itself goes to whoever runs the evaluation)."""
    why = next((words for start, words in PLAIN if (error or "").startswith(start)), "its answer could not be read")
    return f"The model did not answer ({why})"


def availability(endpoint: Endpoint | None, missing: str) -> str | None:
    """None when the endpoint is usable as far as can be told without the network, else the reason
    (`missing`: the sentence for no endpoint at all)."""
    if endpoint is None:
        return missing
    # registration's check (core.urls.problem): a URL typed on the command line (--judge-base-url) may hold a pasted
    # key, so the reason says what is wrong with it and never repeats it
    why = problem(endpoint.base_url)
    if why:
        return why.removeprefix("the ")
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


def short(body: bytes | str, limit: int = 200, key: str | None = None) -> str:
    """A server's words in a reason: the key in use (before the cut, so no half of it is left), anything like a
    secret, control characters and lone surrogates out, one line (core.untrusted)."""
    return reason(body, key, limit)


def _retry_after(headers) -> float | None:
    try:
        return min(float(headers.get("Retry-After")), MAX_RETRY_AFTER)
    except (TypeError, ValueError):
        return None


def client_for(endpoint: Endpoint, connections: int = 8) -> httpx2.Client:
    """A pooled client for `connections` requests in flight. trust_env=False: a proxy set for the shell must
    not carry requests meant for a local server (NO_PROXY rarely lists 127.0.0.1's port)."""
    wait = min(endpoint.timeout, endpoint.total)   # one wait for a byte never outlasts the whole deadline
    timeout = httpx2.Timeout(wait, connect=min(wait, 10.0))
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
        raise Retryable(f"timeout: no answer within {min(endpoint.timeout, endpoint.total):g} s") from None
    except (httpx2.TransportError, OSError) as e:   # refused, reset, closed mid-answer, garbled status line
        raise Retryable(f"connection error: {str(e) or type(e).__name__}") from None


UNREADABLE = (AttributeError, TypeError, ValueError, LookupError, UnicodeError, RecursionError)
"""What reading an answer could still raise were a server's shape missed below: a last guard, so such an answer is
the item's reason (naming the error) and never a traceback that stops a run or a page."""


def _request(http: httpx2.Client, endpoint: Endpoint, messages: list[dict], key: str | None,
             cleaner: Cleaner) -> Iterator[str]:
    """One request: yields the reply's text as it arrives, made safe by `cleaner`, and returns (the whole text,
    finish_reason) as the generator's value; raises Retryable or Refused. Past `endpoint.total` seconds in all it
    raises Refused (OVERDUE): a retry would wait as long again."""
    try:
        body = json.dumps(endpoint.body(messages), ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError, UnicodeError) as e:
        raise Refused(f"messages are not JSON: {e}") from None
    url = endpoint.base_url.rstrip("/") + "/chat/completions"
    deadline = time.monotonic() + endpoint.total
    with _transport(endpoint), http.stream("POST", url, content=body, headers=headers(key)) as response:
        if response.status_code >= 400:
            why = f"HTTP {response.status_code}: {short(_read(response, 4096, endpoint, deadline), key=key)}"
            if response.status_code in (408, 429) or response.status_code >= 500:
                raise Retryable(why, _retry_after(response.headers))
            raise Refused(why)
        if "text/event-stream" in response.headers.get("content-type", ""):
            return (yield from _pieces(response, endpoint, cleaner, deadline))
        text, finish = _answer(_read(response, MAX_BODY, endpoint, deadline), endpoint, key)
        text = cleaner.whole(text)
        if text:
            yield text
        return text, None if finish is None else label(finish, key)


def _post(http: httpx2.Client, endpoint: Endpoint, messages: list[dict], key: str | None,
          cleaner: Cleaner) -> tuple[str, str | None]:
    """One request, its answer read whole: (text, finish_reason); raises Retryable or Refused."""
    pieces = _request(http, endpoint, messages, key, cleaner)
    while True:
        try:
            next(pieces)
        except StopIteration as done:
            return done.value


def _in_time(endpoint: Endpoint, deadline: float) -> None:
    if time.monotonic() > deadline:
        raise Refused(f"{OVERDUE} {endpoint.total:g} s in all: not read further")


def _read(response: httpx2.Response, limit: int, endpoint: Endpoint, deadline: float) -> bytes:
    """The body, or Refused once it passes `limit` bytes or the deadline (an answer that never ends, or drips, is
    not waited for)."""
    chunks, size = [], 0
    for chunk in response.iter_raw():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            if limit < MAX_BODY:   # an error body: its start says enough
                break
            raise Refused(f"an answer of more than {limit:,} bytes: not read further")
        if time.monotonic() > deadline:
            if limit < MAX_BODY:
                break
            _in_time(endpoint, deadline)
    return b"".join(chunks)


def _cut(text: str, endpoint: Endpoint) -> tuple[str, bool]:
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= endpoint.max_bytes:
        return text, False
    return data[:endpoint.max_bytes].decode("utf-8", "ignore"), True


def _not_protocol(what: str, raw: bytes, why: str, key: str | None) -> Refused:
    return Refused(f"{what} ({why}): {short(raw, key=key)}")


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true or false", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _choices(raw: bytes, what: str, key: str | None) -> list:
    """The `choices` list of one JSON answer or streamed chunk (it may be empty), else Refused."""
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        raise _not_protocol(what, raw, "not JSON", key) from None
    choices = parsed.get("choices") if isinstance(parsed, dict) else None
    if not isinstance(choices, list):
        raise _not_protocol(what, raw, f"choices is {_kind(choices)}", key)
    return choices


def _answer(raw: bytes, endpoint: Endpoint, key: str | None) -> tuple[str, str | None]:
    """One JSON answer: (text, finish_reason), each of the type the protocol says, else Refused."""
    what = "reply without choices[0].message.content"
    choices = _choices(raw, what, key)
    if not choices:
        raise _not_protocol(what, raw, "choices is an empty list", key)
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise _not_protocol(what, raw, f"choices[0]{'.message' * isinstance(choice, dict)} is "
                                       f"{_kind(message if isinstance(choice, dict) else choice)}", key)
    content, finish = message.get("content"), choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise _not_protocol(what, raw, f"finish_reason is {_kind(finish)}", key)
    if content is None and finish == "content_filter":
        content = ""
    if not isinstance(content, str):
        raise _not_protocol(what, raw, f"content is {_kind(content)}", key)
    text, cut = _cut(content, endpoint)
    return text, "cut" if cut else finish


def _chunk(data: bytes, finish: str | None, key: str | None) -> tuple[str, str | None]:
    """One streamed chunk's (text, finish_reason so far), each of the type the protocol says, else Refused."""
    what = "a streamed chunk that is not the protocol's"
    choices = _choices(data, what, key)
    if not choices:   # the usage chunk (stream_options.include_usage) has none
        return "", finish
    choice = choices[0]
    if not isinstance(choice, dict):
        raise _not_protocol(what, data, f"choices[0] is {_kind(choice)}", key)
    delta = choice.get("delta")
    if delta is not None and not isinstance(delta, dict):
        raise _not_protocol(what, data, f"choices[0].delta is {_kind(delta)}", key)
    content = (delta or {}).get("content")
    if content is not None and not isinstance(content, str):
        raise _not_protocol(what, data, f"choices[0].delta.content is {_kind(content)}", key)
    why = choice.get("finish_reason")
    if why is not None and not isinstance(why, str):
        raise _not_protocol(what, data, f"choices[0].finish_reason is {_kind(why)}", key)
    return content or "", why or finish


def _pieces(response: httpx2.Response, endpoint: Endpoint, cleaner: Cleaner, deadline: float) -> Iterator[str]:
    """Yield the text of server-sent chunks as they arrive, made safe by `cleaner`, until [DONE], the end of the
    answer, the deadline, or this client's limits: `max_tokens` + SPARE_LINES lines (every line counts, so a server
    that streams empty chunks or comments for ever is cut too), `max_bytes` of text, MAX_BODY bytes read. Returns
    (the whole text, finish_reason) as the generator's value; a limit reached before any text is Refused."""
    pieces, size, lines, read, finish, buffer = [], 0, 0, 0, None, b""
    limit = endpoint.max_tokens + SPARE_LINES

    def over(what: str) -> tuple[str, str]:
        if not pieces:
            raise Refused(f"{what} without any text: not read further")
        return "".join(pieces) + cleaner.end(), "cut"   # what was held back is no key: the rest never came

    for raw in response.iter_raw():
        _in_time(endpoint, deadline)
        buffer += raw
        read += len(raw)
        if len(buffer) > MAX_BODY:
            raise Refused(f"a streamed line of more than {MAX_BODY:,} bytes: not read further")
        if read > MAX_BODY:
            return over(f"a stream of more than {MAX_BODY:,} bytes")
        *found, buffer = buffer.split(b"\n")
        for line in found:
            line = line.strip()
            if not line:   # the blank line that ends each event
                continue
            lines += 1
            if lines > limit:
                return over(f"{lines - 1:,} streamed lines")
            if not line.startswith(b"data:"):   # a comment (": ping"), an event's name or id: counted, not read
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            piece, finish = _chunk(data, finish, cleaner.key)
            shown = cleaner.feed(piece) if piece else ""
            size += len(shown.encode("utf-8"))
            if size > endpoint.max_bytes:   # what fits of this piece, then the reply is cut
                room = endpoint.max_bytes - (size - len(shown.encode("utf-8")))
                shown = shown.encode("utf-8")[:room].decode("utf-8", "ignore")
                if shown:
                    pieces.append(shown)
                    yield shown
                return "".join(pieces), "cut"
            if shown:
                pieces.append(shown)
                yield shown
        else:
            continue
        break   # [DONE]
    else:
        if finish is None:
            raise Retryable("connection error: the stream ended before its last chunk")
    tail = cleaner.end()
    if tail:
        pieces.append(tail)
        yield tail
    return "".join(pieces), None if finish is None else label(finish, cleaner.key)


class Stream:
    """One streamed answer for a person waiting on it: iterate for the text piece by piece as it arrives; once the
    iteration ends, `reply` holds the whole answer or why there is none. A failure before the first piece is retried
    as chat_many retries; after it, the partial text is dropped and the reply is the failure (a retry would show the
    same words twice), so the caller offers its own retry. Nothing raises out of the iteration, and nothing reads on
    once the caller stops iterating (the connection is closed) or the endpoint's deadline has passed."""

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
                shown, cleaner = False, Cleaner(key)
                try:
                    with closing(_request(http, self.endpoint, self.messages, key, cleaner)) as pieces:
                        while True:
                            try:
                                piece = next(pieces)
                            except StopIteration as done:
                                text, finish = done.value
                                break
                            if not shown:
                                self.first_piece_at, shown = time.monotonic(), True
                            yield piece
                    self.reply = answered(text, finish, cleaner, attempt + 1, time.monotonic() - start)
                    return
                except Refused as e:
                    self.reply = failed(str(e), key, attempt + 1, time.monotonic() - start)
                    return
                except Retryable as e:
                    if shown or attempt + 1 == self.retries:
                        head, _, tail = e.reason.partition(": ")
                        self.reply = failed(f"{head} after {attempt + 1} attempts: {tail}" if not shown else
                                            f"{head} in the middle of the reply: {tail}", key, attempt + 1,
                                            time.monotonic() - start)
                        return
                    pause = self.backoff * 2 ** attempt
                    time.sleep(max(pause, min(e.wait or 0.0, MAX_RETRY_AFTER)) + random.uniform(0, pause / 10))
                except UNREADABLE as e:
                    self.reply = failed(f"an answer this client could not read ({type(e).__name__}: {e})", key,
                                        attempt + 1, time.monotonic() - start)
                    return


def _chat_one(http: httpx2.Client, endpoint: Endpoint, messages: list[dict], key: str | None, attempts: int,
              backoff: float) -> Reply:
    start = time.monotonic()
    for attempt in range(attempts):
        cleaner = Cleaner(key)
        try:
            text, finish = _post(http, endpoint, messages, key, cleaner)
            return answered(text, finish, cleaner, attempt + 1, time.monotonic() - start)
        except Refused as e:
            return failed(str(e), key, attempt + 1, time.monotonic() - start)
        except Retryable as e:
            if attempt + 1 == attempts:
                # every reason reads "kind: detail": "HTTP 500: body" -> "HTTP 500 after 3 attempts: body"
                head, _, tail = e.reason.partition(": ")
                return failed(f"{head} after {attempts} attempts: {tail}", key, attempts, time.monotonic() - start)
            pause = backoff * 2 ** attempt
            time.sleep(max(pause, e.wait or 0.0) + random.uniform(0, pause / 10))  # jitter: no lockstep retries
        except UNREADABLE as e:
            return failed(f"an answer this client could not read ({type(e).__name__}: {e})", key, attempt + 1,
                          time.monotonic() - start)
    raise AssertionError("unreachable")

class Caller:
    """One endpoint asked from many threads, one request at a time each (a simulated conversation's turns): a pooled
    client for `connections` requests in flight, retried as chat_iter retries. The key is read when the caller is
    made (a run's start, as chat_iter reads it) and is never part of what it prints or returns."""

    def __init__(self, endpoint: Endpoint, connections: int = 8, *, retries: int = 3, backoff: float = 0.5):
        self.endpoint, self.retries, self.backoff = endpoint, max(1, int(retries)), backoff
        self._key = read_key(endpoint.api_key_env)
        self.http = client_for(endpoint, max(1, int(connections)))

    def ask(self, messages: list[dict]) -> Reply:
        return _chat_one(self.http, self.endpoint, messages, self._key, self.retries, self.backoff)

    def close(self) -> None:
        self.http.close()


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
    """The names GET /models lists, made safe to print (raises Retryable or Refused, as a request does, its reason
    without the key)."""
    url = endpoint.base_url.rstrip("/") + "/models"
    key = read_key(endpoint.api_key_env)
    deadline = time.monotonic() + endpoint.total
    try:
        with client_for(endpoint, 1) as http, _transport(endpoint), \
                http.stream("GET", url, headers=headers(key)) as response:
            if response.status_code >= 400:
                raise Refused(f"HTTP {response.status_code}: {short(_read(response, 4096, endpoint, deadline), key=key)}")
            raw = _read(response, MAX_BODY, endpoint, deadline)
        try:
            listed = json.loads(raw)["data"]
            return sorted(label(m["id"], key, 200) for m in listed)
        except UNREADABLE:
            raise Refused(f"GET /models answered without data[].id: {short(raw, key=key)}") from None
    except Refused as e:
        raise Refused(reason(str(e), key, 400)) from None
    except Retryable as e:
        raise Retryable(reason(e.reason, key, 400), e.wait) from None
