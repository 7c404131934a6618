"""A test double of an OpenAI-compatible server (stdlib only) for walk tests:
starts in milliseconds, reports a fixed speed, and appends its life to a file.

    python walk_double.py PORT --speed TPS --life FILE [--fail-start]
                          [--drift FRACTION_PER_S --epoch T] [--noise CV --seed N]
                          [--cold FACTOR] [--gpus-file FILE] [--work N]

`GET /speed` answers `{"tps": TPS}`, or with `--drift` a speed that drifts
linearly from wall time `--epoch` (the same machine drift for every server
of a test), and with `--noise` a seeded Gaussian noise of that CV (reproducible: seeded by
`--seed` and the lives already in the life file, never by the port); with `--cold` the
first answer of the first life of this speed in the life file is FACTOR times the speed
(a warm-up the benchmark's warm-up did not cover); with `--work N` each answer first
does N million steps of CPU work and its speed is scaled by how fast they went
(REF_S_PER_MSTEP x N / the seconds they took: a CPU-bound server, which a burst of other
work on the machine slows as it would a real one); `/health` 200; POST answers a
completion. The life file gets `start NAME T` when it listens and
`stop NAME T` when it is terminated (SIGTERM), so a test can check that no
two servers were up at once. With `--gpus-file` it also appends
`start NAME T CUDA_VISIBLE_DEVICES PID` and `stop NAME T` there (the
nvidia-smi double reads it to report the server's process on its GPUs).
The server is tests/http_double.py's; this file is its speed model.
"""

import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from http_double import JSON, Double  # noqa: E402  (tests/http_double.py)

PORT = int(sys.argv[1])
SPEED = float(sys.argv[sys.argv.index("--speed") + 1])
LIFE = sys.argv[sys.argv.index("--life") + 1]
NAME = f"{SPEED:g}@{PORT}"


def _opt(name, default):
    return float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


DRIFT, EPOCH, NOISE = _opt("--drift", 0.0), _opt("--epoch", 0.0), _opt("--noise", 0.0)
COLD = _opt("--cold", 1.0)
WORK = _opt("--work", 0.0)
REF_S_PER_MSTEP = 0.05  # a nominal pace; both arms of a comparison share it, so ratios do not depend on it


def _launches_before() -> int:
    try:
        with open(LIFE) as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


# Seeded by the test and by how many lives the file had when this one began
# (not by the port, which is random): the same walk draws the same noise on
# every machine, and each relaunch of a server draws new values.
RNG = __import__("random").Random(int(_opt("--seed", 0)) * 100003 + _launches_before())


def _first_life() -> bool:
    try:
        with open(LIFE) as f:
            return not any(line.split()[1].split("@")[0] == f"{SPEED:g}" for line in f if line.startswith("start"))
    except FileNotFoundError:
        return True


COLD_LEFT = [1 if COLD != 1.0 and _first_life() else 0]


def _work_factor() -> float:
    began, x = time.perf_counter(), 0
    for _ in range(int(WORK * 1_000_000)):
        x += 1
    return REF_S_PER_MSTEP * WORK / max(1e-6, time.perf_counter() - began)


def speed() -> float:
    pace = _work_factor() if WORK else 1.0
    value = pace * (SPEED * (1 + DRIFT * (time.time() - EPOCH)) if DRIFT else SPEED)
    if COLD_LEFT[0]:
        COLD_LEFT[0] = 0
        value *= COLD
    return value * (1 + NOISE * RNG.gauss(0, 1)) if NOISE else value


GPUS_FILE = sys.argv[sys.argv.index("--gpus-file") + 1] if "--gpus-file" in sys.argv else None


def note(what: str) -> None:
    now = time.time()
    with open(LIFE, "a") as f:
        f.write(f"{what} {NAME} {now:.6f}\n")
    if GPUS_FILE:
        extra = f" {os.environ.get('CUDA_VISIBLE_DEVICES', '-') or '-'} {os.getpid()}" if what == "start" else ""
        with open(GPUS_FILE, "a") as f:
            f.write(f"{what} {NAME} {now:.6f}{extra}\n")


if "--fail-start" in sys.argv:
    print("cannot load the model: the weights are missing", flush=True)
    sys.exit(3)


def stop(*_):
    note("stop")
    os._exit(0)


signal.signal(signal.SIGTERM, stop)
# not a streaming server: every POST answers one completion, HTTP/1.0 (a connection a request)
double = Double(timing=None, plain=json.dumps({"choices": [{"text": " hi", "index": 0}]}).encode(), protocol="HTTP/1.0",
                get={"/health": lambda: (200, b"{}", JSON), "/speed": lambda: (200, json.dumps({"tps": speed()}).encode(), JSON)})
double.serve(PORT, announce="walk double listening on {port}", on_listen=lambda: note("start"))
