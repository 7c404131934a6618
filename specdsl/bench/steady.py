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

And the rule of a steady launch (docs/verdicts.md, "Steady launches"):
the warm-up sends the workload in slices until two slices in a row agree
(`slices_agree`: their output throughputs within `warmup_tolerance` of
the larger) and the server's log gained no compile, autotune or CUDA
graph capture line during either (`settled`); a warm-up that has not by
`warmup_time` leaves a launch that is dropped (`unsettled_reason`). A
compile line inside a measured run makes the run invalid
(specdsl.bench.validity `jit_invalid`, worded by `jit_lines`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

DEFAULT_TOLERANCE = 0.01  # `warmup_tolerance` unset
DEFAULT_BOUND_S = 300.0  # `warmup_tolerance` set, `warmup_time` not: the most a warm-up takes
SHOWN = 3  # log lines a reason quotes
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


def slice_rate(records, duration: float) -> float:
    """Output tokens a second of a warm-up slice (its completed requests'
    tokens: usage where the server sent it, else chunks)."""
    tokens = sum((r.output_tokens or len(r.chunks_s)) for r in records if r.ok)
    return tokens / duration if duration > 0 else 0.0


def relative_gap(a: float, b: float) -> float:
    """|a - b| over the larger of the two (0 when both are 0)."""
    top = max(abs(a), abs(b))
    return abs(a - b) / top if top > 0 else 0.0


def slices_agree(rates: Sequence[float], tolerance: float) -> bool:
    """Whether the last two slices' rates are within `tolerance` (and not 0)."""
    return len(rates) >= 2 and rates[-1] > 0 and rates[-2] > 0 and relative_gap(rates[-1], rates[-2]) <= tolerance


def settled(rates: Sequence[float], events: Sequence[Sequence], tolerance: float) -> bool:
    """The launch is steady: the last two slices agree within `tolerance`
    and the log gained no compile line during either (`events`: each
    slice's, in order)."""
    return slices_agree(rates, tolerance) and len(events) >= 2 and not events[-1] and not events[-2]


def jit_lines(events: Sequence) -> str:
    """`2 compile lines in the server's log: LINE; LINE` of `events` (each
    with `kind` and `line`), the first SHOWN lines quoted."""
    kinds = "/".join(sorted({e.kind.replace("_", " ") for e in events}))
    quoted = "; ".join(e.line[:300] for e in events[:SHOWN]) + ("; ..." if len(events) > SHOWN else "")
    n = len(events)
    return f"{n} {kinds} line{'s' if n != 1 else ''} in the server's log: {quoted}"


def unsettled_reason(rates: Sequence[float], events: Sequence[Sequence], tolerance: float, bound_s: float) -> str:
    """Why a warm-up that ran out of time did not settle: the last two
    slices' gap, or the compile lines of the last slices."""
    head = f"the launch did not settle within warmup_time {bound_s:g}s ({len(rates)} slices)"
    recent = [e for ev in events[-2:] for e in ev]
    if recent:
        return f"{head}: {jit_lines(recent)}"
    if len(rates) < 2:
        return f"{head}: fewer than 2 slices ran (raise `warmup_time`)"
    shown = ", ".join(f"{r:.4g}" for r in rates[-3:])
    return (f"{head}: its last slices' output throughput ({shown} tok/s) moved {relative_gap(rates[-1], rates[-2]):.1%} "
            f"between the last two, over warmup_tolerance {tolerance:.2%}")
