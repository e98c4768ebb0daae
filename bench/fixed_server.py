"""An OpenAI-compatible chat endpoint that answers every request after a fixed delay, for bench/generate.py.

    python bench/fixed_server.py [--port 0] [--delay 0.2]    # prints its /v1 URL on the first line

asyncio, one process, HTTP/1.1 keep-alive with Content-Length bodies and no thread per request, so hundreds of
requests in flight cost it little: what bench/generate.py measures is the client. A body with "stream": true is
answered as server-sent events (a few chunks, then [DONE], then the connection closes)."""
from __future__ import annotations

import argparse
import asyncio
import json

REPLY = "好的，我明白了。"


def answer(body: dict) -> tuple[bytes, bytes]:
    model = body.get("model", "m")
    if body.get("stream"):
        chunks = [{"id": "c", "object": "chat.completion.chunk", "model": model,
                   "choices": [{"index": 0, "delta": {"content": REPLY[i:i + 3]}, "finish_reason": None}]}
                  for i in range(0, len(REPLY), 3)]
        chunks.append({"id": "c", "object": "chat.completion.chunk", "model": model,
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        data = b"".join(b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\n\n" for c in chunks)
        return data + b"data: [DONE]\n\n", b"text/event-stream"
    data = {"id": "c", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}]}
    return json.dumps(data, ensure_ascii=False).encode(), b"application/json"


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
            body = await reader.readexactly(int(headers.get("content-length", 0)))
            if method == "GET" and path.rstrip("/").endswith("/models"):
                data, kind, stream = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode(), \
                    b"application/json", False
            else:
                await asyncio.sleep(delay)
                parsed = json.loads(body or b"{}")
                data, kind = answer(parsed)
                stream = bool(parsed.get("stream"))
            if stream:   # no length: the stream ends with the connection
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: " + kind + b"\r\nConnection: close\r\n\r\n" + data)
                await writer.drain()
                break
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: " + kind + b"\r\nContent-Length: "
                         + str(len(data)).encode() + b"\r\n\r\n" + data)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def serve(port: int, delay: float) -> None:
    server = await asyncio.start_server(lambda r, w: handle(r, w, delay), "127.0.0.1", port, backlog=1024)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds before each answer (default 0.2)")
    args = parser.parse_args()
    try:
        asyncio.run(serve(args.port, args.delay))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
