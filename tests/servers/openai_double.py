"""A test double of an OpenAI-compatible server (stdlib only), for launch
tests that need a server that starts in milliseconds.

    python openai_double.py PORT [--health-after S] [--fail-completions] [--hang-when-taken]

With `--hang-when-taken`, a port it cannot bind makes it do what SGLang
0.5.17 did on an H200 (tests/servers/data/sglang-0.5.17-port-in-use.log):
log uvicorn's bind error and the start of its shutdown, then hang (with a
child, as SGLang's scheduler) instead of exiting.

It also answers `GET /get_server_info` the way an older SGLang does (and
`/server_info` with 404, as a server that predates it).
"""

import errno
import json
import os
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
HEALTH_AFTER = float(sys.argv[sys.argv.index("--health-after") + 1]) if "--health-after" in sys.argv else 0.0
FAIL = "--fail-completions" in sys.argv
STARTED = time.monotonic()


class Handler(BaseHTTPRequestHandler):
    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            ready = time.monotonic() - STARTED >= HEALTH_AFTER
            self._send(200 if ready else 503, {"ready": ready})
        elif self.path == "/get_server_info":
            self._send(200, {"attention_backend": "flashinfer", "tp_size": 1, "version": "0.5.9",
                             "internal_states": [{"avg_spec_accept_length": 3.1}], "limits": {"max_total_num_tokens": 1000}})
        else:
            self._send(404, {})

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        request = json.loads(self.rfile.read(length) or b"{}")
        if FAIL:
            self._send(500, {"error": "completions are broken"})
        else:
            print(f"completion request for {request.get('model')}", flush=True)
            self._send(200, {"choices": [{"text": " hi", "index": 0}], "model": request.get("model")})


def serve():
    try:
        server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    except OSError as exc:
        if "--hang-when-taken" not in sys.argv or exc.errno != errno.EADDRINUSE:
            raise
        # asyncio's wording, as uvicorn logs it
        stamp = time.strftime("[%Y-%m-%d %H:%M:%S]")
        print(f"{stamp} ERROR:    [Errno {exc.errno}] error while attempting to bind on address "
              f"{('127.0.0.1', PORT)!r}: {exc.strerror.lower()}", flush=True)
        print(f"{stamp} INFO:     Waiting for application shutdown.", flush=True)
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        time.sleep(600)
        return
    print(f"double listening on {PORT} pid {os.getpid()}", flush=True)
    server.serve_forever()


serve()
