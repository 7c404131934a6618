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
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import os
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


class _StampedHandler(ResponseHandler):
    """aiohttp's connection protocol, noting when bytes last arrived (before
    they are parsed and the reading task is woken)."""

    recv_t = 0.0

    def data_received(self, data: bytes) -> None:
        self.recv_t = time.perf_counter()
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


AUTHORIZATION_ENV = "SPECDSL_CLIENT_AUTHORIZATION"


def request_headers() -> dict[str, str]:
    """JSON content type, and the `Authorization` header: the whole value
    in SPECDSL_CLIENT_AUTHORIZATION (what apply sets for a server already
    running: its key, or its URL's credentials, so that no URL the client
    records holds them), else a bearer token when OPENAI_API_KEY is set."""
    headers = {"Content-Type": "application/json"}
    given = os.environ.get(AUTHORIZATION_ENV)
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
