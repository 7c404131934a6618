"""TEST DOUBLE core: the one stdlib HTTP server (http.server, a thread per
connection, HTTP/1.1 keep-alive, TCP_NODELAY) that the tests' doubles of an
OpenAI-compatible serving engine are made of. Not an LLM. Each double in
tests/ is a small script that parses its own command line and builds a
`Double` with options:

- **timing model** (`timing`): a function of the `Request` (its number,
  the load in flight at its arrival, its body) giving (TTFT, ITL) in
  seconds; None: the double does not stream, every POST answers `plain`
  (bytes, or a function of the request's body giving the answer).
  POST /v1/completions and /v1/chat/completions then stream
  `max_tokens` tokens (default 16) as OpenAI SSE chunks, each SSE event
  its own HTTP/1.1 chunk: the first TTFT after the request's body was
  read, then one every ITL on an absolute schedule (token k at read + TTFT
  + k * ITL, so a late wake-up does not shift the tokens after it), then a
  usage chunk (`prompt_tokens`: a number, or a function of the request's
  body) and `data: [DONE]`;
- **endpoints served** (`get`, `post`): path -> a function giving
  (status, body, content type); any other GET answers `fallback`; any
  other POST streams (or, with `plain` set, answers `plain` to a request
  that did not ask to stream);
- **engine look-alike**: what a double's `get` serves (`models_list` is
  vLLM's and everyone's /v1/models; `metrics_text` Prometheus text);
- **who may ask** (`guard`): a function of the method, path and headers
  called on every request before anything else, giving an answer (a 401
  for a missing key) or None to go on; it may note the request;
- **failure modes**: an endpoint answers an error status as any answer;
  it raises `Hang(head, length)` to send its headers (a body of `length`
  bytes declared) and `head`, then never the rest (a hung response); it
  ends the process itself for a crash;
- **bounds**: `lifetime_s` ends the process after that long whatever
  happens, `pids` appends `PID PGID` to a file (a test checks the group is
  gone); the port (0: the system's choice; `port` once it listens) is
  printed as `PORT N` (or the double's own `announce`, a format or a
  function of the port), with the double's own `lines` after it;
  `protocol`: HTTP/1.1 (keep-alive) unless a double says HTTP/1.0;
  `quiet=False` keeps http.server's line per request on stderr.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = tuple[int, bytes, str]  # (status, body, content type)
JSON = "application/json"
PROMETHEUS = "text/plain; version=0.0.4"


@dataclass(frozen=True)
class Request:
    """A streamed request as the timing model sees it."""

    path: str
    body: dict
    number: int  # 1 for the first streamed request the server got
    load: int  # streamed requests in flight when it arrived, itself counted
    tokens: int  # how many tokens it streams


class Hang(Exception):
    """Raised by an endpoint: a 200 of `length` bytes declared, `head` sent, the rest never."""

    def __init__(self, head: bytes, length: int, hold_s: float = 3600.0) -> None:
        super().__init__("hang")
        self.head, self.length, self.hold_s = head, length, hold_s


def event(obj) -> bytes:
    """One SSE event as its own HTTP/1.1 chunk."""
    data = b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


_DONE = b"data: [DONE]\n\n"
END = b"%x\r\n%s\r\n0\r\n\r\n" % (len(_DONE), _DONE)


def models_list(model: str = "m") -> Callable[[], Answer]:
    return lambda: (200, json.dumps({"object": "list", "data": [{"id": model, "object": "model"}]}).encode(), JSON)


def metrics_text(text: Callable[[], str]) -> Callable[[], Answer]:
    return lambda: (200, text().encode(), PROMETHEUS)


class Double:
    def __init__(self, *, timing: Callable[[Request], tuple[float, float]] | None,
                 get: Mapping[str, Callable[[], Answer]] | None = None,
                 post: Mapping[str, Callable[[], Answer]] | None = None,
                 fallback: tuple[int, bytes] = (404, b"{}"), plain: bytes | Callable[[dict], Answer] | None = None,
                 prompt_tokens: int | Callable[[dict], int] = 1, lifetime_s: float | None = None, pids: str | None = None,
                 backlog: int = 256, protocol: str = "HTTP/1.1",
                 guard: Callable[[str, str, Mapping[str, str]], Answer | None] | None = None,
                 quiet: bool = True) -> None:
        self.timing = timing
        self.get = dict(get or {})
        self.post = dict(post or {})
        self.fallback = fallback
        self.plain = plain
        self.prompt_tokens = prompt_tokens
        self.lifetime_s = lifetime_s
        self.pids = pids
        self.backlog = backlog
        self.protocol = protocol
        self.guard = guard
        self.quiet = quiet
        self.lock = threading.Lock()
        self.requests = 0  # streamed requests so far
        self.port = 0  # the port it listens on, once it does
        self.inflight = 0

    def _arrive(self, path: str, body: dict) -> Request:
        n = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        with self.lock:
            self.requests += 1
            self.inflight += 1
            return Request(path, body, self.requests, self.inflight, n)

    def _leave(self) -> None:
        with self.lock:
            self.inflight -= 1

    def handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = double.protocol

            def setup(self):
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args):
                if not double.quiet:
                    super().log_message(*args)

            def _answer(self, code: int, body: bytes, ctype: str = JSON) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _refused(self) -> bool:
                refusal = double.guard(self.command, self.path, self.headers) if double.guard else None
                if refusal is not None:
                    self._answer(*refusal)
                return refusal is not None

            def do_GET(self):
                if self._refused():
                    return
                serve = double.get.get(self.path)
                try:
                    self._answer(*(serve() if serve else double.fallback))
                except Hang as hang:
                    self.send_response(200)
                    self.send_header("Content-Type", JSON)
                    self.send_header("Content-Length", str(hang.length))
                    self.end_headers()
                    self.wfile.write(hang.head)
                    self.wfile.flush()
                    time.sleep(hang.hold_s)  # the rest never comes

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                start = time.perf_counter()
                if self._refused():
                    return
                if self.path in double.post:
                    return self._answer(*double.post[self.path]())
                if double.timing is None:
                    if callable(double.plain):
                        return self._answer(*double.plain(json.loads(raw or b"{}")))
                    return self._answer(200, double.plain or b"{}")
                body = json.loads(raw or b"{}")
                if double.plain is not None and not body.get("stream"):
                    return self._answer(200, double.plain)
                request = double._arrive(self.path, body)
                try:
                    self._stream(request, start, *double.timing(request))
                finally:
                    double._leave()

            def _stream(self, request: Request, start: float, ttft: float, itl: float) -> None:
                chat = request.path.endswith("/chat/completions")
                n = request.tokens
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
                    self.wfile.write(event({"id": "x", "object": "chunk", "choices": [choice]}))
                prompt = double.prompt_tokens(request.body) if callable(double.prompt_tokens) else double.prompt_tokens
                usage = {"prompt_tokens": prompt, "completion_tokens": n, "total_tokens": prompt + n}
                self.wfile.write(event({"id": "x", "object": "chunk", "choices": [], "usage": usage}) + END)

        return Handler

    def serve(self, port: int = 0, *, lines: Sequence[str] = (),
              announce: str | Callable[[int], str] | None = "PORT {port}",
              on_listen: Callable[[], None] | None = None) -> None:
        """Listen on 127.0.0.1:`port`, call `on_listen`, say `announce` (and
        `lines`; None: nothing), serve until killed."""
        if self.pids:
            with open(self.pids, "a") as f:
                f.write(f"{os.getpid()} {os.getpgid(0)}\n")
        if self.lifetime_s is not None:
            threading.Timer(self.lifetime_s, lambda: os._exit(0)).start()

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = self.backlog

        server = Server(("127.0.0.1", port), self.handler())
        self.port = server.server_address[1]
        if on_listen is not None:
            on_listen()
        if announce is not None:
            print(announce(self.port) if callable(announce) else announce.format(port=self.port), flush=True)
        for line in lines:
            print(line, flush=True)
        server.serve_forever(poll_interval=0.05)
