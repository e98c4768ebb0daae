"""A tiny OpenAI-compatible chat server for the judge tests: answers decided by markers in the messages.

    with JudgeServer(delay=0.05) as srv:
        chat_many(Endpoint(srv.url, "m"), ...)  # srv.url is "http://127.0.0.1:PORT/v1"

Markers, looked for in every message's content, first match wins:
  FAIL500   -> HTTP 500 always          FLAKY  -> HTTP 500 the first time these exact messages come, then OK
  FAIL400   -> HTTP 400 always          NOCONTENT -> 200 without choices[0].message.content
  MALFORMED -> 200, no rating or verdict in the text
  pairwise prompts (they ask for [[A]], [[B]] and [[C]]): "[[A]]", or "[[B]]" when assistant B's answer
    holds WIN (so a test can build position bias); with JudgeServer(prefer="longer"): the longer answer
    ("[[C]]" when both are as long), with prefer="first": always "[[A]]"
  SCORE@<judge model>=<n> -> "Rating: [[n]]" when the request names that judge model (two judges differ)
  with JudgeServer(rate="length"), a rating with no marker comes from the answer's length (a toy judge that
    likes long answers, for benchmarks on real data): G-Eval 0-2, MT-Bench 1-10
  SCORE=<n> -> "Rating: [[n]]"          otherwise "Rating: [[3]]"
"""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCORE = re.compile(r"SCORE=(\d+(?:\.\d+)?)")
SCORE_OF = re.compile(r"SCORE@([\w.-]+)=(\d+(?:\.\d+)?)")
# Where assistant B's final answer sits in the single-turn and multi-turn pairwise layouts.
B_ANSWER = (("[The Start of Assistant B's Answer]", "[The End of Assistant B's Answer]"),
            ("### Assistant B:", "<|The End of Assistant B's Conversation with User|>"))
A_ANSWER = (("[The Start of Assistant A's Answer]", "[The End of Assistant A's Answer]"),
            ("### Assistant A:", "<|The End of Assistant A's Conversation with User|>"))


def answer_a(text: str) -> str:
    return answer_b(text, A_ANSWER)


def answer_b(text: str, where=B_ANSWER) -> str:
    for start, end in where:
        i = text.rfind(start)
        if i >= 0:
            j = text.find(end, i)
            return text[i + len(start):j if j >= 0 else len(text)]
    return ""


def length_rating(text: str) -> int:
    """The toy judge's rating: longer answers score higher (MT-Bench 1-10, else G-Eval's 0-2)."""
    if "[The Start of Assistant's Answer]" in text:
        answer = text.split("[The Start of Assistant's Answer]", 1)[1].split("[The End of Assistant's Answer]")[0]
        return 1 + min(9, len(answer.strip()) // 15)
    for start in ("待评估的回复：\n\n", "Response to evaluate:\n\n"):
        if start in text:
            answer = text.split(start, 1)[1].split("\n\n")[0].strip()
            cjk = any("\u4e00" <= ch <= "\u9fff" for ch in answer)
            low, high = (8, 20) if cjk else (40, 100)
            return 0 if len(answer) < low else 1 if len(answer) < high else 2
    return 1


class JudgeServer:
    def __init__(self, delay: float = 0.0, prefer: str | None = None, rate: str | None = None):
        self.delay, self.prefer, self.rate = delay, prefer, rate
        self.requests = 0  # POSTs to /chat/completions
        self.in_flight = 0
        self.max_in_flight = 0
        self.bodies: list[dict] = []  # every request body, in arrival order
        self.headers: list[dict] = []  # ... and its headers
        self._seen: set[str] = set()  # FLAKY: message lists already answered with a 500
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> JudgeServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, {"error": f"no route {self.path}"})
                with owner._lock:
                    owner.requests += 1
                    owner.in_flight += 1
                    owner.max_in_flight = max(owner.max_in_flight, owner.in_flight)
                try:
                    if owner.delay:
                        time.sleep(owner.delay)  # hold the request so concurrency is observable
                    body = json.loads(raw)
                    with owner._lock:
                        owner.bodies.append(body)
                        owner.headers.append(dict(self.headers))
                    status, payload = owner.answer(body)
                finally:
                    with owner._lock:
                        owner.in_flight -= 1
                self._send(status, payload)

            def _send(self, status: int, payload: dict):
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # keep pytest output clean
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()

    def answer(self, body: dict) -> tuple[int, dict]:
        messages = body.get("messages") or []
        text = "\n".join(str(m.get("content", "")) for m in messages)
        if "FAIL500" in text:
            return 500, {"error": "FAIL500 marker"}
        if "FAIL400" in text:
            return 400, {"error": "FAIL400 marker"}
        if "FLAKY" in text:
            key = json.dumps(messages, sort_keys=True, ensure_ascii=False)
            with self._lock:
                first = key not in self._seen
                self._seen.add(key)
            if first:
                return 500, {"error": "FLAKY marker, first time"}
        if "NOCONTENT" in text:
            return 200, {"id": "x", "object": "chat.completion", "choices": [], "model": body.get("model")}
        if "MALFORMED" in text:
            content = "I cannot decide about this one."
        elif all(token in text for token in ("[[A]]", "[[B]]", "[[C]]")):
            if self.prefer == "first":
                content = "Both are fine. [[A]]"
            elif self.prefer == "longer":
                a, b = len(answer_a(text).strip()), len(answer_b(text).strip())
                content = "Both are fine. " + ("[[A]]" if a > b else "[[B]]" if b > a else "[[C]]")
            else:
                content = "Both are fine. [[B]]" if "WIN" in answer_b(text) else "Both are fine. [[A]]"
        elif own := [v for m, v in SCORE_OF.findall(text) if m == body.get("model")]:
            content = f"Short explanation. Rating: [[{own[0]}]]"
        elif match := SCORE.search(text):
            content = f"Short explanation. Rating: [[{match.group(1)}]]"
        elif self.rate == "length":
            content = f"Short explanation. Rating: [[{length_rating(text)}]]"
        else:
            content = "Short explanation. Rating: [[3]]"
        with self._lock:
            n = self.requests
        return 200, {"id": f"chatcmpl-{n}", "object": "chat.completion", "model": body.get("model"),
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                  "finish_reason": "stop"}]}
