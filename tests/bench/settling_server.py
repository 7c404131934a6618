"""TEST DOUBLE: an OpenAI-compatible streaming server (stdlib only) that
warms up like a GPU server does: slow, and compiling, for its first
requests, then steady. For the steady warm-up (specdsl.bench.steady)
through the load generator and through `specdsl apply`. Not an LLM.

    python settling_server.py [--port 0] [--ttft-ms 5] [--itl-ms 2]
        [--settle-after N] [--cold-slow F] [--slowdown X] [--jit-at K ...] [--jit-every M]
    # prints "PORT <n>" when ready

POST /v1/completions and /v1/chat/completions stream `max_tokens` tokens
(default 16) as OpenAI SSE chunks, the first after TTFT, then one every
ITL (an absolute schedule), then a usage chunk and `data: [DONE]`.

- `--settle-after N`: the first N requests stream slower, the first
  `--cold-slow` times, each later one less so, down to the steady speed
  at the N-th (as kernels compile and caches fill); the first prints a line as vLLM's kernel JIT
  monitor does (`... Triton kernel JIT compilation during inference:
  double_kernel. ...`) on stdout (the server's log, under apply);
- `--slowdown X`: every request is slower than the one before by the
  factor 1 + X (a server that never settles);
- `--jit-at K`: the K-th request (from 1) prints such a line too, late:
  a compile inside a measured run; `--jit-every M`: every M-th request
  does (a server that keeps compiling).

GET /health 200, /v1/models lists the model, /metrics answers
`double:requests_total`. At start it prints `TRITON_CACHE_DIR=...` (what
its launcher pointed Triton's cache at, `-` when nothing). The server is
tests/http_double.py's; this file is its timing model.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from http_double import Double, Request, metrics_text, models_list  # noqa: E402  (tests/http_double.py)

ARGS = argparse.Namespace()
JIT_LINE = ("(EngineCore pid={pid}) WARNING {when} [jit_monitor.py:135] Triton kernel JIT compilation during inference: "
            "double_kernel. This causes a latency spike; consider extending warmup to cover this shape/config.")


def _parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ttft-ms", type=float, default=5.0)
    ap.add_argument("--itl-ms", type=float, default=2.0)
    ap.add_argument("--settle-after", type=int, default=0)
    ap.add_argument("--cold-slow", type=float, default=3.0)
    ap.add_argument("--slowdown", type=float, default=0.0)
    ap.add_argument("--jit-at", type=int, action="append", default=[])
    ap.add_argument("--jit-every", type=int, default=0)
    return ap.parse_args(argv)


def _jit_line() -> None:
    print(JIT_LINE.format(pid=os.getpid(), when=time.strftime("%m-%d %H:%M:%S")), flush=True)


def timing(request: Request) -> tuple[float, float]:
    """(ttft, itl) in seconds for the request; prints its log line."""
    n = request.number
    cold = n <= ARGS.settle_after
    if (cold and n == 1) or n in ARGS.jit_at or (ARGS.jit_every and n % ARGS.jit_every == 0):
        _jit_line()
    slow = (1 + (ARGS.cold_slow - 1) * (1 - (n - 1) / ARGS.settle_after) if cold else 1.0) * (1 + ARGS.slowdown) ** n
    return slow * ARGS.ttft_ms / 1000, slow * ARGS.itl_ms / 1000


def main(argv: list[str]) -> int:
    global ARGS
    ARGS = _parse(argv)
    double = Double(timing=timing, get={"/health": lambda: (200, b"{}", "application/json"), "/v1/models": models_list("m")})
    double.get["/metrics"] = metrics_text(lambda: f"double:requests_total {double.requests}\n")
    double.serve(ARGS.port, lines=[f"TRITON_CACHE_DIR={os.environ.get('TRITON_CACHE_DIR', '-')}"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
