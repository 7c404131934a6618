"""TEST DOUBLE of `vllm bench serve` (stdlib only, not vLLM): a client that
sends `--num-prompts` real completions to the server at `--base-url`, asks
the walk double its speed (`GET /speed`) as the run's output throughput,
and with `--save-result` writes its result where `--result-filename` says,
in the format vLLM's own client writes it (vllm/benchmarks/serve.py: one
JSON object, json.dump, no newline; the keys it writes, the latency keys as
`mean_/median_/std_/p99_{ttft,tpot,itl}_ms`).

    python vllm_bench_serve_double.py bench serve --base-url URL --model M
        --num-prompts N [--save-result --result-filename FILE]

Beside vLLM's keys the object holds what the test checks of the process
specdsl started (as `--metadata KEY=VALUE` pairs would be): `python_prefix`
(sys.prefix: the environment whose interpreter ran it) and the variables
`STACK_MARK` and `SERVER_MARK` as it saw them.
"""

import json
import os
import sys
import time
import urllib.request


def opt(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


assert sys.argv[1:3] == ["bench", "serve"], sys.argv
base_url, model, prompts = opt("--base-url"), opt("--model"), int(opt("--num-prompts", "4"))
begun = time.perf_counter()
completed = failed = 0
ttfts = []
for _ in range(prompts):
    body = json.dumps({"model": model, "prompt": "hi", "max_tokens": 4}).encode()
    sent = time.perf_counter()
    try:
        req = urllib.request.Request(base_url + "/v1/completions", data=body, headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            json.load(resp)
        completed += 1
        ttfts.append((time.perf_counter() - sent) * 1000)
    except OSError:
        failed += 1
with urllib.request.urlopen(base_url + "/speed", timeout=10) as resp:
    tps = json.load(resp)["tps"]
duration = time.perf_counter() - begun
ttfts.sort()
median = ttfts[len(ttfts) // 2] if ttfts else float("nan")
result = {
    "date": time.strftime("%Y%m%d-%H%M%S"), "endpoint_type": "openai", "backend": "openai", "label": None,
    "model_id": model, "tokenizer_id": model, "num_prompts": prompts, "request_rate": "inf", "burstiness": 1.0,
    "max_concurrency": None, "duration": duration, "completed": completed, "failed": failed,
    "total_input_tokens": completed, "total_output_tokens": 4 * completed,
    "request_throughput": completed / duration, "request_goodput": None, "output_throughput": tps,
    "total_token_throughput": tps * 1.25, "max_output_tokens_per_s": tps, "max_concurrent_requests": 1, "rtfx": 0.0,
    "mean_ttft_ms": sum(ttfts) / max(1, len(ttfts)), "median_ttft_ms": median, "std_ttft_ms": 0.0, "p99_ttft_ms": ttfts[-1],
    "mean_tpot_ms": float("nan"), "median_tpot_ms": float("nan"), "std_tpot_ms": float("nan"), "p99_tpot_ms": float("nan"),
    "mean_itl_ms": 0.0, "median_itl_ms": 0.0, "std_itl_ms": 0.0, "p99_itl_ms": 0.0,
    "python_prefix": sys.prefix, "STACK_MARK": os.environ.get("STACK_MARK"), "SERVER_MARK": os.environ.get("SERVER_MARK"),
}
print("============ Serving Benchmark Result ============")
print(f"{'Successful requests:':<40} {completed:<10}")
print(f"{'Output token throughput (tok/s):':<40} {tps:<10.2f}")
if "--save-result" in sys.argv:
    with open(opt("--result-filename"), "w", encoding="utf-8") as f:
        json.dump(result, f)  # NaN, as json.dump writes it, for what this client does not measure (TPOT)
