"""TEST DOUBLE: an OpenAI-compatible streaming server (stdlib only) that
warms up like a GPU server does: slow, and compiling, for its first
requests, then steady. For the steady warm-up (specdsl.bench.steady)
through the load generator and through `specdsl apply`. Not an LLM.

    python settling_server.py [--port 0] [--ttft-ms 5] [--itl-ms 2]
        [--settle-after N] [--cold-slow F] [--slowdown X] [--jit-at K ...] [--jit-every M]
    # prints "PORT <n>" when ready

POST /v1/completions and /v1/chat/completions stream `max_tokens` tokens
(default 16) as OpenAI SSE chunks, the first after TTFT, then one every
ITL (an absolute schedule), then a usage chunk and `data: [DONE]`.

- `--settle-after N`: the first N requests stream slower, the first
  `--cold-slow` times, each later one less so, down to the steady speed
  at the N-th (as kernels compile and caches fill); the first prints a line as vLLM's kernel JIT
  monitor does (`... Triton kernel JIT compilation during inference:
  double_kernel. ...`) on stdout (the server's log, under apply);
- `--slowdown X`: every request is slower than the one before by the
  factor 1 + X (a server that never settles);
- `--jit-at K`: the K-th request (from 1) prints such a line too, late:
  a compile inside a measured run; `--jit-every M`: every M-th request
  does (a server that keeps compiling).

GET /health 200, /v1/models lists the model, /metrics answers
`double:requests_total`. At start it prints `TRITON_CACHE_DIR=...` (what
its launcher pointed Triton's cache at, `-` when nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = argparse.Namespace()
LOCK = threading.Lock()
STATE = {"requests": 0}
JIT_LINE = ("(EngineCore pid={pid}) WARNING {when} [jit_monitor.py:135] Triton kernel JIT compilation during inference: "
            "double_kernel. This causes a latency spike; consider extending warmup to cover this shape/config.")


def _parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ttft-ms", type=float, default=5.0)
    ap.add_argument("--itl-ms", type=float, default=2.0)
    ap.add_argument("--settle-after", type=int, default=0)
    ap.add_argument("--cold-slow", type=float, default=3.0)
    ap.add_argument("--slowdown", type=float, default=0.0)
    ap.add_argument("--jit-at", type=int, action="append", default=[])
    ap.add_argument("--jit-every", type=int, default=0)
    return ap.parse_args(argv)


def _jit_line() -> None:
    print(JIT_LINE.format(pid=os.getpid(), when=time.strftime("%m-%d %H:%M:%S")), flush=True)


def timing() -> tuple[float, float]:
    """(ttft, itl) in seconds for the next request; prints its log line."""
    with LOCK:
        STATE["requests"] += 1
        n = STATE["requests"]
    cold = n <= ARGS.settle_after
    if (cold and n == 1) or n in ARGS.jit_at or (ARGS.jit_every and n % ARGS.jit_every == 0):
        _jit_line()
    slow = (1 + (ARGS.cold_slow - 1) * (1 - (n - 1) / ARGS.settle_after) if cold else 1.0) * (1 + ARGS.slowdown) ** n
    return slow * ARGS.ttft_ms / 1000, slow * ARGS.itl_ms / 1000


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

    def _plain(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            self._plain(200, b"{}")
        elif self.path == "/v1/models":
            self._plain(200, json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode())
        elif self.path == "/metrics":
            self._plain(200, f"double:requests_total {STATE['requests']}\n".encode(), "text/plain; version=0.0.4")
        else:
            self._plain(404, b"{}")

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        start = time.perf_counter()
        chat = self.path.endswith("/chat/completions")
        n = int(req.get("max_tokens") or 16)
        ttft, itl = timing()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i in range(n):
            delay = start + ttft + i * itl - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            choice = {"index": 0, "finish_reason": "length" if i == n - 1 else None}
            choice.update({"delta": {"content": f" t{i}"}} if chat else {"text": f" t{i}"})
            self.wfile.write(_event({"id": "x", "object": "chunk", "choices": [choice]}))
        usage = {"prompt_tokens": 1, "completion_tokens": n, "total_tokens": 1 + n}
        done = b"data: [DONE]\n\n"
        self.wfile.write(_event({"id": "x", "choices": [], "usage": usage}) + b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))


def main(argv: list[str]) -> int:
    global ARGS
    ARGS = _parse(argv)
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 256
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    print(f"TRITON_CACHE_DIR={os.environ.get('TRITON_CACHE_DIR', '-')}", flush=True)
    server.serve_forever(poll_interval=0.05)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
