"""The streams of a run spread over worker processes (`client_processes`
of a workload): where one event loop cannot keep up with the streams, each
worker drives a share of them on its own loop, on its own core.

How a run is shared (the shares are pure functions, below):
- closed loop: stream s of the `concurrency` streams belongs to worker
  s mod P, and request i to the worker of stream i mod concurrency; each
  worker's streams take its requests in order, the next free stream the
  next request (as one process does with all of them);
- open loop: arrival i goes to worker i mod P, which sends it at its
  scheduled offset.
P is `client_processes`, at most the number of streams (closed loop) or
requests (open loop).

The workers (specdsl.bench.worker) are started once per benchmark, before
its warmup, as children of this process (specdsl.hosts.children: in its
process group, killed by the kernel when it dies). For each run the
parent hands every worker its share, waits until all are ready, and gives
them one start `t0` a little ahead on the machine's monotonic clock; each
worker times its requests from that `t0` and reports its records, its
duration (from `t0` to its last end) and its own load. The run's records
are the union, its duration the longest worker's: the same records and
metrics as one process gives. A worker that exits before it answers fails
the run (BenchError with its exit status and the tail of its log); the
others are stopped, none is left behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import specdsl
from specdsl.bench.results import BenchError
from specdsl.bench.timings import RequestTiming
from specdsl.hosts import HostError
from specdsl.hosts.children import end_child, start_child
from specdsl.hosts.local import tail_text

# How far ahead of "all ready" the shared start is: the time for the "go"
# line to reach every worker and for it to wake (ms on an idle machine).
START_LEAD_S = 0.05
_START_TIMEOUT_S = 60.0


def closed_shares(n: int, concurrency: int, processes: int) -> list[tuple[int, list[int]]]:
    """(streams, request indices) of each worker of a closed loop of `n`
    requests over `concurrency` streams (see the module doc)."""
    streams = max(1, min(concurrency, n))
    p = max(1, min(processes, streams))
    return [(len(range(k, streams, p)), [i for i in range(n) if (i % streams) % p == k]) for k in range(p)]


def open_shares(n: int, processes: int) -> list[list[int]]:
    """The request indices of each worker of an open loop of `n` requests."""
    p = max(1, min(processes, n))
    return [list(range(k, n, p)) for k in range(p)]


class _Worker:
    def __init__(self, k: int, proc: asyncio.subprocess.Process, log: Path, count: int):
        self.k, self.proc, self.log, self.count = k, proc, log, count
        self.pid = proc.pid

    def send(self, obj: dict) -> None:
        self.proc.stdin.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    async def reply(self, expect: str, phase: str) -> dict:
        try:
            await self.proc.stdin.drain()
            line = await self.proc.stdout.readline()
        except (ConnectionError, BrokenPipeError):
            line = b""
        if line:
            try:
                msg = json.loads(line)
            except ValueError:
                msg = {}
            if isinstance(msg, dict) and msg.get("op") == expect:
                return msg
            await end_child(self.proc, 0.0)  # it broke the protocol: what it says next cannot be trusted
        try:
            code = await asyncio.wait_for(self.proc.wait(), 5.0)
        except asyncio.TimeoutError:
            code = None
        status = f"exited with status {code}" if code is not None else "stopped answering"
        if code is not None and code < 0:
            status = f"was killed by signal {-code}"
        tail = tail_text(self.log, 8).strip()
        raise BenchError(f"client process {self.k + 1} of {self.count} (pid {self.pid}) {status} {phase}"
                         + (f"; its log {self.log} ends: {tail}" if tail else f"; its log is {self.log}"))


async def _all(coros) -> list:
    """Every result, or the first error at once (the others cancelled)."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if task.exception() is not None:
                raise task.exception()
        return [t.result() for t in tasks]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class WorkerPool:
    """`count` worker processes for one benchmark; `async with` starts and
    ends them."""

    def __init__(self, count: int, out_dir: Path, url: str, timeout: float, keep_text: bool,
                 authorization: str | None = None):
        self.count, self.out_dir, self.url, self.timeout, self.keep_text = count, Path(out_dir), url, timeout, keep_text
        self.authorization = authorization  # to each worker on its stdin, never in its environment or arguments
        self.workers: list[_Worker] = []

    @property
    def pids(self) -> list[int]:
        return [w.pid for w in self.workers]

    async def __aenter__(self) -> WorkerPool:
        # the same specdsl as this process, whether installed or run from a checkout
        root = str(Path(specdsl.__file__).resolve().parents[1])
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        try:
            for k in range(self.count):
                log = self.out_dir / f"client-process-{k + 1}.log"
                try:
                    proc = await start_child([sys.executable, "-m", "specdsl.bench.worker"], log_path=log,
                                             env={"PYTHONPATH": path})
                except HostError as exc:
                    raise BenchError(f"cannot start client process {k + 1} of {self.count}: {exc}") from exc
                worker = _Worker(k, proc, log, self.count)
                self.workers.append(worker)
                worker.send({"op": "setup", "url": self.url, "timeout": self.timeout, "keep_text": self.keep_text}
                            | ({"authorization": self.authorization} if self.authorization else {}))
            await asyncio.wait_for(_all(w.reply("hello", "while starting") for w in self.workers), _START_TIMEOUT_S)
        except BaseException:
            await self.close(grace_s=0.2)
            raise
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        # after an error or a stop the workers may be mid-run: no grace
        await self.close(grace_s=2.0 if exc_type is None else 0.0)

    async def close(self, grace_s: float) -> None:
        await asyncio.gather(*(end_child(w.proc, grace_s) for w in self.workers), return_exceptions=True)

    async def run(self, shares: list[dict[str, Any]]) -> tuple[list[RequestTiming], dict[int, str], float, list[dict]]:
        """Give worker k the job `shares[k]` ({"mode", "jobs", "streams"}:
        see specdsl.bench.worker), start them together, and return the
        merged (records, texts, duration from the common start, each
        worker's client figures)."""
        used = self.workers[:len(shares)]
        for worker, share in zip(used, shares):
            worker.send({"op": "run", **share})
        await _all(w.reply("ready", "before the run") for w in used)
        t0 = time.perf_counter() + START_LEAD_S
        for worker in used:
            worker.send({"op": "go", "t0": t0})
        done = await _all(w.reply("done", "during the run") for w in used)
        records = [RequestTiming.from_json(r) for d in done for r in d["records"]]
        texts = {int(i): t for d in done for i, t in d["texts"].items()}
        duration = max(float(d["duration_s"]) for d in done)
        return records, texts, duration, [d["client"] for d in done]


def closed_jobs(bodies: list[bytes], n: int, concurrency: int, processes: int) -> list[dict[str, Any]]:
    """Each worker's job for a closed loop of `n` requests (bodies reused
    in turn, as one process does)."""
    return [{"mode": "closed", "streams": streams, "jobs": [[i, bodies[i % len(bodies)].decode()] for i in idx]}
            for streams, idx in closed_shares(n, concurrency, processes)]


def open_jobs(bodies: list[bytes], offsets: list[float], processes: int) -> list[dict[str, Any]]:
    """Each worker's job for an open loop on the schedule `offsets`."""
    return [{"mode": "open", "jobs": [[i, bodies[i % len(bodies)].decode(), offsets[i]] for i in idx]}
            for idx in open_shares(len(offsets), processes)]
