"""An OpenAI-compatible chat endpoint that plays both sides of simulated conversations after a fixed delay, for
bench/simulate.py.

    python bench/sim_endpoint.py [--port 0] [--delay 0.2] [--rounds 5]   # prints its /v1 URL first

POST /v1/chat/completions is answered `--delay` seconds after its body arrived, with one JSON answer (no stream),
by the model the request names:

  bench-sys   the system: "第N轮的回答：好的，我明白了。", N the user-role messages in its request (the round)
  bench-user  the simulated user: "第N轮：请再多讲一点。", N one more than the assistant-role messages in its
              request (a simulator's own earlier turns are its assistant side), until it has written --rounds
              messages, then "[END]"; a request whose last message holds "JSON" (the questionnaire: every
              shipped user template's `rating` asks for a JSON object) gets every dimension of its '"Name": lo..hi'
              lines at its lowest value and "goal": true

The round number in every text lets a check tell a turn stored twice or out of place. GET /v1/stats answers at once
with how many requests of each kind (sys, user, end, rating; other: anything else, such as a body cut short by a
client killed while sending it) have arrived, counted when the body is read:
a few counters under a lock, nothing that grows with the run. ThreadingHTTPServer on HTTP/1.1 (kept-alive
connections, a thread each, a listen backlog of 1024), so 64 clients in flight are served side by side.
"""
from __future__ import annotations

import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RANGE = re.compile(r'"([^"]+)": (-?\d+(?:\.\d+)?)\.\.(-?\d+(?:\.\d+)?)')   # a questionnaire line, as the template writes it
KINDS = ("sys", "user", "end", "rating", "other")


def user_turn(messages: list[dict], rounds: int) -> tuple[str, str]:
    """(kind, text) of the simulated user's answer to `messages`."""
    last = str(messages[-1].get("content", "")) if messages else ""
    if "JSON" in last:
        values = ", ".join(f'"{name}": {float(low):g}' for name, low, _ in RANGE.findall(last))
        return "rating", "{" + (values + ", " if values else "") + '"goal": true}'
    own = sum(m.get("role") == "assistant" for m in messages)
    if own >= rounds:
        return "end", "[END]"
    return "user", f"第{own + 1}轮：请再多讲一点。"


def system_turn(messages: list[dict]) -> str:
    return f"第{sum(m.get('role') == 'user' for m in messages)}轮的回答：好的，我明白了。"


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.seen = dict.fromkeys(KINDS, 0)

    def add(self, kind: str) -> None:
        with self.lock:
            self.seen[kind] += 1

    def snapshot(self) -> dict:
        with self.lock:
            return {**self.seen, "total": sum(self.seen.values())}


def completion(model: str, text: str) -> bytes:
    return json.dumps({"id": "c", "object": "chat.completion", "model": model,
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop"}]}, ensure_ascii=False).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # kept-alive connections, as a client pool expects

    def send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0].rstrip("/").endswith("/stats"):
            return self.send(200, json.dumps(self.server.counts.snapshot()).encode())
        if self.path.split("?", 1)[0].rstrip("/").endswith("/models"):
            return self.send(200, json.dumps({"object": "list", "data": [{"id": m, "object": "model"}
                                                                         for m in ("bench-sys", "bench-user")]}).encode())
        self.send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.split("?", 1)[0].rstrip("/").endswith("/chat/completions"):
            self.server.counts.add("other")
            return self.send(404, b'{"error": {"message": "not found"}}')
        try:
            request = json.loads(body or b"{}")
            model, messages = str(request.get("model")), list(request.get("messages") or [])
        except (ValueError, AttributeError, TypeError):
            self.server.counts.add("other")
            return self.send(400, b'{"error": {"message": "body is not a JSON chat request"}}')
        if model == "bench-sys":
            kind, text = "sys", system_turn(messages)
        elif model == "bench-user":
            kind, text = user_turn(messages, self.server.rounds)
        else:
            kind, text = "other", "?"
        self.server.counts.add(kind)
        time.sleep(self.server.delay)
        self.send(200, completion(model, text))

    def log_message(self, *args) -> None:
        pass   # a line per request would cost more than the answer


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024   # the default 5 drops connections opened at once by 64 clients (SYN retried 1 s later)

    def __init__(self, port: int, delay: float, rounds: int):
        super().__init__(("127.0.0.1", port), Handler)
        self.delay, self.rounds, self.counts = delay, rounds, Counts()

    def handle_error(self, request, client_address) -> None:
        pass   # a client killed mid-request (bench/simulate.py --kills) leaves a broken pipe: not the server's fault


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0: a free port (the URL is printed)")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds before each answer (default 0.2)")
    parser.add_argument("--rounds", type=int, default=5, help="messages the simulated user writes before [END]")
    args = parser.parse_args()
    server = Server(args.port, args.delay, args.rounds)
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
