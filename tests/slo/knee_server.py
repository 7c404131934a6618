"""TEST DOUBLE: an OpenAI-compatible streaming server (stdlib only) whose
latency grows with load in a known way, so that a search for the highest
concurrency meeting an SLO has one right answer. Not an LLM.

    python knee_server.py --port PORT --knee K [--fast-ms 2] [--slow-ms 120]
                          [--itl-ms 1] [--pids FILE]

A request that arrives while at most K requests are in flight (itself
counted) gets its first token after `--fast-ms`; one that arrives while
more are in flight waits `--slow-ms`. Then `max_tokens` tokens, one every
`--itl-ms`, a usage chunk and `data: [DONE]`. Closed-loop concurrency c <= K
is all fast; at c > K every request sent while c are in flight is slow.
The process exits after 300 s whatever happens (bounded in time), and
`--pids FILE` appends `PID PGID` so a test can check its group is gone.
The server is tests/http_double.py's; this file is its timing model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from http_double import Double, Request  # noqa: E402  (tests/http_double.py: the server itself)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--knee", type=int, required=True)
    p.add_argument("--fast-ms", type=float, default=2.0)
    p.add_argument("--slow-ms", type=float, default=120.0)
    p.add_argument("--itl-ms", type=float, default=1.0)
    p.add_argument("--pids")
    args = p.parse_args()

    def timing(request: Request) -> tuple[float, float]:
        return (args.fast_ms if request.load <= args.knee else args.slow_ms) / 1000.0, args.itl_ms / 1000.0

    # every GET answers ok; a cache reset is a no-op; a request that does
    # not stream gets one token, unstreamed
    ok = (200, b'{"status":"ok"}')
    double = Double(timing=timing, fallback=ok, post={path: lambda: (200, b"", "application/json")
                                                      for path in ("/flush_cache", "/reset_prefix_cache")},
                    plain=b'{"choices": [{"text": " t", "index": 0}]}', prompt_tokens=8, lifetime_s=300.0,
                    pids=args.pids, backlog=5)
    double.serve(args.port)


if __name__ == "__main__":
    main()
