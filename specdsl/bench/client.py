"""One streaming request to an OpenAI-compatible server, timed chunk by
chunk, and the one factory for the HTTP sessions that send them.

The HTTP stack is aiohttp on one asyncio event loop: a single thread drives
every stream, so the client spends its CPU on parsing rather than on
switching between threads that fight over the GIL, and it is what `vllm
bench serve` uses, so both clients pay the same per-chunk costs.

A request never raises: every failure is a `RequestTiming` with `ok=False`
and a short `reason` (HTTP status, timeout, truncated stream, non-JSON
chunk, empty stream, error object in the stream, connection failure).

Where the clock is read (measured against a server of known timing beside
a plain blocking http.client reader: benchmarks/bench_client_fidelity.py,
docs/benchmarks.md). Reading `time.perf_counter()` before `session.post`
and after `iter_any` returns (as `vllm bench serve` does) put TTFT 0.5-1 ms
above the truth on an idle 2-core machine and several ms under load: the
send time included aiohttp's request preparation and connection checkout
(and, on Python < 3.12, the wait for the body-writing task, which aiohttp
schedules on the loop behind every other ready callback: headers and body
leave together when it runs), and each arrival included the wake-up of the
reading task behind the other streams' callbacks. So the send is stamped
when aiohttp writes the request's bytes (`_StampedRequest.write_bytes`, just
before `transport.write`) and each arrival when the connection's protocol
receives the bytes (`_StampedHandler.data_received`, before any parsing or
task switch). Both fall back to reading the clock in the stream's task
when aiohttp's internals differ (the stamps are then simply absent).

Where the kernel gives it (Linux, a plain TCP socket read by asyncio's
selector transport), an arrival is the kernel's own receive time of the
bytes: SO_TIMESTAMPNS on the socket, the connection read with `recvmsg`
(`_kernel_stamped_reader`), its SCM_TIMESTAMPNS (CLOCK_REALTIME) moved onto
perf_counter's clock. On a loaded machine at 8 streams the one event loop
took its turn to read a stream's bytes 1-4 ms after a blocked thread would
have (issue 35; docs/benchmarks.md): the kernel's stamp does not wait for
the loop. Without it, the protocol's `data_received` reads the clock.
aiohttp (3.14) also calls `data_received(b"")` from `resume_reading()` on
every read of the body, when the reading task takes the bytes: that call
carries no bytes and leaves the stamp alone (it used to overwrite it with
the moment of the read, which made the kernel's stamp, and the protocol's,
the reading task's wake-up: +1.05 ms at 8 streams, issue 35).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import os
import platform
import socket
import struct
import sys
import time

import aiohttp
from aiohttp.client_proto import ResponseHandler

from specdsl.bench.timings import RequestTiming

_BODY_EXCERPT = 160


# The list the current request's send time goes into (set by stream_request
# in its task; the body-writing task aiohttp creates inherits the context).
_SENT: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar("specdsl_bench_sent", default=None)


class _StampedRequest(aiohttp.ClientRequest):
    """A request that notes the moment its bytes are written: aiohttp
    buffers the headers and writes them with the body here."""

    async def write_bytes(self, *args, **kwargs):
        sent = _SENT.get()
        if sent is not None and not sent:
            sent.append(time.perf_counter())
        return await super().write_bytes(*args, **kwargs)


# Linux's SO_TIMESTAMPNS (SCM_TIMESTAMPNS has the same value): 35 in asm-generic, which the 64-bit
# machines named here use (their struct timespec: two 64-bit fields); Python 3.11's socket module
# does not name it. Elsewhere none, and arrivals are read with the clock.
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", None) or (
    35 if sys.platform.startswith("linux") and platform.machine() in ("x86_64", "aarch64", "ppc64le", "s390x", "riscv64")
    else None)
_CMSG_SPACE = socket.CMSG_SPACE(16) if hasattr(socket, "CMSG_SPACE") else 0
_STAMP_MAX_AGE_NS = 10 * 10**9  # an older kernel stamp means the wall clock stepped: read the clock instead


def _kernel_t(ancillary) -> float:
    """The SCM_TIMESTAMPNS of a `recvmsg` on perf_counter's clock; 0.0 when
    there is none (or the wall clock stepped since: no use)."""
    for level, kind, raw in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(raw) >= 16:
            sec, nsec = struct.unpack("qq", raw[:16])
            wall, mono = time.time_ns(), time.perf_counter()
            age = wall - (sec * 10**9 + nsec)
            if 0 <= age < _STAMP_MAX_AGE_NS:
                return mono - age * 1e-9
    return 0.0


def _kernel_stamped_reader(transport, protocol: "_StampedHandler"):
    """asyncio's `_SelectorSocketTransport._read_ready__data_received`,
    reading with `recvmsg` so that the kernel's receive stamp comes with
    the bytes (set on the protocol as `kernel_t` before `data_received`);
    None when this transport is not that one, or the socket refuses the
    option (then nothing changes)."""
    sock = getattr(transport, "_sock", None)
    if (_SO_TIMESTAMPNS is None or not _CMSG_SPACE or sock is None or not hasattr(sock, "recvmsg")
            or getattr(transport, "_read_ready_cb", None) != getattr(transport, "_read_ready__data_received", 0)):
        return None
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError:
        return None

    def read() -> None:
        if transport._conn_lost:
            return
        try:
            data, ancillary, _, _ = sock.recvmsg(transport.max_size, _CMSG_SPACE)
        except (BlockingIOError, InterruptedError):
            return
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            transport._fatal_error(exc, "Fatal read error on socket transport")
            return
        if not data:
            transport._read_ready__on_eof()
            return
        protocol.kernel_t = _kernel_t(ancillary)
        try:
            protocol.data_received(data)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            transport._fatal_error(exc, "Fatal error: protocol.data_received() call failed.")

    return read


class _StampedHandler(ResponseHandler):
    """aiohttp's connection protocol, noting when bytes last arrived: the
    kernel's receive stamp where the transport reads it, else the moment
    they are handed over (before they are parsed and the reading task is
    woken)."""

    recv_t = 0.0
    kernel_t = 0.0
    kernel_stamped = False  # whether this connection's bytes come with the kernel's stamp

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        reader = _kernel_stamped_reader(transport, self)
        if reader is not None:
            transport._read_ready_cb = reader
            self.kernel_stamped = True

    def data_received(self, data: bytes) -> None:
        if data:  # aiohttp's resume_reading() calls this with b"" on every read of the body: no bytes arrived
            now = time.perf_counter()
            kernel, self.kernel_t = self.kernel_t, 0.0
            self.recv_t = kernel if 0.0 < kernel <= now else now
        super().data_received(data)


def make_session(limit: int) -> aiohttp.ClientSession:
    """The HTTP session for a benchmark: keep-alive connections, at most
    `limit` at once (0: no limit), no total timeout here (each request passes
    its own), no proxies from the environment (benchmarks talk to a server
    directly), send and arrival stamped at the socket (see the module doc).
    Must be created inside the running event loop."""
    connector = aiohttp.TCPConnector(limit=limit, limit_per_host=0, keepalive_timeout=60, enable_cleanup_closed=True)
    factory = getattr(connector, "_factory", None)
    if isinstance(factory, functools.partial) and factory.func is ResponseHandler:
        connector._factory = functools.partial(_StampedHandler, *factory.args, **factory.keywords)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
        trust_env=False,
        auto_decompress=False,
        request_class=_StampedRequest,
    )


def request_headers(authorization: str | None = None) -> dict[str, str]:
    """JSON content type, and the `Authorization` header: `authorization`,
    the whole value, when given (what apply passes for a server already
    running: its key, or its URL's credentials, so that no URL the client
    records holds them; an argument, never the environment, which every
    process started meanwhile would inherit), else a bearer token when
    OPENAI_API_KEY is set."""
    headers = {"Content-Type": "application/json"}
    given = authorization
    api_key = os.environ.get("OPENAI_API_KEY")
    if given:
        headers["Authorization"] = given
    elif api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


class _StreamFailure(Exception):
    """A stream that cannot count as completed; the message is the reason."""


async def stream_request(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    headers: dict[str, str],
    record: RequestTiming,
    *,
    timeout: float,
    t0: float,
    keep_text: bool,
) -> str:
    """Send `body` (a streaming request) to `url` and fill `record`: send
    time, the arrival of every chunk with non-empty `choices` (relative to
    the send), token counts from `usage` when the server sends them.
    Returns the generated text when `keep_text` (else ""). Never raises
    except on cancellation."""
    pieces: list[str] = []
    st = time.perf_counter()
    record.start_s = st - t0
    chunks = record.chunks_s
    sent: list[float] = []
    token = _SENT.set(sent)
    try:
        async with session.post(
            url, data=body, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)
        ) as response:
            if sent:  # the moment the request's bytes were written
                st = sent[0]
                record.start_s = st - t0
            conn = response.connection
            proto = conn.protocol if conn is not None else None
            stamped = isinstance(proto, _StampedHandler)
            record.status = response.status
            if response.status != 200:
                text = (await response.text(errors="replace"))[:_BODY_EXCERPT]
                raise _StreamFailure(f"http {response.status}: {text.strip()}" if text.strip() else f"http {response.status}")
            finished = False
            buffer = b""
            buffer_t = 0.0  # when the first byte of what `buffer` holds arrived
            async for data in response.content.iter_any():
                now = proto.recv_t if stamped else 0.0
                if now < st:  # no stamp for this response (or stamps not taken): read the clock here
                    now = time.perf_counter()
                if not buffer:
                    buffer_t = now
                buffer += data
                if b"\n" not in data:
                    continue
                *lines, buffer = buffer.split(b"\n")
                # an event is timed by the arrival of its first byte: the first
                # line began in an earlier read when the buffer held a part of it
                t = buffer_t - st
                for line in lines:
                    if line and line != b"\r":  # skip the blank lines between SSE events
                        finished |= _handle_line(line.strip(), t, chunks, record, pieces, keep_text)
                    t = now - st
                buffer_t = now
            if buffer.strip():
                finished |= _handle_line(buffer.strip(), buffer_t - st, chunks, record, pieces, keep_text)
        if not chunks:
            raise _StreamFailure("empty stream (no chunk with choices)")
        if not finished:
            raise _StreamFailure("truncated stream (no finish_reason and no [DONE])")
        record.ok = True
    except _StreamFailure as exc:
        record.reason = str(exc)
    except asyncio.TimeoutError:
        record.reason = f"timeout after {timeout:g}s"
    except aiohttp.ClientPayloadError as exc:
        record.reason = f"truncated stream ({type(exc).__name__})"
    except aiohttp.ServerDisconnectedError:
        record.reason = "server disconnected"
    except aiohttp.ClientConnectorError as exc:
        record.reason = f"cannot connect ({exc.os_error.__class__.__name__})"
    except aiohttp.ClientError as exc:
        record.reason = f"http client error ({type(exc).__name__})"
    except OSError as exc:
        record.reason = f"network error ({type(exc).__name__})"
    finally:
        _SENT.reset(token)
        record.end_s = time.perf_counter() - t0
    return "".join(pieces)


def _handle_line(
    line: bytes, t: float, chunks: list[float], record: RequestTiming, pieces: list[str], keep_text: bool
) -> bool:
    """Handle one SSE line; True when it ends the stream ([DONE] or a
    finish_reason). Raises _StreamFailure for a chunk that breaks the stream."""
    if not line or line.startswith(b":") or not line.startswith(b"data:"):
        return False  # blank separator, SSE comment (ping), or another SSE field
    payload = line[5:].strip()
    if payload == b"[DONE]":
        return True
    try:
        obj = json.loads(payload.decode("utf-8"))
    except ValueError:  # includes UnicodeDecodeError
        raise _StreamFailure("non-JSON chunk") from None
    if not isinstance(obj, dict):
        raise _StreamFailure("non-JSON chunk")
    if obj.get("error") is not None:
        err = obj["error"]
        msg = err.get("message", err) if isinstance(err, dict) else err
        raise _StreamFailure(f"error in stream: {str(msg)[:_BODY_EXCERPT]}")
    done = False
    choices = obj.get("choices")
    if choices:
        chunks.append(t)
        choice = choices[0]
        if keep_text:
            text = choice.get("text")
            if text is None:
                text = (choice.get("delta") or {}).get("content")
            if text:
                pieces.append(text)
        done = choice.get("finish_reason") is not None
    usage = obj.get("usage")
    if usage:
        completion = usage.get("completion_tokens")
        if completion is not None:
            record.output_tokens = int(completion)
            record.tokens_from = "usage"
        prompt = usage.get("prompt_tokens")
        if prompt is not None:
            record.prompt_tokens = int(prompt)
    return done
