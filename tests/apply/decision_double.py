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
The server is tests/http_double.py's; this file is its timing model.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from http_double import JSON, Double, Request, metrics_text, models_list  # noqa: E402  (tests/http_double.py)

ARGS = argparse.Namespace()
LOCK = threading.Lock()
STATE = {"factor": 1.0, "rng": random.Random(0), "window": None, "timings": []}


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


def timing(request: Request) -> tuple[float, float]:
    """(pause + ttft, itl) in seconds for the request; (pause, ttft, itl)
    is kept for /timings."""
    now = time.time()
    cold = request.number <= ARGS.cold_requests
    speed = ARGS.speed * STATE["factor"] * (1 + ARGS.drift * (now - ARGS.epoch)) * _noise(now)
    slow = ARGS.cold_slow if cold else 1.0
    out = (ARGS.cold_pause if cold else 0.0), slow * ARGS.ttft_ms / 1000 / speed, slow * ARGS.itl_ms / 1000 / speed
    with LOCK:
        STATE["timings"].append(out)
    return out[0] + out[1], out[2]


def prompt_tokens(body: dict) -> int:
    prompt = body.get("prompt") or body.get("messages") or ""
    return len(prompt) if isinstance(prompt, list) else len(str(prompt).split())


def _timings():
    with LOCK:
        return 200, json.dumps({"factor": STATE["factor"], "timings": STATE["timings"]}).encode(), JSON


def main(argv: list[str]) -> int:
    global ARGS
    ARGS = _parse(argv)
    double = Double(timing=timing, prompt_tokens=prompt_tokens,
                    get={"/health": lambda: (200, b"{}", JSON), "/v1/models": models_list("m"), "/timings": _timings})
    double.get["/metrics"] = metrics_text(lambda: f"double:requests_total {double.requests}\n")

    def listening():
        ARGS.port = double.port  # port 0: the one the system chose
        STATE["factor"] = begin_life()
        signal.signal(signal.SIGTERM, stop)

    def stop(*_):
        with open(ARGS.life, "a") as f:
            f.write(f"stop {_name()} {time.time():.6f}\n")
        os._exit(0)

    double.serve(ARGS.port, on_listen=listening, announce=lambda port: f"PORT {port} launch factor {STATE['factor']:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
