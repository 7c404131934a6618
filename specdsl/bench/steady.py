"""Is a run steady? Two checks on a run's own records, so that a cold
start shows where it happened, not only as a wide ratio (docs/verdicts.md,
"Warm servers, steady runs"):

- `unsteady_warning`: inside one run, the first wave of requests (the
  first `concurrency` sent) against the later ones: a first wave whose
  median time to first token is over twice the later waves' (and at least
  20 ms more) met a server still warming up. A run of one wave cannot be
  read this way.
- `cold_start_warning`: across the runs of one launch, the first run
  against the median of the later ones: a first run more than 20% slower
  met a launch the warm-up did not cover.

Pure functions of numbers; the load generator and the paired step call
them and put what they say in the run's `warnings`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

WAVE_FACTOR = 2.0  # first wave's median TTFT over the later waves'
WAVE_FLOOR_MS = 20.0  # and at least this much more: small latencies jitter
COLD_FACTOR = 0.8  # a launch's first run below this share of its later runs' median


def unsteady_warning(ttft_ms: Sequence[float], concurrency: int) -> str | None:
    """The warning for a run whose first wave waited much longer for its
    first token than the later waves (`ttft_ms` in the order the requests
    were sent); None when steady or a run of one wave."""
    wave = max(1, concurrency)
    if len(ttft_ms) < 2 * wave:
        return None
    first, rest = statistics.median(ttft_ms[:wave]), statistics.median(ttft_ms[wave:])
    if first > WAVE_FACTOR * rest and first - rest >= WAVE_FLOOR_MS:
        return (f"not steady: the first {wave} requests waited {first / rest:.1f}x longer for their first token "
                f"({first:.0f} ms) than the later ones ({rest:.0f} ms): the server was still warming up "
                "(raise `warmup` or set `warmup_time`)")
    return None


def cold_start_warning(values: Sequence[float], metric: str = "output_throughput") -> str | None:
    """The warning for a launch whose first run's `metric` (higher is
    better) was far below the median of its later runs; None when not, or
    with fewer than two runs."""
    if len(values) < 2 or not all(v > 0 for v in values):
        return None
    later = statistics.median(values[1:])
    if values[0] < COLD_FACTOR * later:
        return (f"cold start: its first run's {metric} ({values[0]:.4g}) was {1 - values[0] / later:.0%} below "
                f"its later runs' median ({later:.4g}): the warm-up did not cover the launch "
                "(raise `warmup` or set `warmup_time`)")
    return None
