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
check that its process group is gone. The server is tests/http_double.py's;
this file is its faults.
"""

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from http_double import JSON, Double, Hang  # noqa: E402  (tests/http_double.py)

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


def speed():
    global served
    with lock:
        served += 1
        n = served
    if CRASH_AFTER >= 0 and n > CRASH_AFTER:
        print("fault double: crashing on purpose", flush=True)
        os._exit(9)
    if FAIL_AFTER >= 0 and n > FAIL_AFTER:
        return 500, b'{"error": "internal error (on purpose)"}', JSON
    if HANG_AFTER >= 0 and n > HANG_AFTER:
        raise Hang(b'{"tps": ', 1000)
    return 200, b'{"tps": 50.0}', JSON


while GATE and not os.path.exists(GATE):
    time.sleep(0.05)
# not a streaming server: every POST answers one completion, HTTP/1.0 (a connection a request)
Double(timing=None, plain=json.dumps({"choices": [{"text": " hi", "index": 0}]}).encode(), protocol="HTTP/1.0",
       get={"/health": lambda: (200, b"{}", JSON), "/speed": speed}).serve(PORT, announce="fault double listening on {port}")
