"""bench/generate.py and its endpoint bench/fixed_server.py run: a short run prints a share of the ideal, and the
endpoint answers after its delay, keeping the connection for the next request (the figures themselves are the
benchmark's, in docs/development/benchmarks.md, not a test's)."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

import pytest

from support import ROOT

REPLY = "好的，我明白了。"   # bench/fixed_server.py's answer


@pytest.mark.parametrize("stream", [False, True])
def test_a_short_generation_benchmark_runs(tmp_path, stream):
    out = tmp_path / "gen.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "generate.py"), "--concurrency", "8", "--requests", "200",
                           "--delay", "0.02", "--json", str(out)] + (["--stream"] if stream else []),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    [row] = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert row["requests"] == 200 and row["failed"] == 0
    # 200 requests at 8 in flight, 20 ms each: at best 200 / (8 / 0.02) = 0.5 s
    assert row["ideal_req_per_s"] == 8 / 0.02
    assert 0 < row["share_of_ideal"] <= 1.05 and row["wall_s"] >= 200 / 400 * 0.95
    assert row["cpu_ms_per_request"] > 0 and row["server_cpu_ms_per_request"] >= 0
    assert 0 < row["rss_10"] and 0 < row["rss_100"] <= row["peak_rss_mb"] + 1
    assert f"{row['share_of_ideal']:6.3f}" in done.stdout


def http(sock: socket.socket, method: str, path: str, body: dict | None = None) -> tuple[str, dict, bytes]:
    """One request on `sock`, its answer read whole: (status line, headers, body with chunks joined)."""
    data = json.dumps(body).encode() if body is not None else b""
    sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
    reader = sock.makefile("rb")
    status = reader.readline().decode().strip()
    headers = {}
    while (h := reader.readline()) != b"\r\n":
        k, _, v = h.decode().partition(":")
        headers[k.lower()] = v.strip()
    if "content-length" in headers:
        return status, headers, reader.read(int(headers["content-length"]))
    chunks = []
    while size := int(reader.readline().strip(), 16):
        chunks.append(reader.read(size))
        reader.readline()
    reader.readline()
    return status, headers, b"".join(chunks)


def test_the_endpoint_answers_after_its_delay_on_one_kept_connection():
    server = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fixed_server.py"), "--delay", "0.1"],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = urlsplit(server.stdout.readline().strip())
        assert url.path == "/v1"
        with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
            status, _, body = http(sock, "GET", "/v1/models")
            assert status == "HTTP/1.1 200 OK" and json.loads(body)["data"][0]["id"] == "m"
            start = time.perf_counter()
            status, headers, body = http(sock, "POST", "/v1/chat/completions", {"model": "q", "messages": []})
            assert time.perf_counter() - start >= 0.1
            answer = json.loads(body)
            assert answer["model"] == "q" and answer["choices"][0]["message"]["content"] == REPLY
            # streamed, on the same connection: events in a chunked body, then [DONE]
            start = time.perf_counter()
            status, headers, body = http(sock, "POST", "/v1/chat/completions",
                                         {"model": "q", "messages": [], "stream": True})
            assert time.perf_counter() - start >= 0.1
            assert headers["content-type"] == "text/event-stream" and headers["transfer-encoding"] == "chunked"
            events = [e.removeprefix("data: ") for e in body.decode().split("\n\n") if e]
            assert events[-1] == "[DONE]"
            chunks = [json.loads(e)["choices"][0] for e in events[:-1]]
            assert "".join(c["delta"].get("content", "") for c in chunks) == REPLY
            assert chunks[-1]["finish_reason"] == "stop"
            status, _, _ = http(sock, "POST", "/v1/nothing", {})
            assert status == "HTTP/1.1 404 Not Found"
    finally:
        server.terminate()
        server.wait(timeout=10)
