"""TEST DOUBLE: an OpenAI-compatible streaming server of known timing
(stdlib only: http.server, one thread per connection), for measuring the
benchmark client's fidelity. Not an LLM.

    python tests/bench/timed_server.py [--port 0] [--ttft-ms 40] [--itl-ms 8]
    # prints "PORT <n>" when ready

POST /v1/completions and /v1/chat/completions stream `max_tokens` tokens
(default 16) as OpenAI SSE chunks, each SSE event its own HTTP/1.1 chunk
(chunked transfer encoding, keep-alive, TCP_NODELAY): the first token
`ttft_ms` after the request's body has been read, then one token every
`itl_ms`, on an absolute schedule (token k at read + ttft + k * itl, so a
late wake-up does not shift the tokens after it); then a usage chunk and
`data: [DONE]`. Every token chunk carries `double_t`: [when the request
body was read, when this chunk was written] in this machine's
`time.perf_counter()` clock (CLOCK_MONOTONIC on Linux: the same clock in
every process), so a client's own delays can be taken apart. A request's `model` of the form `timed:TTFT_MS:ITL_MS`
overrides the server's timing for that request; `timed:TTFT_MS:ITL_MS:STOP`
also ends it after STOP tokens, as a server that stops at an end of
sequence although an exact length was asked for.

GET /metrics answers Prometheus text with counters of what was served and
the clients' turnaround on each keep-alive connection
(`double:turnaround_seconds`: from the end of one response to the reading
of the next request on it);
POST /flush_cache and /reset_prefix_cache answer 200 and count the resets
(in /metrics as `double:cache_resets_total`).

Faults on cue, for the validity tests: `--fail-percent P` answers HTTP 500
to P% of the streamed requests, spread evenly and counted over the
server's life (the n-th fails when floor(n P / 100) grows: at 1% the
100th, 200th, ...; at 50% every second; at 100% all); the readiness
check (not streamed) always succeeds. `--pids FILE` appends `PID PGID`
to FILE when it starts, so a test can check that its group is gone.
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

_lock = threading.Lock()
_counts = {"requests": 0, "prompt_tokens": 0, "generation_tokens": 0, "cache_resets": 0,
           "turnaround_s": 0.0, "turnarounds": 0}
TIMING = {"ttft": 0.040, "itl": 0.008}
FAULTS = {"fail_percent": 0.0, "streamed": 0}


def _event(obj) -> bytes:
    data = b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


def _token(chat: bool, i: int, finish: str | None) -> dict:
    choice = {"index": 0, "finish_reason": finish}
    if chat:
        choice["delta"] = {"content": f" t{i}"}
    else:
        choice["text"] = f" t{i}"
    return {"id": "x", "object": "chunk", "choices": [choice]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):  # quiet
        pass

    def _plain(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/metrics":
            with _lock:
                c = dict(_counts)
            text = (
                "# TYPE double:requests_total counter\n"
                f"double:requests_total {c['requests']}\n"
                "# TYPE double:prompt_tokens_total counter\n"
                f"double:prompt_tokens_total {c['prompt_tokens']}\n"
                "# TYPE double:generation_tokens_total counter\n"
                f"double:generation_tokens_total {c['generation_tokens']}\n"
                "# TYPE double:cache_resets_total counter\n"
                f"double:cache_resets_total {c['cache_resets']}\n"
                "# TYPE double:turnaround_seconds summary\n"
                f"double:turnaround_seconds_sum {c['turnaround_s']}\n"
                f"double:turnaround_seconds_count {c['turnarounds']}\n"
            )
            self._plain(200, text.encode(), "text/plain; version=0.0.4")
        else:
            self._plain(200, b'{"status":"ok"}')

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        t_read = time.perf_counter()
        if self.path in ("/flush_cache", "/reset_prefix_cache"):
            with _lock:
                _counts["cache_resets"] += 1
            return self._plain(200, b"")
        req = json.loads(body or b"{}")
        if req.get("stream") and FAULTS["fail_percent"]:
            with _lock:
                FAULTS["streamed"] += 1
                n, p = FAULTS["streamed"], FAULTS["fail_percent"]
            if int(n * p // 100) > int((n - 1) * p // 100):
                return self._plain(500, b'{"error": "internal error (injected)"}')
        chat = self.path.endswith("/chat/completions")
        n = int(req.get("max_tokens") or 16)
        ttft, itl = TIMING["ttft"], TIMING["itl"]
        model = str(req.get("model", ""))
        if model.startswith("timed:"):
            fields = model.split(":")
            ttft, itl = (float(v) / 1000 for v in fields[1:3])
            if len(fields) > 3:  # timed:TTFT:ITL:STOP: an end of sequence after STOP tokens
                n = min(n, int(fields[3]))
        prompt = req.get("prompt") or req.get("messages") or ""
        ptoks = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        write = self.wfile.write
        for i in range(n):
            delay = t_read + ttft + i * itl - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            event = _token(chat, i, "length" if i == n - 1 else None)
            event["double_t"] = [t_read, time.perf_counter()]  # when the body was read, when this chunk is written
            write(_event(event))
        usage = {"prompt_tokens": ptoks, "completion_tokens": n, "total_tokens": ptoks + n}
        done = b"data: [DONE]\n\n"
        with _lock:  # counted before the last bytes go: a client that has read the whole response finds it counted
            _counts["requests"] += 1
            _counts["prompt_tokens"] += ptoks
            _counts["generation_tokens"] += n
        write(_event({"id": "x", "choices": [], "usage": usage}) + b"%x\r\n%s\r\n" % (len(done), done) + b"0\r\n\r\n")
        last_end, self._end = getattr(self, "_end", None), time.perf_counter()
        if last_end is not None:  # the client's turnaround on this connection: its last response's end to this read
            with _lock:
                _counts["turnaround_s"] += t_read - last_end
                _counts["turnarounds"] += 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ttft-ms", type=float, default=40.0)
    parser.add_argument("--itl-ms", type=float, default=8.0)
    parser.add_argument("--fail-percent", type=float, default=0.0)
    parser.add_argument("--pids", default=None)
    args = parser.parse_args()
    TIMING.update(ttft=args.ttft_ms / 1000, itl=args.itl_ms / 1000)
    FAULTS["fail_percent"] = args.fail_percent
    if args.pids:
        with open(args.pids, "a") as f:
            f.write(f"{os.getpid()} {os.getpgid(0)}\n")
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 256
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
