"""Runs that are outliers against the other runs of their arm.

On an H200 the first continuous-batching run of a fresh server was a third
as fast as the next two: a warm-up the `warmup` requests did not cover. The
verdict's t interval stays sound with such a run in it (it widens), but the
user should know that one run carries the spread, and which.

The rule, on the log scale (throughput and latency noise is multiplicative):
with x_1..x_n the values of one arm (n >= 3), m = median(ln x_i) and
MAD = median |ln x_i - m|, run i is an outlier when

    |ln x_i - m| > K * max(1.4826 * MAD, FLOOR)        K = 3.5, FLOOR = 0.03

1.4826 MAD estimates the sd of normal noise robustly (an outlier cannot
inflate it, as it inflates the sd), and K = 3.5 is Iglewicz and Hoaglin's
cut-off for their modified z-score. At the few runs an arm has, the MAD of
3-6 values is often far below the noise's sd, so FLOOR makes the least
deviation that is flagged K * FLOOR = 10.5% from the arm's median: a
warm-up or a neighbour's burst, not noise. Measured on seeded normal noise
(20,000 arms per cell): per-run CV 2%: no clean run flagged at 3-12 runs,
a run at x0.7 among 4 flagged 99.98% of the time; CV 5%: 1.9% (3 runs) to
0.75% (12 runs) of clean runs flagged, x0.7 among 4 flagged 80%. With two
runs each is as far from their median as the other: none is singled out.

Pure, like the rest of specdsl.verdict.
"""

from __future__ import annotations

import math
import statistics

from specdsl.stats import significant

K = 3.5
FLOOR = 0.03
SCALE = 1.4826  # MAD -> sd for normal noise


def outliers(values: list[float], k: float = K, floor: float = FLOOR) -> list[tuple[int, float]]:
    """(index, robust z) of each value beyond the rule, in order; [] when
    fewer than 3 values, or a value is not a positive number."""
    if len(values) < 3 or not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in values):
        return []
    logs = [math.log(v) for v in values]
    m = statistics.median(logs)
    spread = max(SCALE * statistics.median(abs(x - m) for x in logs), floor)
    return [(i, abs(x - m) / spread) for i, x in enumerate(logs) if abs(x - m) > k * spread]


def describe(values: list[float], what: str, labels: list[str] | None = None) -> str:
    """'' or a sentence naming each outlier of one arm (`what`), each by its
    label (default `run I`), for a verdict's detail."""
    found = outliers(values)
    if not found:
        return ""
    med = statistics.median(values)
    bits = []
    for i, z in found:
        label = labels[i] if labels is not None else f"run {i}"
        bits.append(f"{label} ({significant(values[i], 4)}, x{values[i] / med:.2f} of the median {significant(med, 4)}, robust z {z:.1f})")
    return (f"outlier{'s' if len(found) > 1 else ''} in {what}: " + ", ".join(bits)
            + f" (over {K * FLOOR:.1%} from the arm's median and beyond {K:g} robust sd of its log values;"
              " a warm-up the `warmup` requests did not cover?)")
