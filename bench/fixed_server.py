"""An OpenAI-compatible chat endpoint that answers every request after a fixed delay, for bench/generate.py and
bench/chat.py.

    python bench/fixed_server.py [--port 0] [--delay 0.2] [--tokens N --token-gap S]   # prints its /v1 URL first

asyncio, one process, HTTP/1.1 keep-alive with Content-Length request bodies and no thread per request, so
hundreds of requests in flight cost it little: what bench/generate.py measures is the client. POST
/v1/chat/completions is answered `--delay` seconds after its body arrived with a short fixed reply: one JSON
answer, or, when the body says "stream": true, server-sent events in a chunked body on the same kept-alive
connection (as vLLM and SGLang answer). GET /v1/models lists the one model, at once.

With --tokens N a streamed answer is N tokens sent --token-gap seconds apart, as a model decodes, after the
delay. The first token's text is the server's clock when it was sent, "⟨1764201234.123456⟩" (time.time()), so
a client on the same machine can tell how long that token took to reach whoever shows it.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import time
from functools import lru_cache

REPLY = "好的，我明白了。"
MODELS = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
TOKENS = "好的我明白了这个问题很有意思"   # the plain tokens after the first, one character each, in turn
DONE = b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"   # the last event, then the chunked body's end
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


@lru_cache(maxsize=64)
def answer(model: str, stream: bool) -> bytes:
    """The whole HTTP response for a chat request (cached: the reply never changes, so it is built once)."""
    if not stream:
        data = json.dumps({"id": "c", "object": "chat.completion", "model": model,
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY},
                                        "finish_reason": "stop"}]}, ensure_ascii=False).encode()
        return response(b"application/json", data)
    pieces = [chunk(model, REPLY[i:i + 3]) for i in range(0, len(REPLY), 3)]
    return HEAD + b"".join(pieces) + chunk(model, None) + DONE


def chunk(model: str, content: str | None) -> bytes:
    """One server-sent event in one HTTP chunk: a piece of content, or (None) the finish."""
    delta = {"content": content} if content is not None else {}
    event = {"id": "c", "object": "chat.completion.chunk", "model": model,
             "choices": [{"index": 0, "delta": delta, "finish_reason": None if content is not None else "stop"}]}
    line = b"data: " + json.dumps(event, ensure_ascii=False).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(line), line)


def stamp(now: float) -> str:
    return f"⟨{now:.6f}⟩"


async def stream_tokens(writer: asyncio.StreamWriter, model: str, tokens: int, gap: float) -> None:
    """A streamed answer of `tokens` tokens `gap` seconds apart, the first one the send time's stamp."""
    writer.write(HEAD + chunk(model, stamp(time.time())))
    await writer.drain()
    for i in range(1, tokens):
        await asyncio.sleep(gap)
        writer.write(chunk(model, TOKENS[i % len(TOKENS)]))
        await writer.drain()
    writer.write(chunk(model, None) + DONE)
    await writer.drain()


def response(kind: bytes, data: bytes, status: bytes = b"200 OK") -> bytes:
    return (b"HTTP/1.1 " + status + b"\r\nContent-Type: " + kind + b"\r\nContent-Length: " + str(len(data)).encode()
            + b"\r\n\r\n" + data)


def reply_to(method: str, path: str, body: bytes) -> tuple[bytes, bool]:
    """(the response, whether it waits the delay) for one request (a streamed answer of --tokens tokens is
    written by stream_tokens instead)."""
    path = path.split("?", 1)[0].rstrip("/")
    if method == "GET" and path.endswith("/models"):
        return response(b"application/json", MODELS), False
    if method != "POST" or not path.endswith("/chat/completions"):
        return response(b"application/json", b'{"error": {"message": "not found"}}', b"404 Not Found"), False
    try:
        parsed = json.loads(body or b"{}")
        return answer(str(parsed.get("model", "m")), bool(parsed.get("stream"))), True
    except (ValueError, AttributeError):
        return response(b"application/json", b'{"error": {"message": "body is not JSON"}}', b"400 Bad Request"), False


def wants_tokens(method: str, path: str, body: bytes) -> str | None:
    """The model named by a streamed chat request, else None."""
    if method != "POST" or not path.split("?", 1)[0].rstrip("/").endswith("/chat/completions"):
        return None
    try:
        parsed = json.loads(body or b"{}")
        return str(parsed.get("model", "m")) if parsed.get("stream") else None
    except (ValueError, AttributeError):
        return None


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float, tokens: int = 0,
                 gap: float = 0.0) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
            body = await reader.readexactly(int(headers.get("content-length", 0)))
            model = wants_tokens(method, path, body) if tokens > 0 else None
            if model is not None:
                await asyncio.sleep(delay)
                await stream_tokens(writer, model, tokens, gap)
                continue
            data, waits = reply_to(method, path, body)
            if waits:
                await asyncio.sleep(delay)
            writer.write(data)
            await writer.drain()
            if headers.get("connection", "").lower() == "close":
                break
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
        pass   # the client went away or sent what is not HTTP: this connection ends, the server goes on
    finally:
        writer.close()


async def serve(port: int, delay: float, tokens: int = 0, gap: float = 0.0) -> None:
    server = await asyncio.start_server(lambda r, w: handle(r, w, delay, tokens, gap), "127.0.0.1", port,
                                        backlog=1024)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0: a free port (the URL is printed)")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds before each answer (default 0.2)")
    parser.add_argument("--tokens", type=int, default=0,
                        help="a streamed answer is this many tokens, the first one stamped (default 0: a short reply)")
    parser.add_argument("--token-gap", type=float, default=0.02, help="seconds between tokens (default 0.02)")
    args = parser.parse_args()
    try:
        asyncio.run(serve(args.port, args.delay, args.tokens, args.token_gap))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
