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
The server is tests/http_double.py's; this file is the engine it looks like.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from http_double import JSON, PROMETHEUS, Double, Request  # noqa: E402  (tests/http_double.py)

ARGS = argparse.Namespace()
LOCK = threading.Lock()


def guard(method: str, path: str, headers) -> tuple[int, bytes, str] | None:
    """Every request noted in the log; one without the key refused; a POST
    that is not a completion is not there."""
    keyed = headers.get("Authorization") == f"Bearer {ARGS.api_key}" if ARGS.api_key else True
    if ARGS.log:
        with LOCK, open(ARGS.log, "a") as f:
            f.write(f"{method} {path} {'key' if keyed else 'nokey'}\n")
    if not keyed:
        return 401, b'{"error": "unauthorized"}', JSON
    if method == "POST" and not path.endswith("completions"):
        return 404, b"{}", JSON
    return None


def prompt_tokens(body: dict) -> int:
    prompt = body.get("prompt") or body.get("messages") or ""
    return len(prompt) if isinstance(prompt, list) else len(str(prompt).split())


def endpoints(double: Double) -> dict:
    """What vLLM (or with --engine sglang, SGLang) answers besides completions."""
    def answer(obj):
        return lambda: (200, json.dumps(obj).encode(), JSON)

    model = {"id": ARGS.model, "object": "model", "root": ARGS.model, "max_model_len": ARGS.max_model_len}
    get = {"/health": lambda: (200, b"{}", JSON), "/v1/models": answer({"object": "list", "data": [model]})}
    if ARGS.engine == "sglang":
        get["/server_info"] = answer({"model_path": ARGS.model, "tp_size": 1, "attention_backend": "flashinfer",
                                      "version": ARGS.version, "context_length": ARGS.max_model_len,
                                      "api_key": ARGS.api_key or None, "internal_states": [{"avg_spec_accept_length": 1.0}]})
        return get  # no /version, no /metrics
    get["/version"] = answer({"version": ARGS.version})
    get["/metrics"] = lambda: (200, ('vllm:cache_config_info{block_size="16",enable_prefix_caching="True",'
                                     'gpu_memory_utilization="0.9",num_gpu_blocks="1024"} 1.0\n'
                                     f'vllm:request_success_total{{model_name="{ARGS.model}"}} {double.requests}\n').encode(),
                               PROMETHEUS)
    return get


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

    def timing(request: Request) -> tuple[float, float]:
        return ARGS.ttft_ms / 1000, ARGS.itl_ms / 1000

    double = Double(timing=timing, guard=guard, prompt_tokens=prompt_tokens, backlog=5)
    double.get = endpoints(double)

    def listening():
        tmp = ARGS.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(double.port))
        os.replace(tmp, ARGS.port_file)

    double.serve(ARGS.port, announce=None, on_listen=listening)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
