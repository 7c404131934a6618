"""How noisy is one vLLM launch, and where does its noise come from? For the
GPU host (docs/gpu-run.md, "Where the noise came from"): launches of vLLM,
each measured run by run by specdsl's built-in client and by `vllm bench
serve` in turn, with what was happening during each run recorded beside it.

    python3 benchmarks/gpu/noise.py --model /tmp/llama800m --out OUT [--budget 480]
        [--concurrency 16 --input-len 128 --output-len 128 --prompts 256]

Writes OUT/probe.json (every run, with its context) and OUT/noise.json
(per set-up and client: within-launch CV, launch-to-launch sd of the log of
the launch means, the raw figures: the schema of benchmarks/gpu/noise.json).
`vllm bench serve` runs in one worker process per launch
(vllm_bench_worker.py), so a run costs its requests, not vLLM's imports.

Each launch is one set-up (below); inside it, after a warm-up, runs
alternate between the two clients (specdsl, vllm, specdsl, ...), each run
fresh random prompts (by default 256 of 128 tokens in and 128 out at
concurrency 16). Per run it records: the client's figures (output tok/s,
median TTFT and ITL), the GPU's SM clock, power and clock-event reasons
sampled every 200 ms by `nvidia-smi -lms` (the samples inside the run), the
host's CPU busy and steal shares (/proc/stat), the server processes' own
CPU (their /proc/PID/stat), vLLM's prefix-cache counters (/metrics) and
every server log line that names a JIT compile or autotune inside the run.
Prints one line a run.

Set-ups (`--setups`, in order): `base` (as specdsl launched vLLM in the
last sessions), `pinned` (the server's processes on the first half of the
cores, both clients on the other half: taskset), `pinned-nocache`
(`pinned` with `--no-enable-prefix-caching`), and each again (`...-2`,
`...-3`) to see one set-up's launch-to-launch spread.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

COMPILE = re.compile(r"jit_monitor.py:1\d\d\]|JIT compilation during inference|Autotuning process starts|"
                     r"Compiling a graph for|flashinfer\.jit: Loading JIT|Triton kernel JIT", re.I)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class GpuSampler:
    """nvidia-smi -lms 200 into a list of (t, sm MHz, power W, reasons hex, temp C)."""

    FIELDS = "clocks.sm,power.draw,clocks_event_reasons.active,temperature.gpu"

    def __init__(self) -> None:
        self.samples: list[tuple[float, float, float, int, float]] = []
        self.proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={self.FIELDS}", "--format=csv,noheader,nounits",
                                      "-lms", "200"], stdout=subprocess.PIPE, text=True, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                sm, power, reasons, temp = [x.strip() for x in line.split(",")]
                self.samples.append((time.time(), float(sm), float(power), int(reasons, 16), float(temp)))
            except ValueError:
                continue

    def window(self, t0: float, t1: float) -> dict:
        inside = [s for s in self.samples if t0 <= s[0] <= t1]
        if not inside:
            return {"samples": 0}
        sm = [s[1] for s in inside]
        reasons = 0
        for s in inside:
            reasons |= s[3]
        return {"samples": len(inside), "sm_min": min(sm), "sm_median": statistics.median(sm), "sm_max": max(sm),
                "power_median": statistics.median(s[2] for s in inside), "power_max": max(s[2] for s in inside),
                "temp_max": max(s[4] for s in inside), "reasons": hex(reasons),
                "reason_counts": {hex(bit): sum(1 for s in inside if s[3] & bit)
                                  for bit in (0x1, 0x4, 0x8, 0x20, 0x40, 0x80, 0x100) if reasons & bit}}

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)


def cpu_times() -> tuple[float, float, float]:
    """(total, idle, steal) jiffies of the whole machine."""
    with open("/proc/stat") as f:
        parts = [float(x) for x in f.readline().split()[1:]]
    return sum(parts[:8]), parts[3] + parts[4], parts[7]


def session_cpu(sid: int) -> float:
    """CPU seconds used so far by the processes of one session (the server's)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # field 6 of stat: the session id
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


class VllmBench:
    """One `vllm bench serve` worker for a launch (vllm_bench_worker.py)."""

    def __init__(self, cpus: str | None, log: Path) -> None:
        argv = [sys.executable, str(Path(__file__).with_name("vllm_bench_worker.py"))]
        if cpus:
            argv = ["taskset", "-c", cpus] + argv
        self.log = log.open("a")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, start_new_session=True)
        self._answer("READY")

    def _answer(self, marker: str) -> str:
        for line in self.proc.stdout:
            if line.startswith(marker):
                return line[len(marker):].strip()
            self.log.write(line)
        raise RuntimeError(f"vllm bench worker ended (see {self.log.name})")

    def run(self, argv: list[str]) -> dict:
        self.proc.stdin.write(shlex.join(argv) + "\n")
        self.proc.stdin.flush()
        return json.loads(self._answer("RESULT "))

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def prefix_counters(base: str) -> dict[str, float]:
    try:
        text = urllib.request.urlopen(base + "/metrics", timeout=5).read().decode()
    except OSError:
        return {}
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = re.match(r"(vllm:prefix_cache_(?:hits|queries)_total)\{[^}]*\} ([\d.e+]+)", line)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(2))
    return out


