"""TEST DOUBLE: an OpenAI-compatible streaming server (stdlib only) whose
speed differs from launch to launch, for measuring how many launches a
verdict costs and how often it errs (benchmarks/bench_decisions.py) through
`specdsl apply` and its built-in load generator. Not an LLM.

    python decision_double.py PORT --life FILE [--speed 1.0] [--ttft-ms 40] [--itl-ms 20]
        [--launch-sd SD] [--seed N] [--cold-requests N --cold-pause S --cold-slow F]
        [--drift FRACTION_PER_S --epoch T] [--noise CV] [--noise-window S]

POST /v1/completions and /v1/chat/completions stream `max_tokens` tokens
(default 16) as OpenAI SSE chunks: the first after TTFT, then one every ITL
(an absolute schedule), then a usage chunk and `data: [DONE]`. The timing
of a request is the base timing divided by its speed factor

    speed * launch factor * (1 + drift * (t - epoch)) * noise

- `--speed`: the arm's true speed (1.06: 6% faster than 1.0);
- `--launch-sd`: the launch factor exp(SD z), drawn once per launch from a
  generator seeded by `--seed` and the number of launches the life file has
  recorded before this one (counted and appended under a lock, so two
  servers started together draw different factors; the same apply on every
  machine draws the same factors);
- `--drift`: the machine's linear drift per second of wall time from
  `--epoch` (the same for every server of one apply);
- `--noise`: run noise, a factor exp(CV z) drawn per request, or with
  `--noise-window S` once per S seconds of wall time since the epoch (shared
  by the requests of that window, so it does not average out within a run);
- the cold start: the first `--cold-requests` requests after the server
  starts wait `--cold-pause` seconds before their first token and stream
  `--cold-slow` times slower (a server that compiles or allocates on its
  first batch: one warm-up request does not take it, a full wave does).

GET /health 200, /v1/models lists the model, /metrics answers
`double:requests_total`, /timings the launch factor and the (pause, TTFT,
ITL) given to each request so far, in seconds (what a test checks instead
of a clock). The life file gets `start NAME T FACTOR` when the
server listens (FACTOR its launch factor) and `stop NAME T` on SIGTERM.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import random
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = argparse.Namespace()
LOCK = threading.Lock()
STATE = {"requests": 0, "factor": 1.0, "rng": random.Random(0), "window": None, "timings": []}


def _parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--life", required=True)
    ap.add_argument("--speed", type=float, default=1.0)
    ap.add_argument("--ttft-ms", type=float, default=40.0)
    ap.add_argument("--itl-ms", type=float, default=20.0)
    ap.add_argument("--launch-sd", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cold-requests", type=int, default=0)
    ap.add_argument("--cold-pause", type=float, default=0.0)
    ap.add_argument("--cold-slow", type=float, default=1.0)
    ap.add_argument("--drift", type=float, default=0.0)
    ap.add_argument("--epoch", type=float, default=0.0)
    ap.add_argument("--noise", type=float, default=0.0)
    ap.add_argument("--noise-window", type=float, default=0.0)
    return ap.parse_args(argv)


def _name() -> str:
    return f"{ARGS.speed:g}@{ARGS.port}"


def begin_life() -> float:
    """Draw this launch's factor and record the start, under an exclusive
    lock on the life file: the draw's index is the number of launches
    recorded before."""
    with open(ARGS.life, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        before = sum(1 for line in f if line.startswith("start "))
        rng = random.Random(ARGS.seed * 1_000_003 + before)
        factor = math.exp(ARGS.launch_sd * rng.gauss(0.0, 1.0)) if ARGS.launch_sd else 1.0
        STATE["rng"] = random.Random(ARGS.seed * 1_000_003 + before + 500_009)  # this launch's run noise
        f.write(f"start {_name()} {time.time():.6f} {factor:.6f}\n")
        f.flush()
        fcntl.flock(f, fcntl.LOCK_UN)
    return factor


def _noise(now: float) -> float:
    if not ARGS.noise:
        return 1.0
    with LOCK:
        if ARGS.noise_window > 0:
            window = int((now - ARGS.epoch) // ARGS.noise_window)
            if STATE["window"] is None or STATE["window"][0] != window:
                STATE["window"] = (window, math.exp(ARGS.noise * STATE["rng"].gauss(0.0, 1.0)))
            return STATE["window"][1]
        return math.exp(ARGS.noise * STATE["rng"].gauss(0.0, 1.0))


def timing() -> tuple[float, float, float]:
    """(pause, ttft, itl) in seconds for the next request."""
    now = time.time()
    with LOCK:
        STATE["requests"] += 1
        cold = STATE["requests"] <= ARGS.cold_requests
    speed = ARGS.speed * STATE["factor"] * (1 + ARGS.drift * (now - ARGS.epoch)) * _noise(now)
    slow = ARGS.cold_slow if cold else 1.0
    out = (ARGS.cold_pause if cold else 0.0), slow * ARGS.ttft_ms / 1000 / speed, slow * ARGS.itl_ms / 1000 / speed
    with LOCK:
        STATE["timings"].append(out)
    return out


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
        elif self.path == "/timings":
            with LOCK:
                body = json.dumps({"factor": STATE["factor"], "timings": STATE["timings"]}).encode()
            self._plain(200, body)
        elif self.path == "/metrics":
            self._plain(200, f"double:requests_total {STATE['requests']}\n".encode(), "text/plain; version=0.0.4")
        else:
            self._plain(404, b"{}")

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        start = time.perf_counter()
        chat = self.path.endswith("/chat/completions")
        n = int(req.get("max_tokens") or 16)
        pause, ttft, itl = timing()
        prompt = req.get("prompt") or req.get("messages") or ""
        ptoks = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i in range(n):
            delay = start + pause + ttft + i * itl - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            choice = {"index": 0, "finish_reason": "length" if i == n - 1 else None}
            choice.update({"delta": {"content": f" t{i}"}} if chat else {"text": f" t{i}"})
            self.wfile.write(_event({"id": "x", "object": "chunk", "choices": [choice]}))
        usage = {"prompt_tokens": ptoks, "completion_tokens": n, "total_tokens": ptoks + n}
        done = b"data: [DONE]\n\n"
        self.wfile.write(_event({"id": "x", "choices": [], "usage": usage}) + b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))


def main(argv: list[str]) -> int:
    global ARGS
    ARGS = _parse(argv)
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 256
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    ARGS.port = server.server_address[1]  # port 0: the one the system chose
    STATE["factor"] = begin_life()

    def stop(*_):
        with open(ARGS.life, "a") as f:
            f.write(f"stop {_name()} {time.time():.6f}\n")
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    print(f"PORT {ARGS.port} launch factor {STATE['factor']:.6f}", flush=True)
    server.serve_forever(poll_interval=0.05)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
