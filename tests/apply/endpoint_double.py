"""TEST DOUBLE: a server that is already running, as a production vLLM
endpoint looks from outside (stdlib only; not an LLM). A test starts it
itself, outside specdsl, and points a spec's `url` at it.

    python endpoint_double.py --port-file FILE [--model M] [--version V] [--max-model-len N]
        [--api-key KEY] [--ttft-ms 5] [--itl-ms 1] [--log FILE] [--engine vllm|sglang]

GET /v1/models lists the model with `root` and `max_model_len` (vLLM's
fields), /version answers {"version": V}, /metrics has
`vllm:cache_config_info{...}` (block_size 16, gpu_memory_utilization 0.9,
enable_prefix_caching True) and a request counter, /health 200. POST
/v1/completions and /v1/chat/completions stream `max_tokens` tokens as
OpenAI SSE chunks (the first after TTFT, then one every ITL), then a usage
chunk and `data: [DONE]`. With `--engine sglang` it looks like SGLang
instead: /server_info answers its settings (model_path, tp_size,
attention_backend, version, context_length, api_key) and /version and
/metrics are not there. With --api-key every request without
`Authorization: Bearer KEY` is refused (401). The port it listens on
(0: the system's choice) is written to --port-file; every request line
(method, path, whether it carried the key) is appended to --log, so a test
can show what specdsl asked of it (POST /reset_prefix_cache included).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = argparse.Namespace()
LOCK = threading.Lock()
COUNT = {"requests": 0}


def _event(obj) -> bytes:
    data = b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def _note(self) -> bool:
        keyed = self.headers.get("Authorization") == f"Bearer {ARGS.api_key}" if ARGS.api_key else True
        if ARGS.log:
            with LOCK, open(ARGS.log, "a") as f:
                f.write(f"{self.command} {self.path} {'key' if keyed else 'nokey'}\n")
        return keyed

    def _plain(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if not self._note():
            return self._plain(401, b'{"error": "unauthorized"}')
        if self.path == "/health":
            self._plain(200, b"{}")
        elif self.path == "/v1/models":
            model = {"id": ARGS.model, "object": "model", "root": ARGS.model, "max_model_len": ARGS.max_model_len}
            self._plain(200, json.dumps({"object": "list", "data": [model]}).encode())
        elif self.path == "/server_info" and ARGS.engine == "sglang":
            info = {"model_path": ARGS.model, "tp_size": 1, "attention_backend": "flashinfer", "version": ARGS.version,
                    "context_length": ARGS.max_model_len, "api_key": ARGS.api_key or None,
                    "internal_states": [{"avg_spec_accept_length": 1.0}]}
            self._plain(200, json.dumps(info).encode())
        elif ARGS.engine == "sglang" and self.path in ("/version", "/metrics"):
            self._plain(404, b"{}")
        elif self.path == "/version":
            self._plain(200, json.dumps({"version": ARGS.version}).encode())
        elif self.path == "/metrics":
            text = ('vllm:cache_config_info{block_size="16",enable_prefix_caching="True",'
                    'gpu_memory_utilization="0.9",num_gpu_blocks="1024"} 1.0\n'
                    f'vllm:request_success_total{{model_name="{ARGS.model}"}} {COUNT["requests"]}\n')
            self._plain(200, text.encode(), "text/plain; version=0.0.4")
        else:
            self._plain(404, b"{}")

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if not self._note():
            return self._plain(401, b'{"error": "unauthorized"}')
        if not self.path.endswith("completions"):
            return self._plain(404, b"{}")
        with LOCK:
            COUNT["requests"] += 1
        start = time.perf_counter()
        chat = self.path.endswith("/chat/completions")
        n = int(req.get("max_tokens") or 16)
        prompt = req.get("prompt") or req.get("messages") or ""
        ptoks = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i in range(n):
            delay = start + (ARGS.ttft_ms + i * ARGS.itl_ms) / 1000 - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            choice = {"index": 0, "finish_reason": "length" if i == n - 1 else None}
            choice.update({"delta": {"content": f" t{i}"}} if chat else {"text": f" t{i}"})
            self.wfile.write(_event({"id": "x", "object": "chunk", "choices": [choice]}))
        usage = {"prompt_tokens": ptoks, "completion_tokens": n, "total_tokens": ptoks + n}
        done = b"data: [DONE]\n\n"
        self.wfile.write(_event({"id": "x", "choices": [], "usage": usage}) + b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))


def main(argv: list[str]) -> int:
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", required=True)
    p.add_argument("--model", default="tiny")
    p.add_argument("--version", default="0.11.0")
    p.add_argument("--max-model-len", type=int, default=2048)
    p.add_argument("--api-key", default="")
    p.add_argument("--ttft-ms", type=float, default=5.0)
    p.add_argument("--itl-ms", type=float, default=1.0)
    p.add_argument("--log", default="")
    p.add_argument("--engine", default="vllm", choices=("vllm", "sglang"))
    ARGS = p.parse_args(argv)
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, ARGS.port_file)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
