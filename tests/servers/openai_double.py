"""A test double of an OpenAI-compatible server (stdlib only), for launch
tests that need a server that starts in milliseconds.

    python openai_double.py PORT [--health-after S] [--fail-completions] [--hang-when-taken]

With `--hang-when-taken`, a port it cannot bind makes it do what SGLang
0.5.17 did on an H200 (tests/servers/data/sglang-0.5.17-port-in-use.log):
log uvicorn's bind error and the start of its shutdown, then hang (with a
child, as SGLang's scheduler) instead of exiting.

It also answers `GET /get_server_info` the way an older SGLang does (and
`/server_info` with 404, as a server that predates it). The server is
tests/http_double.py's; this file is what it answers.
"""

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from http_double import JSON, Double  # noqa: E402  (tests/http_double.py)

PORT = int(sys.argv[1])
HEALTH_AFTER = float(sys.argv[sys.argv.index("--health-after") + 1]) if "--health-after" in sys.argv else 0.0
FAIL = "--fail-completions" in sys.argv
STARTED = time.monotonic()


def health():
    ready = time.monotonic() - STARTED >= HEALTH_AFTER
    return (200 if ready else 503), json.dumps({"ready": ready}).encode(), JSON


SERVER_INFO = {"attention_backend": "flashinfer", "tp_size": 1, "version": "0.5.9",
               "internal_states": [{"avg_spec_accept_length": 3.1}], "limits": {"max_total_num_tokens": 1000}}


def complete(request: dict):
    """Every POST is a completion: HTTP 500 with --fail-completions, else
    one answer naming the model asked for (said on stdout)."""
    if FAIL:
        return 500, json.dumps({"error": "completions are broken"}).encode(), JSON
    print(f"completion request for {request.get('model')}", flush=True)
    return 200, json.dumps({"choices": [{"text": " hi", "index": 0}], "model": request.get("model")}).encode(), JSON


# not a streaming server, HTTP/1.0 (a connection a request); it logs every request line as http.server does
DOUBLE = Double(timing=None, plain=complete, protocol="HTTP/1.0", backlog=5, quiet=False,
                get={"/health": health, "/get_server_info": lambda: (200, json.dumps(SERVER_INFO).encode(), JSON)})


def serve():
    try:
        DOUBLE.serve(PORT, announce=f"double listening on {{port}} pid {os.getpid()}")
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


serve()