def log_lines(log: Path, start: int) -> tuple[list[str], int]:
    data = log.read_bytes()
    return [ln for ln in data[start:].decode(errors="replace").splitlines() if COMPILE.search(ln)], len(data)


def launch(setup: str, args, port: int, log: Path, cpus: tuple[str, str] | None) -> subprocess.Popen:
    argv = [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", args.model, "--host", "127.0.0.1",
            "--port", str(port), "--dtype", "bfloat16", "--gpu-memory-utilization", "0.3",
            "--max-num-seqs", str(max(64, args.concurrency)),
            "--attention-backend", args.backend]
    if "nocache" in setup:
        argv.append("--no-enable-prefix-caching")
    if cpus:
        argv = ["taskset", "-c", cpus[0]] + argv
    return subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def wait_ready(base: str, proc: subprocess.Popen, limit: float) -> float:
    t0 = time.time()
    while time.time() - t0 < limit:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if urllib.request.urlopen(base + "/health", timeout=2).status == 200:
                return time.time() - t0
        except OSError:
            pass
        time.sleep(1)
    raise RuntimeError("not ready")


def specdsl_run(base: str, args, seed: int, out: Path) -> dict:
    from specdsl.bench.loadgen import run_benchmark
    from specdsl.bench.quirks import ClientQuirks
    from specdsl.model.config import Workload

    w = Workload(name="probe", input_len=args.input_len, output_len=args.output_len, requests=args.prompts,
                 concurrency=args.concurrency, runs=1,
                 warmup=0, seed=seed, ignore_eos=True)
    res = run_benchmark(w, base, args.model, out, quirks=ClientQuirks(exact_len="ignore_eos", token_ids=True),
                        tokenizer=args.model)
    m = res.runs[0].metrics
    return {"output_throughput": m["output_throughput"], "median_ttft_ms": m.get("median_ttft_ms"),
            "median_itl_ms": m.get("median_itl_ms"), "failed": m.get("failed"), "client_stats": res.runs[0].client}


