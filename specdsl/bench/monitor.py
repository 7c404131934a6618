"""Is the client the bottleneck? The client's own load during a run, and
the warnings that mark a run whose numbers the client may have limited.

One event loop drives every stream, so the client limits a measurement when
that loop is busy: a chunk that arrives while it runs other streams' work
waits (its arrival is stamped late), and a stream's next request waits to
be sent. Two measures, both taken in the loop's own thread:

- busy: the loop thread's CPU time over the run's wall time
  (`time.thread_time`, so other threads of the process do not count). Near
  1, the loop had no idle moment: the streams queued for it.
- lag: how late a 10 ms timer fires on the loop. It is what an arrival
  waits before it is stamped, whether the loop was busy or the process was
  waiting for a core on a loaded machine (both are the client's side).

And for an open loop, how far requests left after their scheduled time.

A run is marked `client-bound: ...` (in its `warnings`) when the loop was
busy >= 80% of the run, when the median lag reached a tenth of the run's
median ITL and at least 2 ms (a loop that waits in epoll wakes for a timer
up to 1 ms late, its timeouts being whole milliseconds: an idle client here
shows 0.3-0.8 ms; the instant test double at 16 streams, 6.5 ms), or when
open-loop requests left >= 10 ms late at p90.

When the streams are spread over worker processes (specdsl.bench.workers),
each worker measures itself the same way; the run is client-bound when any
worker is (`worker_warnings`), and its `client` record keeps every
worker's figures beside the worst of each (`merge_clients`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from specdsl import stats

BUSY_LIMIT = 0.8
LAG_FLOOR_MS = 2.0
LAG_ITL_SHARE = 0.1
LATE_LIMIT_MS = 10.0
_TICK_S = 0.01


class LoopMonitor:
    """Start and stop inside the event loop that runs the streams."""

    def __init__(self) -> None:
        self._lags: list[float] = []
        self._task: asyncio.Task | None = None
        self._cpu0 = self._wall0 = 0.0

    def start(self) -> None:
        self._lags = []
        self._cpu0, self._wall0 = time.thread_time(), time.perf_counter()
        self._task = asyncio.ensure_future(self._tick())

    async def _tick(self) -> None:
        lags = self._lags
        while True:
            t = time.perf_counter()
            await asyncio.sleep(_TICK_S)
            lags.append((time.perf_counter() - t - _TICK_S) * 1000.0)

    def stop(self) -> dict[str, Any]:
        cpu, wall = time.thread_time() - self._cpu0, time.perf_counter() - self._wall0
        if self._task is not None:
            self._task.cancel()
        out: dict[str, Any] = {"cpu_s": round(cpu, 4), "wall_s": round(wall, 4), "busy": round(cpu / wall, 4) if wall > 0 else 0.0}
        if self._lags:
            p50, p90, p99 = stats.percentiles(self._lags, (50, 90, 99))
            out.update(loop_lag_p50_ms=round(p50, 3), loop_lag_p90_ms=round(p90, 3), loop_lag_p99_ms=round(p99, 3),
                       loop_lag_max_ms=round(max(self._lags), 3))
        return out


def schedule_lateness_ms(starts_s: list[float], planned_s: list[float]) -> dict[str, float]:
    """p50/p90/max of how late (ms) each request left against its planned
    offset (both from the run's start)."""
    late = [max(0.0, (s - p) * 1000.0) for s, p in zip(starts_s, planned_s)]
    if not late:
        return {}
    p50, p90 = stats.percentiles(late, (50, 90))
    return {"late_p50_ms": round(p50, 3), "late_p90_ms": round(p90, 3), "late_max_ms": round(max(late), 3)}


def client_warnings(client: dict[str, Any], metrics: dict[str, float]) -> list[str]:
    """`client-bound: ...` for each sign that the client limited this run."""
    out: list[str] = []
    busy = client.get("busy", 0.0)
    if busy >= BUSY_LIMIT:
        out.append(
            f"client-bound: the client's event loop was busy {busy:.0%} of the run ({client['cpu_s']:.2f} s CPU in"
            f" {client['wall_s']:.2f} s): streams waited for it, so throughput and latencies may be the client's"
            " limit, not the server's (fewer streams, a faster machine, or several client processes)")
    lag = client.get("loop_lag_p50_ms")
    itl = metrics.get("median_itl_ms")
    limit = max(LAG_FLOOR_MS, LAG_ITL_SHARE * itl) if itl else LAG_FLOOR_MS
    if lag is not None and lag >= limit:
        out.append(
            f"client-bound: the client's event loop ran timers {lag:.2f} ms late at the median"
            f" (p90 {client.get('loop_lag_p90_ms', lag):.2f} ms; limit {limit:.2f} ms): chunk arrivals were stamped"
            " about that late (a busy client, or a machine without a free core for it)")
    late = client.get("late_p90_ms")
    if late is not None and late >= LATE_LIMIT_MS:
        out.append(
            f"client-bound: requests left {late:.1f} ms after their scheduled time at p90 (max"
            f" {client.get('late_max_ms', late):.1f} ms): the offered load was lower than the workload's rate")
    return out


def merge_clients(workers: list[dict[str, Any]]) -> dict[str, Any]:
    """The client record of a run spread over worker processes: how many,
    each worker's own figures (`workers`), the worst of each figure over
    them (`busy`, `loop_lag_*`, `late_*`) and their CPU time summed (`cpu_s`)."""
    out: dict[str, Any] = {"processes": len(workers), "workers": list(workers)}
    for key in ("busy", "wall_s", "loop_lag_p50_ms", "loop_lag_p90_ms", "loop_lag_p99_ms", "loop_lag_max_ms"):
        values = [w[key] for w in workers if key in w]
        if values:
            out[key] = max(values)
    out["cpu_s"] = round(sum(w.get("cpu_s", 0.0) for w in workers), 4)
    return out


def worker_warnings(workers: list[dict[str, Any]], metrics: dict[str, float]) -> list[str]:
    """`client-bound: client process K of N: ...` for each sign, in each
    worker, that it limited this run."""
    out = []
    for k, client in enumerate(workers):
        for warning in client_warnings(client, metrics):
            out.append(f"client-bound: client process {k + 1} of {len(workers)} (pid {client.get('pid', '?')}):"
                       + warning[len("client-bound:"):])
    return out
