"""What running over SSH costs, on loopback: a real sshd started here
(tests/hosts/ssh/sshd.py: keys made per run, a non-default port, a host
alias in its own ssh config), so only ssh's own overhead is measured.

    python benchmarks/bench_ssh.py ttft [--reps 5] [--requests 32] [--ttft-ms 40] [--itl-ms 8] [--concurrency 1,8]
    python benchmarks/bench_ssh.py quickstart

`ttft`: the known-timing double (tests/bench/timed_server.py) runs on the
host; specdsl's client measures it directly (what a client running on the
host sees: on loopback, the host is this machine) and through the port the
ssh master forwards (`SshHost.reach`), interleaved, `--reps` times per
concurrency. Reported: each path's median TTFT and ITL, and the paired
difference forward - direct (median over reps, with its range).

`quickstart`: examples/quickstart applied once on this machine and once
with its experiments on the loopback ssh host (each with a fresh state
folder; environments already built are reused by identity on both sides),
wall time of each. One run each: a rough figure, not a distribution.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hosts" / "ssh"))

from sshd import Sshd  # noqa: E402  (the test helper)

from specdsl.bench import run_benchmark  # noqa: E402
from specdsl.hosts.ssh import SshHost  # noqa: E402
from specdsl.model.config import Workload  # noqa: E402
from specdsl.servers import adapter_for  # noqa: E402

KEYS = ("median_ttft_ms", "median_itl_ms")


def ttft(a) -> dict:
    levels = [int(c) for c in a.concurrency.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        sshd = Sshd(Path(tmp) / "sshd")
        (Path(tmp) / "sshd").mkdir()
        sshd.start()
        host = SshHost("specdsl-test", name="loop", workdir=str(Path(tmp) / "wd"), config=str(sshd.config))
        try:
            port = host.free_port()
            handle = host.start([sys.executable, str(ROOT / "tests" / "bench" / "timed_server.py"), "--port", str(port),
                                 "--ttft-ms", str(a.ttft_ms), "--itl-ms", str(a.itl_ms)],
                                log_path=host.workdir / "double" / "server.log")
            deadline = time.monotonic() + 30
            while host.port_free(port):
                assert time.monotonic() < deadline, "the double did not listen"
                time.sleep(0.1)
            here, fwd = host.reach(port)
            bases = {"direct": f"http://127.0.0.1:{port}", "forward": f"http://{here}:{fwd}"}
            rows: dict[int, list[dict]] = {c: [] for c in levels}
            for rep in range(a.reps):
                for c in levels:
                    w = Workload(name="ssh", input_len=16, output_len=a.output_len, requests=a.requests, concurrency=c,
                                 warmup=c, timeout=60.0)
                    pair = {}
                    for who in (("direct", "forward") if rep % 2 == 0 else ("forward", "direct")):
                        m = run_benchmark(w, bases[who], "timed", Path(tmp) / f"{rep}-{c}-{who}",
                                          quirks=adapter_for("vllm").quirks).runs[0].metrics
                        assert m["completed"] == a.requests, m
                        pair[who] = {k: m[k] for k in KEYS}
                    rows[c].append(pair)
                    print(f"rep {rep} c={c}: " + "  ".join(
                        f"{k} {pair['direct'][k]:.3f}/{pair['forward'][k]:.3f}" for k in KEYS), flush=True)
            host.stop(handle, grace_s=5)
        finally:
            host.close()
            sshd.stop()
    med = statistics.median
    out = {"args": vars(a), "load": os.getloadavg()[0], "levels": {}}
    for c, pairs in rows.items():
        out["levels"][str(c)] = {k: {"direct": med(p["direct"][k] for p in pairs), "forward": med(p["forward"][k] for p in pairs),
                                     "diff": med(p["forward"][k] - p["direct"][k] for p in pairs),
                                     "diff_min": min(p["forward"][k] - p["direct"][k] for p in pairs),
                                     "diff_max": max(p["forward"][k] - p["direct"][k] for p in pairs)} for k in KEYS}
    return out


def quickstart(_a) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        sshd = Sshd(Path(tmp) / "sshd")
        (Path(tmp) / "sshd").mkdir()
        sshd.start()
        try:
            for where in ("local", "ssh"):
                folder = Path(tmp) / where
                shutil.copytree(ROOT / "examples" / "quickstart", folder, ignore=shutil.ignore_patterns(".specdsl", "stacks"))
                spec = folder / "quickstart.spec"
                env = dict(os.environ, PYTHONPATH=str(ROOT))
                if where == "ssh":
                    text = spec.read_text()
                    text = re.sub(r'(experiment "\w+" \{\n)', r"\1  host = host.loop\n", text)
                    wd = Path(os.environ.get("SPECDSL_TEST_ENV_CACHE") or Path.home() / ".cache/specdsl/test-envs") / "ssh-workdir"
                    spec.write_text(f'host "loop" {{\n  ssh = "specdsl-test"\n  workdir = "{wd}"\n}}\n' + text)
                    env["SPECDSL_SSH_CONFIG"] = str(sshd.config)
                started = time.monotonic()
                done = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", "quickstart.spec", "--yes"],
                                      cwd=folder, env=env, capture_output=True, text=True, timeout=1800)
                wall = time.monotonic() - started
                tail = done.stdout.strip().splitlines()
                summary = next((line for line in tail if line.startswith("Apply finished")), "")
                out[where] = {"wall_s": round(wall, 1), "rc": done.returncode, "summary": summary}
                print(where, out[where], flush=True)
                if done.returncode not in (0,):
                    print(done.stdout[-3000:], done.stderr[-3000:])
        finally:
            sshd.stop()
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    t = sub.add_parser("ttft")
    t.add_argument("--reps", type=int, default=5)
    t.add_argument("--requests", type=int, default=32)
    t.add_argument("--output-len", type=int, default=32)
    t.add_argument("--ttft-ms", type=float, default=40.0)
    t.add_argument("--itl-ms", type=float, default=8.0)
    t.add_argument("--concurrency", default="1,8")
    sub.add_parser("quickstart")
    a = p.parse_args()
    result = ttft(a) if a.what == "ttft" else quickstart(a)
    print(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
