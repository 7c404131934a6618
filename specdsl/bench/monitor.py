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

And from the run's requests (their send and end times): for a closed
loop, how many were in flight on average against the streams asked for
(`achieved_concurrency` of `asked_concurrency`), over the part of the run
in which every stream had work (from its start to the last request sent;
a run by time, to its end); for an open loop, how far requests left after
their scheduled time and the rate achieved.

A run the client limited is **invalid** (`invalid`: `client-bound: ...`,
specdsl.bench.validity's path): when the loop was busy >= 80% of the run
(its CPU), when the streams held fewer than 90% of the asked concurrency
in flight over at least 1 s (the server was offered less load than the
workload says; a shorter window is recorded, not judged: a few ms between
a stream's requests on a loaded machine are a large share of a run of
tens of ms, and nothing of a run of LLM requests), or
when open-loop requests left >= 10 ms late at p90 (the asked rate was not
offered). A median timer lag that reached a tenth of the run's median ITL
and at least 2 ms (a loop that waits in epoll wakes for a timer up to 1 ms
late, its timeouts being whole milliseconds: an idle client here shows
0.3-0.8 ms; the instant test double at 16 streams, 6.5 ms; a machine of
2 cores at load average 7, 1.5-9 ms whatever the load of the client) is a
`client-bound: ...` warning of the run: its chunk arrivals were stamped
late, which no verdict gates on (apply.judge), but the server was offered
the load asked.

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
CONCURRENCY_SHARE = 0.9
CONCURRENCY_WINDOW_S = 1.0
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


def achieved_concurrency(starts_ends: list[tuple[float, float]], asked: int, until_s: float | None = None) -> dict[str, float]:
    """{"achieved_concurrency", "asked_concurrency", "window_s"}: the mean
    number of requests in flight from the first request's send to `until_s`
    (None: the last request's send), of (send, end) seconds from the run's
    start. {} when a stream has fewer than two requests in it (the window
    is a wave or less) or a request has no end recorded."""
    if len(starts_ends) < 2 * asked or any(end <= 0.0 for _, end in starts_ends):
        return {}
    first = min(s for s, _ in starts_ends)
    last = max(s for s, _ in starts_ends) if until_s is None else until_s
    window = last - first
    if window <= 0.0:
        return {}
    busy = sum(max(0.0, min(end, last) - max(start, first)) for start, end in starts_ends)
    return {"achieved_concurrency": round(busy / window, 3), "asked_concurrency": asked, "window_s": round(window, 4)}


def achieved_rate(starts_s: list[float], asked: float) -> dict[str, float]:
    """{"achieved_rate", "asked_rate"}: requests per second from the run's
    start to the last one's send ({} for fewer than two requests)."""
    if len(starts_s) < 2 or max(starts_s) <= 0.0:
        return {}
    return {"achieved_rate": round(len(starts_s) / max(starts_s), 3), "asked_rate": asked}


def client_limits(client: dict[str, Any], metrics: dict[str, float]) -> list[str]:
    """`client-bound: ...` for each sign that the client limited this run
    (its CPU, its concurrency, its schedule): each makes the run invalid.
    A run spread over worker processes: each worker's busy loop or late
    schedule, and the concurrency of them all."""
    out: list[str] = []
    if "workers" in client:
        n = len(client["workers"])
        for k, worker in enumerate(client["workers"]):
            for sign in _busy(worker) + _late(worker):
                out.append(f"client-bound: client process {k + 1} of {n} (pid {worker.get('pid', '?')}):"
                           + sign[len("client-bound:"):])
    else:
        out += _busy(client) + _late(client)
    achieved, asked = client.get("achieved_concurrency"), client.get("asked_concurrency")
    window = client.get("window_s", 0.0)
    if achieved is not None and asked and achieved < CONCURRENCY_SHARE * asked and window >= CONCURRENCY_WINDOW_S:
        out.append(
            f"client-bound: {achieved:.2f} requests were in flight on average of the {asked} streams asked"
            f" (limit {CONCURRENCY_SHARE:.0%}, over {client.get('window_s', 0):.2f} s from the first request sent,"
            " while every stream had work): the server was offered less load than the workload says; the client was slow between a stream's"
            " requests (fewer streams, a faster machine, or several client processes)")
    return out


def _busy(client: dict[str, Any]) -> list[str]:
    busy = client.get("busy", 0.0)
    if busy < BUSY_LIMIT:
        return []
    return [f"client-bound: the client's event loop was busy {busy:.0%} of the run ({client['cpu_s']:.2f} s CPU in"
            f" {client['wall_s']:.2f} s): streams waited for it, so throughput and latencies may be the client's"
            " limit, not the server's (fewer streams, a faster machine, or several client processes)"]


def _late(client: dict[str, Any]) -> list[str]:
    late = client.get("late_p90_ms")
    if late is None or late < LATE_LIMIT_MS:
        return []
    return [f"client-bound: requests left {late:.1f} ms after their scheduled time at p90 (max"
            f" {client.get('late_max_ms', late):.1f} ms): the offered load was lower than the workload's rate"]


def lag_warnings(client: dict[str, Any], metrics: dict[str, float]) -> list[str]:
    """`client-bound: ...` when the loop's timers ran late (each worker's,
    for a run spread over several): a warning of the run, not a reason to
    drop it (see the module doc)."""
    if "workers" not in client:
        return _lag(client, metrics)
    n = len(client["workers"])
    return [f"client-bound: client process {k + 1} of {n} (pid {w.get('pid', '?')}):" + sign[len("client-bound:"):]
            for k, w in enumerate(client["workers"]) for sign in _lag(w, metrics)]


def _lag(client: dict[str, Any], metrics: dict[str, float]) -> list[str]:
    lag = client.get("loop_lag_p50_ms")
    itl = metrics.get("median_itl_ms")
    limit = max(LAG_FLOOR_MS, LAG_ITL_SHARE * itl) if itl else LAG_FLOOR_MS
    if lag is None or lag < limit:
        return []
    return [f"client-bound: the client's event loop ran timers {lag:.2f} ms late at the median"
            f" (p90 {client.get('loop_lag_p90_ms', lag):.2f} ms; limit {limit:.2f} ms): chunk arrivals were stamped"
            " about that late (a busy client, or a machine without a free core for it)"]


def client_warnings(client: dict[str, Any], metrics: dict[str, float]) -> list[str]:
    """`client-bound: ...` for each sign of one client process's own figures
    (its CPU, its timers, its schedule), whether it drops the run or not."""
    return _busy(client) + _lag(client, metrics) + _late(client)


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
