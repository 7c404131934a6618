"""A test double of a server that misbehaves on cue (stdlib only, starts in
milliseconds), for the fault suite.

    python fault_double.py PORT [--gate FILE] [--fail-after N] [--hang-after N]
                                [--crash-after N] [--ignore-term]

`/health` answers 200 once it listens; with `--gate FILE` it does not
listen until FILE exists (a server that is slow to become ready: apply
waits on it). POST answers a completion (the readiness check); `GET /speed`
answers `{"tps": 50}` for the first N requests, then with `--fail-after N`
HTTP 500, with `--hang-after N` never (the response is held open: a hung
stream), with `--crash-after N` the process exits (code 9) instead.
`--ignore-term` makes SIGTERM do nothing (only SIGKILL stops it). With
`--pids FILE` it appends `PID PGID` to FILE when it starts, so a test can
check that its process group is gone.
"""

import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])


def _opt(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


GATE = _opt("--gate")
FAIL_AFTER = int(_opt("--fail-after", -1))
HANG_AFTER = int(_opt("--hang-after", -1))
CRASH_AFTER = int(_opt("--crash-after", -1))
PIDS = _opt("--pids")
served = 0
lock = threading.Lock()

if PIDS:
    with open(PIDS, "a") as f:
        f.write(f"{os.getpid()} {os.getpgid(0)}\n")
if "--ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        global served
        if self.path == "/health":
            return self._send(200, {})
        if self.path != "/speed":
            return self._send(404, {})
        with lock:
            served += 1
            n = served
        if CRASH_AFTER >= 0 and n > CRASH_AFTER:
            print("fault double: crashing on purpose", flush=True)
            os._exit(9)
        if FAIL_AFTER >= 0 and n > FAIL_AFTER:
            return self._send(500, {"error": "internal error (on purpose)"})
        if HANG_AFTER >= 0 and n > HANG_AFTER:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "1000")
            self.end_headers()
            self.wfile.write(b'{"tps": ')
            self.wfile.flush()
            time.sleep(3600)  # the rest never comes
        self._send(200, {"tps": 50.0})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self._send(200, {"choices": [{"text": " hi", "index": 0}]})


while GATE and not os.path.exists(GATE):
    time.sleep(0.05)
server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
server.daemon_threads = True
print(f"fault double listening on {PORT}", flush=True)
server.serve_forever()
