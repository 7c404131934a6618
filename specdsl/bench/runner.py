"""The streams of one client process: closed loop (a number of streams,
each sending its next request as soon as the previous one ends) or open
loop (each request at its scheduled offset), on one event loop and one
HTTP session. The load generator runs one in its own process
(specdsl.bench.loadgen) and one in each worker process when the streams
are spread over several (specdsl.bench.worker).

Every time is from `t0`, a `time.perf_counter()` reading: CLOCK_MONOTONIC
on Linux, one clock for every process of the machine, so the workers of a
run share one origin.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time

from specdsl.bench.client import request_headers, stream_request
from specdsl.bench.results import BenchError
from specdsl.bench.timings import RequestTiming

_STOP_POLL_S = 0.05

# (request index, body) for a closed loop; (index, body, offset in s from t0) for an open one
ClosedJob = tuple[int, bytes]
OpenJob = tuple[int, bytes, float]


class StreamRunner:
    """Drives requests on one event loop; `session` is set by the owner
    (specdsl.bench.client.make_session) inside the loop."""

    def __init__(self, url: str, timeout: float, keep_text: bool, stop: threading.Event | None,
                 authorization: str | None = None):
        self.url = url
        self.timeout = timeout
        self.keep_text = keep_text
        self.stop = stop
        self.authorization = authorization  # the Authorization header's value (a secret: never written)
        self.headers = request_headers(authorization)
        self.session = None

    async def one(self, i: int, body: bytes, t0: float, texts: dict[int, str]) -> RequestTiming:
        record = RequestTiming(i=i)
        text = await stream_request(
            self.session, self.url, body, self.headers, record, timeout=self.timeout, t0=t0, keep_text=self.keep_text
        )
        if self.keep_text:
            texts[i] = text
        return record

    async def closed_loop(self, jobs: list[ClosedJob], streams: int, texts: dict[int, str],
                          t0: float | None = None, seconds: float | None = None) -> tuple[list[RequestTiming], float]:
        """`streams` streams take the jobs in order, each its next one as
        soon as its previous request ended. (records, seconds from t0 to
        the last end); t0 defaults to now. With `seconds`, the jobs cycle
        (request i sends body i mod len(jobs)) and no stream sends after
        t0 + seconds; what is in flight then ends and is counted."""
        records: list[RequestTiming] = []
        t0 = time.perf_counter() if t0 is None else t0
        if seconds is None:
            queue = iter(jobs)
            width = min(streams, len(jobs))
        else:
            bodies = [body for _, body in jobs]
            queue = ((k, bodies[k % len(bodies)]) for k in itertools.count())
            width = streams

        async def stream() -> None:
            for i, body in queue:  # one iterator shared by the streams: the next free stream takes the next job
                if seconds is not None and time.perf_counter() - t0 >= seconds:
                    return
                records.append(await self.one(i, body, t0, texts))

        await asyncio.gather(*(stream() for _ in range(max(1, width))))
        return records, time.perf_counter() - t0

    async def open_loop(self, jobs: list[OpenJob], texts: dict[int, str],
                        t0: float | None = None) -> tuple[list[RequestTiming], float]:
        """Each job's request leaves at t0 + its offset, whatever is in
        flight. (records, seconds from t0 to the last end)."""
        tasks: list[asyncio.Task] = []
        t0 = time.perf_counter() if t0 is None else t0
        try:
            for i, body, offset in jobs:
                delay = t0 + offset - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.ensure_future(self.one(i, body, t0, texts)))
            records = list(await asyncio.gather(*tasks))
        finally:
            for task in tasks:
                task.cancel()
        return records, time.perf_counter() - t0

    async def until_stopped(self, coro):
        """Run `coro`; cancel it and raise BenchError when `stop` is set."""
        task = asyncio.ensure_future(coro)
        if self.stop is None:
            return await task
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=_STOP_POLL_S)
                if done:
                    return task.result()
                if self.stop.is_set():
                    break
        finally:
            if not task.done():  # stopped, or this coroutine itself was cancelled (Ctrl-C)
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        raise BenchError("benchmark stopped before it finished")
