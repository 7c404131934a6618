"""A test double of an OpenAI-compatible server (stdlib only), for launch
tests that need a server that starts in milliseconds.

    python openai_double.py PORT [--health-after S] [--fail-completions]

It also answers `GET /get_server_info` the way an older SGLang does (and
`/server_info` with 404, as a server that predates it).
"""

import json
import os
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


print(f"double listening on {PORT} pid {os.getpid()}", flush=True)
ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
