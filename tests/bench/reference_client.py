"""A minimal reference reader of OpenAI SSE streams, to judge specdsl's
client against: http.client, one thread and one keep-alive connection per
stream, `time.perf_counter()` just before the request is written and as
soon as each HTTP chunk's bytes are returned by the socket (with the timed
double every SSE event is its own HTTP chunk, so this is the event's first
byte). No event loop, no buffering beyond the socket file's. With
`new_connection=True`, issue 35's plain line reader instead: a new
connection for every request (opened before the clock starts), the
response read with `readline`. Each record keeps the double's stamps of its
first chunk (`double_t`: [request read, chunk written]).

    records, duration = run_reference(url, bodies, requests=32, concurrency=8)
    summary(records, duration) -> {"median_ttft_ms", "median_itl_ms", "output_throughput", ...}

Same definitions as specdsl.bench.stats (vllm bench serve): TTFT = send ->
first chunk with non-empty choices, ITL = gaps between such chunks,
output_throughput = tokens of completed requests / duration of the run.
"""

from __future__ import annotations

import http.client
import json
import socket
import statistics
import threading
import time
from urllib.parse import urlsplit


def _event(line: bytes) -> dict | None:
    """One SSE line's JSON event; None for a line that is not `data:` or is
    `data: [DONE]`."""
    line = line.strip()
    if not line.startswith(b"data:"):
        return None
    payload = line[5:].strip()
    return None if payload == b"[DONE]" else json.loads(payload)


def _one(conn: http.client.HTTPConnection, path: str, body: bytes) -> dict:
    headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    start = time.perf_counter()
    conn.request("POST", path, body=body, headers=headers)
    resp = conn.getresponse()
    chunks: list[float] = []
    tokens = 0
    buffer = b""
    double_t = None
    while True:
        data = resp.read1(65536)
        now = time.perf_counter()
        if not data:
            break
        first = now - start
        buffer += data
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            obj = _event(line)
            if obj is None:
                continue
            if obj.get("choices"):
                if not chunks:
                    double_t = obj.get("double_t")
                chunks.append(first)
            if obj.get("usage"):
                tokens = int(obj["usage"]["completion_tokens"])
    return {"ok": resp.status == 200 and bool(chunks), "start": start, "chunks_s": chunks, "tokens": tokens,
            "double_t": double_t}


def _one_new_connection(host: str, port: int, path: str, body: bytes) -> dict:
    """The plain line reader of issue 35: a new connection for the request
    (opened, with TCP_NODELAY, before the clock starts: connection setup is
    not the server's time, as specdsl's streams hold theirs from the
    warm-up), the request written, the response read line by line; each
    line timed when `readline` returns it. `clocks`: where else such a
    reader might start its clock (before the connection opens, after
    `request` returns, after `getresponse` returns), each as seconds to add
    to a time of `chunks_s`."""
    conn = http.client.HTTPConnection(host, port, timeout=60)
    c0 = time.perf_counter()
    conn.connect()
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    start = time.perf_counter()
    try:
        conn.request("POST", path, body=body, headers=headers)
        written = time.perf_counter()
        resp = conn.getresponse()
        headed = time.perf_counter()
        chunks: list[float] = []
        tokens = 0
        double_t = None
        while True:
            line = resp.readline()
            now = time.perf_counter()
            if not line:
                break
            obj = _event(line)
            if obj is None:
                continue
            if obj.get("choices"):
                if not chunks:
                    double_t = obj.get("double_t")
                chunks.append(now - start)
            if obj.get("usage"):
                tokens = int(obj["usage"]["completion_tokens"])
        ok = resp.status == 200 and bool(chunks)
    finally:
        conn.close()
    # where else a plain reader might start its clock, in s before (+) or after (-) `start`
    clocks = {"before connect": start - c0, "after the request is written": start - written,
              "after the response headers": start - headed}
    return {"ok": ok, "start": start, "chunks_s": chunks, "tokens": tokens, "double_t": double_t, "clocks": clocks}


def run_reference(url: str, bodies: list[bytes], *, requests: int, concurrency: int,
                  burst: bool = False, new_connection: bool = False) -> tuple[list[dict], float]:
    """Send `requests` bodies (cycling) closed loop over `concurrency`
    threads; (records, duration in s from the first send to the last end).
    `burst`: the threads wait at a barrier, so the first `concurrency`
    requests leave together (as an event loop's do), not one thread start
    after another. `new_connection`: each request on a connection of its
    own, read line by line (`_one_new_connection`), not a keep-alive one."""
    parts = urlsplit(url)
    lock = threading.Lock()
    state = {"next": 0}
    records: list[dict] = []
    conns = [http.client.HTTPConnection(parts.hostname, parts.port, timeout=60) for _ in range(concurrency)]
    for conn in conns if not new_connection else ():  # connected before the clock starts, as a keep-alive pool would be after warmup
        conn.connect()
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    barrier = threading.Barrier(concurrency) if burst else None

    def worker(conn: http.client.HTTPConnection) -> None:
        if barrier is not None:
            barrier.wait()
        while True:
            with lock:
                i = state["next"]
                if i >= requests:
                    return
                state["next"] = i + 1
            body = bodies[i % len(bodies)]
            rec = (_one_new_connection(parts.hostname, parts.port, parts.path, body) if new_connection
                   else _one(conn, parts.path, body))
            rec["end"] = time.perf_counter()
            with lock:
                records.append(rec)

    threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in conns]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    duration = max(r["end"] for r in records) - t0
    for conn in conns:
        conn.close()
    return records, duration


def summary(records: list[dict], duration: float) -> dict[str, float]:
    ok = [r for r in records if r["ok"]]
    ttft = [r["chunks_s"][0] * 1000 for r in ok]
    itl = [(c[k] - c[k - 1]) * 1000 for r in ok for c in [r["chunks_s"]] for k in range(1, len(c))]
    return {
        "completed": float(len(ok)),
        "median_ttft_ms": statistics.median(ttft),
        "median_itl_ms": statistics.median(itl),
        "output_throughput": sum(r["tokens"] for r in ok) / duration,
    }
