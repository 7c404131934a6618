"""TEST DOUBLE: an OpenAI-compatible streaming server (stdlib only) whose
latency grows with load in a known way, so that a search for the highest
concurrency meeting an SLO has one right answer. Not an LLM.

    python knee_server.py --port PORT --knee K [--fast-ms 2] [--slow-ms 120]
                          [--itl-ms 1] [--pids FILE]

A request that arrives while at most K requests are in flight (itself
counted) gets its first token after `--fast-ms`; one that arrives while
more are in flight waits `--slow-ms`. Then `max_tokens` tokens, one every
`--itl-ms`, a usage chunk and `data: [DONE]`. Closed-loop concurrency c <= K
is all fast; at c > K every request sent while c are in flight is slow.
The process exits after 300 s whatever happens (bounded in time), and
`--pids FILE` appends `PID PGID` so a test can check its group is gone.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_lock = threading.Lock()
_state = {"inflight": 0}
ARGS = argparse.Namespace()


def _event(obj) -> bytes:
    data = b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def _plain(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._plain(200, b'{"status":"ok"}')

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        t0 = time.perf_counter()
        if self.path in ("/flush_cache", "/reset_prefix_cache"):
            return self._plain(200, b"")
        req = json.loads(body or b"{}")
        if not req.get("stream"):
            return self._plain(200, json.dumps({"choices": [{"text": " t", "index": 0}]}).encode())
        with _lock:
            _state["inflight"] += 1
            load = _state["inflight"]
        try:
            chat = "chat" in self.path
            n = int(req.get("max_tokens") or req.get("max_completion_tokens") or 16)
            ttft = (ARGS.fast_ms if load <= ARGS.knee else ARGS.slow_ms) / 1000.0
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(n):
                due = t0 + ttft + i * ARGS.itl_ms / 1000.0
                wait = due - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                choice = {"index": 0, "finish_reason": "length" if i == n - 1 else None}
                choice["delta" if chat else "text"] = {"content": f" t{i}"} if chat else f" t{i}"
                self.wfile.write(_event({"id": "x", "object": "chunk", "choices": [choice]}))
                self.wfile.flush()
            usage = {"prompt_tokens": 8, "completion_tokens": n, "total_tokens": 8 + n}
            self.wfile.write(_event({"id": "x", "object": "chunk", "choices": [], "usage": usage}))
            self.wfile.write(b"%x\r\n%s\r\n" % (len(b"data: [DONE]\n\n"), b"data: [DONE]\n\n"))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        finally:
            with _lock:
                _state["inflight"] -= 1


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--knee", type=int, required=True)
    p.add_argument("--fast-ms", type=float, default=2.0)
    p.add_argument("--slow-ms", type=float, default=120.0)
    p.add_argument("--itl-ms", type=float, default=1.0)
    p.add_argument("--pids")
    p.parse_args(namespace=ARGS)
    if ARGS.pids:
        with open(ARGS.pids, "a") as f:
            f.write(f"{os.getpid()} {os.getpgid(0)}\n")
    threading.Timer(300.0, lambda: os._exit(0)).start()
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