def vllm_run(bench: VllmBench, base: str, args, seed: int, prompts: int | None = None) -> dict:
    r = bench.run(["--backend", "vllm", "--base-url", base, "--model", args.model, "--dataset-name", "random",
                   "--random-input-len", str(args.input_len), "--random-output-len", str(args.output_len),
                   "--num-prompts", str(prompts or args.prompts), "--max-concurrency", str(args.concurrency),
                   "--ignore-eos", "--seed", str(seed), "--disable-tqdm", "--percentile-metrics", "ttft,itl",
                   "--ready-check-timeout-sec", "0"])
    if "error" in r:
        return r
    return {"output_throughput": r.get("output_throughput"), "median_ttft_ms": r.get("median_ttft_ms"),
            "median_itl_ms": r.get("median_itl_ms"), "completed": r.get("completed")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--backend", default="TRITON_ATTN")
    ap.add_argument("--setups", default="base,pinned,pinned-nocache")
    ap.add_argument("--runs", type=int, default=4, help="runs of each client per launch")
    ap.add_argument("--prompts", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--budget", type=float, default=480.0, help="seconds: no launch starts after this")
    ap.add_argument("--summarize", type=Path, help="only write OUT/noise.json from this probe.json")
    args = ap.parse_args()
    if args.summarize:
        result = json.loads(args.summarize.read_text())
        config = result.get("config") or {"backend": args.backend, "input_len": 128, "output_len": 128,
                                          "prompts": 256, "concurrency": 16, "gpu-memory-utilization": 0.3}
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "noise.json").write_text(json.dumps(summarize(result, config), indent=1))
        return
    t_start = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    n = os.cpu_count() or 2
    half = (f"0-{n // 2 - 1}", f"{n // 2}-{n - 1}")
    gpu = GpuSampler()
    result = {"machine": {"cpus": n, "gpu": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,"
                                                             "persistence_mode,power.limit,clocks.max.sm",
                                                             "--format=csv,noheader"],
                                                            capture_output=True, text=True).stdout.strip()},
              "launches": [],
              "config": {"backend": args.backend, "model": args.model, "input_len": args.input_len,
                         "output_len": args.output_len, "prompts": args.prompts, "concurrency": args.concurrency,
                         "gpu-memory-utilization": 0.3}}
    try:
        for li, setup in enumerate(args.setups.split(",")):
            if time.time() - t_start > args.budget:
                break
            cpus = half if setup.startswith("pinned") else None
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            folder = args.out / f"launch-{li}-{setup}"
            folder.mkdir(parents=True, exist_ok=True)
            log = folder / "server.log"
            proc = launch(setup, args, port, log, cpus)
            bench = None
            entry = {"setup": setup, "runs": []}
            result["launches"].append(entry)
            try:
                entry["ready_s"] = round(wait_ready(base, proc, 420), 1)
                print(f"== launch {li} {setup}: ready after {entry['ready_s']} s", flush=True)
                bench = VllmBench(cpus[1] if cpus else None, folder / "vllm-bench.log")
                t0 = time.time()
                warm = vllm_run(bench, base, args, 1000 + li)
                entry["warmup"] = {"seconds": round(time.time() - t0, 1), **warm}
                offset = len(log.read_bytes())
                for k in range(2 * args.runs):
                    client = "specdsl" if k % 2 == 0 else "vllm"
                    seed = 10 * li + k
                    before = prefix_counters(base)
                    c0, i0, s0 = cpu_times()
                    p0 = session_cpu(proc.pid)
                    t0 = time.time()
                    if client == "specdsl":
                        if cpus:
                            os.sched_setaffinity(0, range(n // 2, n))
                        got = specdsl_run(base, args, seed, folder / f"run-{k}")
                        os.sched_setaffinity(0, range(n))
                    else:
                        got = vllm_run(bench, base, args, seed)
                    t1 = time.time()
                    c1, i1, s1 = cpu_times()
                    p1 = session_cpu(proc.pid)
                    after = prefix_counters(base)
                    lines, offset = log_lines(log, offset)
                    q = after.get("vllm:prefix_cache_queries_total", 0) - before.get("vllm:prefix_cache_queries_total", 0)
                    h = after.get("vllm:prefix_cache_hits_total", 0) - before.get("vllm:prefix_cache_hits_total", 0)
                    run = {"k": k, "client": client, "t0": t0, "seconds": round(t1 - t0, 2), **got,
                           "gpu": gpu.window(t0, t1), "cpu_busy": round(1 - (i1 - i0) / max(c1 - c0, 1e-9), 3),
                           "cpu_steal": round((s1 - s0) / max(c1 - c0, 1e-9), 4),
                           "server_cpu_cores": round((p1 - p0) / max(t1 - t0, 1e-9), 2),
                           "prefix_hit_rate": round(h / q, 4) if q else None, "compile_lines": lines[:5],
                           "loadavg": Path("/proc/loadavg").read_text().split()[:3]}
                    entry["runs"].append(run)
                    print(f"  run {k} {client:8s} {got.get('output_throughput') or 0:8.1f} tok/s  ttft "
                          f"{got.get('median_ttft_ms') or 0:6.1f}  itl {got.get('median_itl_ms') or 0:5.2f}  "
                          f"sm {run['gpu'].get('sm_median')}  W {run['gpu'].get('power_median')}  reasons "
                          f"{run['gpu'].get('reasons')}  cpu {run['cpu_busy']} steal {run['cpu_steal']} server "
                          f"{run['server_cpu_cores']} cores  hits {run['prefix_hit_rate']}  compiles {len(lines)}",
                          flush=True)
            except Exception as exc:  # a probe: record and go on to the next launch
                entry["error"] = repr(exc)
                print(f"  launch {li} failed: {exc!r}", flush=True)
            finally:
                if bench is not None:
                    bench.stop()
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                (args.out / "probe.json").write_text(json.dumps(result, indent=1))
    finally:
        gpu.stop()
        (args.out / "probe.json").write_text(json.dumps(result, indent=1))
    noise = summarize(result, result["config"])
    (args.out / "noise.json").write_text(json.dumps(noise, indent=1))
    for n in noise:
        print(f"{n['config']['setup']:16s} {n['client']:8s} launches {n['launches']} x {n['runs_per_launch']}: "
              f"within-launch cv {n['within_launch_cv']:.4f}, launch sd {n['launch_sd']}")


def summarize(result: dict, config: dict) -> list[dict]:
    """noise.json's entries: one per set-up (its launches `X`, `X-2`, ...) and client.

    within_launch_cv: the root mean square of each launch's coefficient of
    variation (sd / mean of its runs); launch_sd: the sample sd of the log of
    the launch means (None below 2 launches)."""
    import math

    groups: dict[tuple[str, str], list[list[float]]] = {}
    for e in result["launches"]:
        for r in e["runs"]:  # the first probe's files: the client's own stats overwrote its name
            if isinstance(r["client"], dict):
                r["client_stats"], r["client"] = r["client"], "specdsl"
        family = re.sub(r"-\d+$", "", e["setup"])
        for client in ("specdsl", "vllm"):
            v = [r["output_throughput"] for r in e["runs"] if r["client"] == client and r.get("output_throughput")]
            if len(v) >= 2:
                groups.setdefault((family, client), []).append(v)
    out = []
    for (family, client), launches in groups.items():
        cvs = [statistics.stdev(v) / statistics.mean(v) for v in launches]
        logs = [math.log(statistics.mean(v)) for v in launches]
        out.append({"engine": "vllm", "client": "specdsl" if client == "specdsl" else "vllm bench serve",
                    "within_launch_cv": round(math.sqrt(sum(c * c for c in cvs) / len(cvs)), 4),
                    "launch_sd": round(statistics.stdev(logs), 4) if len(logs) >= 2 else None,
                    "launches": len(launches), "runs_per_launch": min(len(v) for v in launches),
                    "gpu": result["machine"]["gpu"].split(",")[0], "config": {**config, "setup": family},
                    "runs": [[round(x, 1) for x in v] for v in launches]})
    return out


if __name__ == "__main__":
    main()
