"""TEST DOUBLE: a tiny OpenAI-compatible streaming server for the client's
tests and headroom benchmark. Not an LLM: it answers at once (or on a
schedule it is told), so what is measured is the client.

    python tests/bench/instant_server.py [--port 0]   # prints "PORT <n>" when ready

Raw asyncio protocol, HTTP/1.1 keep-alive, chunked transfer encoding (so a
cut stream is detectable). POST /v1/completions and /v1/chat/completions
stream `max_tokens` chunks; the request's `model` picks a behaviour:

  instant (any other name)  every chunk at once, then usage and [DONE]
  timed:TTFT_MS:ITL_MS      first chunk after TTFT_MS, then one per ITL_MS
  status:CODE               HTTP CODE with a JSON error body
  truncated                 two chunks, then the connection closes mid-stream
  nonjson                   one chunk, then `data: not json`
  empty                     200 and an empty stream
  hang                      headers, then nothing
  error                     one chunk, then `data: {"error": ...}`
  nousage                   chunks and a finish_reason, no usage, no [DONE]
  flaky                     every other request answers 503
  close                     closes the connection without answering

GET /last returns the body of the last POST (for tests of request fields);
GET /metrics and a POST anywhere but .../completions answer 404.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

_state = {"count": 0, "last": b"{}"}


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _event(obj) -> bytes:
    return _chunk(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")


def _token(chat: bool, i: int, finish: str | None = None) -> dict:
    choice = {"index": 0, "finish_reason": finish}
    if chat:
        choice["delta"] = {"content": f" t{i}"}
    else:
        choice["text"] = f" t{i}"
    return {"id": "x", "object": "chunk", "choices": [choice]}


def _usage(n: int, prompt_tokens: int) -> dict:
    return {"id": "x", "choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}}


_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
_END = b"0\r\n\r\n"
_cache: dict[tuple[bool, int, int], bytes] = {}


def _instant(chat: bool, n: int, prompt_tokens: int) -> bytes:
    key = (chat, n, prompt_tokens)
    if key not in _cache:
        parts = [_HEAD] + [_event(_token(chat, i, "length" if i == n - 1 else None)) for i in range(n)]
        parts += [_event(_usage(n, prompt_tokens)), _chunk(b"data: [DONE]\n\n"), _END]
        _cache[key] = b"".join(parts)
    return _cache[key]


def _plain(code: int, body: bytes, ctype: bytes = b"application/json") -> bytes:
    return b"HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (code, ctype, len(body), body)


class Server(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""
        self.busy = False

    def data_received(self, data):
        self.buf += data
        if not self.busy:
            self._next()

    def _next(self):
        head_end = self.buf.find(b"\r\n\r\n")
        if head_end < 0:
            return
        head = self.buf[:head_end].decode("latin-1")
        length = 0
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        total = head_end + 4 + length
        if len(self.buf) < total:
            return
        body, self.buf = self.buf[head_end + 4 : total], self.buf[total:]
        method, path = head.split(" ", 2)[:2]
        self.busy = True
        if method == "GET":
            if path == "/metrics":  # no Prometheus endpoint here, as transformers serve
                return self._finish(_plain(404, b'{"detail":"Not Found"}'))
            self._finish(_plain(200, _state["last"]) if path == "/last" else _plain(200, b'{"status":"ok"}'))
        elif not path.endswith("/completions"):  # e.g. /reset_prefix_cache of a vLLM without dev mode
            self._finish(_plain(404, b'{"detail":"Not Found"}'))
        else:
            asyncio.ensure_future(self._post(path, body))

    def _finish(self, data: bytes | None = None):
        if data:
            self.transport.write(data)
        self.busy = False
        if self.buf:
            self._next()

    async def _post(self, path: str, body: bytes):
        _state["last"] = body
        _state["count"] += 1
        req = json.loads(body)
        chat = path.endswith("/chat/completions")
        n = int(req.get("max_tokens") or 16)
        prompt = req.get("prompt") or req.get("messages") or ""
        ptoks = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
        model = str(req.get("model", ""))
        w = self.transport.write
        if model.startswith("status:"):
            return self._finish(_plain(int(model[7:]), b'{"error":{"message":"test double says no"}}'))
        if model == "flaky" and _state["count"] % 2 == 0:
            return self._finish(_plain(503, b'{"error":"busy"}'))
        if model == "close":
            return self.transport.close()
        if model.startswith("timed:"):
            ttft, itl = (float(v) / 1000 for v in model.split(":")[1:3])
            w(_HEAD)
            await asyncio.sleep(ttft)
            for i in range(n):
                if i:
                    await asyncio.sleep(itl)
                w(_event(_token(chat, i, "length" if i == n - 1 else None)))
            w(_event(_usage(n, ptoks)) + _chunk(b"data: [DONE]\n\n") + _END)
            return self._finish()
        if model == "truncated":
            w(_HEAD + _event(_token(chat, 0)) + _event(_token(chat, 1)))
            await asyncio.sleep(0.01)
            return self.transport.close()
        if model == "nonjson":
            return self._finish(_HEAD + _event(_token(chat, 0)) + _chunk(b"data: not json\n\n") + _END)
        if model == "empty":
            return self._finish(_HEAD + _END)
        if model == "hang":
            w(_HEAD)
            await asyncio.sleep(3600)
            return
        if model == "error":
            err = {"error": {"message": "test double failed"}}
            return self._finish(_HEAD + _event(_token(chat, 0)) + _event(err) + _END)
        if model == "nousage":
            parts = [_event(_token(chat, i, "stop" if i == n - 1 else None)) for i in range(n)]
            return self._finish(_HEAD + b"".join(parts) + _END)
        self._finish(_instant(chat, n, ptoks))


async def main(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Server, "127.0.0.1", port, backlog=1024)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        asyncio.run(main(args.port))
    except KeyboardInterrupt:
        sys.exit(0)
