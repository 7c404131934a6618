"""A worker process of the benchmark client: runs its share of a run's
streams and sends back their records (specdsl.bench.workers starts it as
`python -m specdsl.bench.worker`).

It talks JSON lines: stdin from the parent, stdout to it.
  <- {"op": "setup", "url", "timeout", "keep_text"}   -> {"op": "hello", "pid"}
  <- {"op": "run", "mode": "closed", "streams", "jobs": [[i, body], ...]}
     or {"op": "run", "mode": "open", "jobs": [[i, body, offset_s], ...]}
                                                      -> {"op": "ready"}
  <- {"op": "go", "t0"}                               -> {"op": "done", "records", "texts",
                                                          "duration_s", "client"}
It starts its streams at `t0` (the parent's perf_counter reading: one clock
for every process), so its records and its duration are from the run's
common start; `client` is its own load (specdsl.bench.monitor) with its pid,
the start `t0`, how late after it the worker began (`start_late_ms`) and,
for an open loop, how late its requests left. It ends when its stdin
closes, and at once on SIGINT or SIGTERM (a Ctrl-C reaches the whole
process group).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time

from specdsl.bench.client import make_session
from specdsl.bench.monitor import LoopMonitor, schedule_lateness_ms
from specdsl.bench.runner import StreamRunner


def _send(obj: dict) -> None:
    sys.stdout.buffer.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
    sys.stdout.buffer.flush()


async def _lines():
    reader = asyncio.StreamReader(limit=1 << 28)
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    while True:
        line = await reader.readline()
        if not line:
            return
        yield json.loads(line)


async def _run(runner: StreamRunner, job: dict, t0: float) -> dict:
    delay = t0 - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)
    woke = time.perf_counter()
    texts: dict[int, str] = {}
    monitor = LoopMonitor()
    monitor.start()
    try:
        if job["mode"] == "closed":
            jobs = [(int(i), body.encode()) for i, body in job["jobs"]]
            records, duration = await runner.closed_loop(jobs, int(job["streams"]), texts, t0=t0)
        else:
            jobs = [(int(i), body.encode(), float(offset)) for i, body, offset in job["jobs"]]
            records, duration = await runner.open_loop(jobs, texts, t0=t0)
    finally:
        client = monitor.stop()
    # its pid, the run's common start and how late after it this worker began
    client.update(pid=os.getpid(), t0=t0, start_late_ms=round((woke - t0) * 1000.0, 3))
    if job["mode"] == "open":
        planned = {int(i): float(offset) for i, _body, offset in job["jobs"]}
        ordered = sorted(records, key=lambda r: r.i)
        client.update(schedule_lateness_ms([r.start_s for r in ordered], [planned[r.i] for r in ordered]))
    return {"op": "done", "records": [r.to_json() for r in records], "texts": {str(i): t for i, t in texts.items()},
            "duration_s": duration, "client": client}


async def main() -> int:
    runner = None
    job = None
    try:
        async for msg in _lines():
            op = msg.get("op")
            if op == "setup":
                runner = StreamRunner(msg["url"], float(msg["timeout"]), keep_text=bool(msg["keep_text"]), stop=None,
                                      authorization=msg.get("authorization"))
                runner.session = make_session(limit=0)
                _send({"op": "hello", "pid": os.getpid()})
            elif op == "run":
                job = msg
                _send({"op": "ready"})
            elif op == "go" and runner is not None and job is not None:
                _send(await _run(runner, job, float(msg["t0"])))
                job = None
            else:
                print(f"specdsl worker: unexpected message {op!r}", file=sys.stderr)
                return 2
    finally:
        if runner is not None and runner.session is not None:
            await runner.session.close()
    return 0


if __name__ == "__main__":
    # a Ctrl-C or a stop ends the worker at once, without a traceback: its parent reports the run
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    sys.exit(asyncio.run(main()))
