"""A server that is already running (`server "prod" { url = ... }`), through
the CLI as a user runs it: the test starts the server itself, outside
specdsl (tests/apply/endpoint_double.py: a stdlib server that looks like a
vLLM endpoint from outside, with known timing), then plans and applies a
spec pointed at it. Nothing may be launched, stopped or provisioned; the
results and what the server reports are recorded; the API key reaches the
server and nowhere else."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.apply.apply_helpers import cli_env

DOUBLE = Path(__file__).with_name("endpoint_double.py")
KEY = "sk-endpoint-test-7f3a9c"

SPEC = """\
variable "prod_key" { sensitive = true }

server "prod" {
  url     = "http://127.0.0.1:PORT"
  model   = "tiny"
  api_key = var.prod_key
}

workload "w" {
  requests    = 6
  concurrency = 2
  input_len   = 16
  output_len  = 8
  runs        = 3
  warmup      = 2
}

experiment "prod" {
  server   = server.prod
  workload = workload.w
  assert "ctx"   { effective.max_model_len == 2048 }
  assert "block" { effective.block_size == 16 }
}
"""


class Double:
    """The endpoint double in its own process group, bounded in memory and
    time, stopped by its group."""

    def __init__(self, folder: Path, port: int = 0, version: str = "0.11.0", key: str = KEY, itl_ms: float = 1.0,
                 name: str = "requests", engine: str = "vllm") -> None:
        self.folder = folder
        self.port_file = folder / f"port-{time.monotonic_ns()}"
        self.log = folder / f"{name}.log"
        limits = "import resource; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", f"{limits}; import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')",
             str(DOUBLE), "--port", str(port), "--port-file", str(self.port_file), "--version", version,
             "--api-key", key, "--log", str(self.log), "--itl-ms", str(itl_ms), "--ttft-ms", "20", "--engine", engine],
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while not self.port_file.exists():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("the endpoint double did not start")
            time.sleep(0.05)
        self.port = int(self.port_file.read_text())

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)


def run(folder: Path, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "specdsl.cli.main", *map(str, args)], cwd=folder, capture_output=True,
                          text=True, timeout=timeout, env=cli_env(SPECDSL_VAR_prod_key=KEY, NO_COLOR="1"))


def written(folder: Path) -> str:
    """Everything specdsl wrote in the state folder, as text."""
    return "\n".join(p.read_text(errors="replace") for p in (folder / ".specdsl").rglob("*") if p.is_file())


@pytest.fixture
def endpoint(tmp_path):
    double = Double(tmp_path)
    (tmp_path / "prod.spec").write_text(SPEC.replace("PORT", str(double.port)))
    yield double
    double.stop()


def test_plan_apply_and_replan_of_a_running_server(tmp_path, endpoint):
    url = f"http://127.0.0.1:{endpoint.port}"
    plan = run(tmp_path, "plan", "prod.spec")
    assert plan.returncode == 0, plan.stderr
    assert f"existing server at {url}: nothing is launched or stopped" in plan.stdout
    assert "it reports vllm 0.11.0, model tiny, max_model_len 2048" in plan.stdout
    assert "launch." not in plan.stdout and "provision." not in plan.stdout and "teardown." not in plan.stdout
    doc = json.loads(run(tmp_path, "plan", "prod.spec", "--json").stdout)
    bench = next(c for c in doc["changes"] if c["addr"] == "benchmark.prod")
    assert bench["endpoint"] == {"url": url, "launched": False,
                                 "reported": {"engine": "vllm", "version": "0.11.0", "model": "tiny", "max_model_len": 2048}}
    assert [c["kind"] for c in doc["changes"]].count("launch") == 0

    applied = run(tmp_path, "apply", "prod.spec", "--yes")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "0 server launches" in applied.stdout
    assert "checks: 2 passed" in applied.stdout
    assert "Traceback" not in applied.stderr

    state = run(tmp_path, "state", "list", "prod.spec", "--servers")
    assert "benchmark.prod" in run(tmp_path, "state", "list", "prod.spec").stdout
    assert "launch" not in state.stdout
    shown = run(tmp_path, "state", "show", "benchmark.prod", "prod.spec").stdout
    assert 'url = "http://127.0.0.1:' in shown
    from specdsl.state.statefile import load_state

    recorded = load_state(tmp_path / ".specdsl")
    assert not recorded.servers and not recorded.environments  # nothing launched, nothing provisioned
    result = recorded.result(next(s.identity for s in recorded.steps if s.addr == "benchmark.prod"))
    effective, metrics = dict(result.effective), dict(result.metrics)
    assert result.runs == 3 and metrics["output_throughput"] > 0
    assert effective["endpoint.version"] == "0.11.0"
    assert effective["max_model_len"] == 2048 and effective["block_size"] == 16
    # the key reached the server (every request carried it) and nothing specdsl wrote or said
    lines = endpoint.log.read_text().splitlines()
    assert lines and all(line.endswith(" key") for line in lines)
    assert sum("/v1/completions" in line for line in lines) == 3 * 6 + 2
    assert not any("reset_prefix_cache" in line for line in lines)  # a server others use: its cache is not emptied
    for text in (plan.stdout, plan.stderr, applied.stdout, applied.stderr, shown, written(tmp_path)):
        assert KEY not in text

    again = run(tmp_path, "plan", "prod.spec", "--detailed-exitcode")
    assert again.returncode == 0, again.stdout
    assert "No changes" in again.stdout


def test_a_changed_server_no_longer_matches_its_recorded_result(tmp_path, endpoint):
    assert run(tmp_path, "apply", "prod.spec", "--yes").returncode == 0
    port = endpoint.port
    endpoint.stop()
    upgraded = Double(tmp_path, port=port, version="0.12.0")
    try:
        plan = run(tmp_path, "plan", "prod.spec", "--detailed-exitcode")
        assert plan.returncode == 2, plan.stdout + plan.stderr
        assert "no longer matches: the server at" in plan.stdout
        assert 'version: "0.11.0" -> "0.12.0"' in plan.stdout
        applied = run(tmp_path, "apply", "prod.spec", "--yes")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        # measured afresh against the new server: 3 runs of 6 requests and the warm-up, nothing carried over
        assert sum("/v1/completions" in line for line in upgraded.log.read_text().splitlines()) == 2 * (3 * 6 + 2)
        assert "No changes" in run(tmp_path, "plan", "prod.spec").stdout
    finally:
        upgraded.stop()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_server(tmp_path):
    port = _closed_port()
    (tmp_path / "prod.spec").write_text(SPEC.replace("PORT", str(port)))
    assert run(tmp_path, "validate", "prod.spec").returncode == 0
    plan = run(tmp_path, "plan", "prod.spec")
    assert plan.returncode == 0, plan.stderr
    assert "refresh: it does not answer: connection refused (the spec is valid" in plan.stdout
    doc = json.loads(run(tmp_path, "plan", "prod.spec", "--json").stdout)
    assert next(c for c in doc["changes"] if c["addr"] == "benchmark.prod")["endpoint"]["refresh_error"] == \
        "does not answer: connection refused"
    offline = run(tmp_path, "plan", "prod.spec", "--no-refresh")
    assert "nothing is launched or stopped (not asked: --no-refresh)" in offline.stdout
    applied = run(tmp_path, "apply", "prod.spec", "--yes")
    assert applied.returncode == 5, applied.stdout + applied.stderr
    assert f"existing server: http://127.0.0.1:{port} does not answer: connection refused" in applied.stdout + applied.stderr
    assert "Traceback" not in applied.stdout + applied.stderr


def test_a_refused_key_fails_the_step_and_is_not_said(tmp_path):
    double = Double(tmp_path, key="another-key-entirely")
    try:
        (tmp_path / "prod.spec").write_text(SPEC.replace("PORT", str(double.port)))
        applied = run(tmp_path, "apply", "prod.spec", "--yes")
        assert applied.returncode == 5
        assert "refused the request (401): check `api_key`" in applied.stdout + applied.stderr
        assert KEY not in applied.stdout + applied.stderr + written(tmp_path)
    finally:
        double.stop()


def test_credentials_in_the_url_are_sent_and_never_written(tmp_path):
    password = "pw-in-the-url-91c2"
    double = Double(tmp_path, key="")
    try:
        spec = SPEC.replace('variable "prod_key" { sensitive = true }\n\n', "").replace("  api_key = var.prod_key\n", "")
        (tmp_path / "prod.spec").write_text(spec.replace("http://127.0.0.1:PORT", f"http://bench:{password}@127.0.0.1:{double.port}"))
        plan = run(tmp_path, "plan", "prod.spec")
        assert f"existing server at http://127.0.0.1:{double.port}: nothing is launched" in plan.stdout
        applied = run(tmp_path, "apply", "prod.spec", "--yes")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        for text in (plan.stdout, plan.stderr, applied.stdout, applied.stderr, written(tmp_path)):
            assert password not in text
    finally:
        double.stop()


@pytest.mark.parametrize("body, summary, where", [
    ('url = "http://h:8000"\n  model = "m"\n  args = { tp-size = 2 }', "`args` cannot go with `url`", "5:3"),
    ('url = "h:8000"\n  model = "m"', "`url` is not a server's address", "3:3"),
    ('url = "http://h:8000/v1"\n  model = "m"', "`url` is not a server's address: it ends with `/v1`", "3:3"),
    ('url = "http://h:8000"\n  model = "m"\n  engine = "command"', '`engine = "command"` cannot go with `url`', "5:3"),
    ('url = "http://u:p@h:8000"\n  model = "m"\n  api_key = "k1234"', "`api_key` cannot go with credentials in `url`", "5:3"),
    ('model = "m"\n  api_key = "k1234"', "`api_key` needs `url`", "4:3"),
])
def test_contradictions_are_located(tmp_path, body, summary, where):
    (tmp_path / "s.spec").write_text(f'\nserver "p" {{\n  {body}\n}}\n\nworkload "w" {{}}\n\n'
                                     'experiment "e" {\n  server   = server.p\n  workload = workload.w\n}\n')
    out = run(tmp_path, "validate", "s.spec")
    assert out.returncode == 1
    assert f"s.spec:{where}: error: {summary}" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_a_host_it_is_not_on_and_a_stack_it_does_not_use(tmp_path):
    (tmp_path / "s.spec").write_text(
        'host "gpu" { ssh = "bench@gpu8" }\n\nstack "s" {}\n\n'
        'server "p" {\n  url   = "http://h:8000"\n  model = "m"\n}\n\nworkload "w" {}\n\n'
        'experiment "e" {\n  host     = host.gpu\n  stack    = stack.s\n  server   = server.p\n  workload = workload.w\n}\n')
    out = run(tmp_path, "validate", "s.spec")
    assert out.returncode == 1
    assert "s.spec:13:14: error: A server that is already running is not on a host specdsl drives" in out.stderr
    assert "s.spec:14:14: warning: The stack is not used" in out.stderr


PAIRED = """\
variable "prod_key" { sensitive = true }

server "prod" {
  url     = "http://127.0.0.1:PROD"
  model   = "tiny"
  api_key = var.prod_key
}

server "canary" {
  url     = "http://127.0.0.1:CANARY"
  model   = "tiny"
  api_key = var.prod_key
}

workload "w" {
  requests    = 4
  concurrency = 2
  input_len   = 16
  output_len  = 8
  runs        = 2
  warmup      = 2
}

experiment "prod" {
  server   = server.prod
  workload = workload.w
}

experiment "canary" {
  server   = server.canary
  workload = workload.w
  baseline = experiment.prod
  assert "faster" { output_throughput >= baseline.output_throughput * 1.01 }
}
"""


def test_two_running_servers_alternate_their_runs(tmp_path):
    prod = Double(tmp_path, itl_ms=4, name="prod")
    canary = Double(tmp_path, itl_ms=8, name="canary")  # twice as slow between tokens
    try:
        (tmp_path / "pair.spec").write_text(PAIRED.replace("PROD", str(prod.port)).replace("CANARY", str(canary.port)))
        plan = run(tmp_path, "plan", "pair.spec")
        assert plan.returncode == 0, plan.stderr
        assert "paired with prod, both servers already running: runs alternate ABBA (no launch: the run is the unit)" in plan.stdout
        assert f"existing server at http://127.0.0.1:{prod.port} (baseline): nothing is launched or stopped" in plan.stdout
        assert f"existing server at http://127.0.0.1:{canary.port} (candidate): nothing is launched or stopped" in plan.stdout
        assert "0 launches" in plan.stdout
        applied = run(tmp_path, "apply", "pair.spec", "--yes")
        assert applied.returncode == 3, applied.stdout + applied.stderr  # a confident FAIL: it is slower
        assert "pairs of runs (ABBA) on two servers already running, nothing launched" in applied.stdout + applied.stderr
        assert "0 server launches" in applied.stdout
        from specdsl.state.statefile import load_state

        state = load_state(tmp_path / ".specdsl")
        assert not state.servers and not state.environments
        run_ = state.result(next(s.identity for s in state.steps if s.addr == "benchmark.canary"))
        doc = json.loads((tmp_path / ".specdsl" / run_.folder / "result.json").read_text())
        assert doc["design"] == "endpoint-runs" and doc["launches"] == []
        orders = ["".join(b["arm"] for b in p["blocks"]) for p in doc["pairs"]]
        assert len(orders) >= 2 and orders[:4] == ["AB", "BA", "BA", "AB"][:len(orders[:4])]
        assert all(len(b["runs"]) == 1 for p in doc["pairs"] for b in p["blocks"])
        # each server got its warm-up and one run of 4 requests a pair, nothing else
        n = len(doc["pairs"])
        for double in (prod, canary):
            lines = double.log.read_text().splitlines()
            assert sum("/v1/completions" in line for line in lines) == 2 + 4 * n
            assert all(line.endswith(" key") for line in lines)
        assert KEY not in applied.stdout + applied.stderr + written(tmp_path)
        assert "No changes" in run(tmp_path, "plan", "pair.spec").stdout
    finally:
        prod.stop()
        canary.stop()


def test_one_launched_arm_and_one_running_is_an_error(tmp_path):
    (tmp_path / "s.spec").write_text(
        'server "live" {\n  url   = "http://h:8000"\n  model = "m"\n}\n\n'
        'server "mine" {\n  engine = "vllm"\n  model  = "m"\n}\n\nstack "s" {}\n\nworkload "w" {}\n\n'
        'experiment "live" {\n  server   = server.live\n  workload = workload.w\n}\n\n'
        'experiment "mine" {\n  stack    = stack.s\n  server   = server.mine\n  workload = workload.w\n'
        '  baseline = experiment.live\n}\n')
    out = run(tmp_path, "validate", "s.spec")
    assert out.returncode == 1
    assert "s.spec:24:14: error: A paired comparison needs both arms launched or both already running" in out.stderr


def test_what_an_sglang_server_reports(tmp_path):
    double = Double(tmp_path, engine="sglang", version="0.5.9")
    try:
        spec = SPEC.replace('assert "ctx"   { effective.max_model_len == 2048 }\n  assert "block" { effective.block_size == 16 }',
                            'assert "backend" { effective.attention_backend == "flashinfer" }\n'
                            '  assert "tp" { effective.tp_size == 1 }')
        (tmp_path / "prod.spec").write_text(spec.replace("PORT", str(double.port)))
        plan = run(tmp_path, "plan", "prod.spec")
        assert "it reports sglang 0.5.9, model tiny, max_model_len 2048" in plan.stdout, plan.stdout + plan.stderr
        applied = run(tmp_path, "apply", "prod.spec", "--yes")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert "checks: 2 passed" in applied.stdout
        assert KEY not in written(tmp_path)  # /server_info reports the server's api_key: removed
    finally:
        double.stop()


def test_the_key_reaches_the_client_and_its_worker_processes_as_an_argument(tmp_path, monkeypatch):
    """The key goes to the load generator as an argument and to its worker
    processes on their stdin: never through this process's environment,
    where any process started meanwhile (a server launched by a parallel
    step) would inherit it, nor a worker's environment or command line.
    The double refuses a request without the key, so every completed
    request is the key delivered; nothing written under the run's folder
    (records, the workers' logs) holds it."""
    from specdsl import bench
    from specdsl.model.config import Workload
    from specdsl.servers import adapter_for

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    double = Double(tmp_path)
    seen: list[tuple[str, bool]] = []

    def progress(msg: str) -> None:
        seen.append(("environment", KEY in "\n".join(f"{k}={v}" for k, v in os.environ.items())))
        if msg.startswith("client: ") and "pids " in msg:
            for pid in msg.split("pids ", 1)[1].rstrip(")").split(", "):
                for part in ("environ", "cmdline"):
                    seen.append((f"worker {pid} {part}", KEY.encode() in Path(f"/proc/{pid}/{part}").read_bytes()))

    try:
        w = Workload(name="w", input_len=8, output_len=4, requests=4, concurrency=2, warmup=2, runs=1,
                     client_processes=2, timeout=20.0)
        out = tmp_path / "run"
        result = bench.run_benchmark(w, f"http://127.0.0.1:{double.port}", "tiny", out,
                                     quirks=adapter_for("vllm").quirks, progress=progress,
                                     authorization=f"Bearer {KEY}")
    finally:
        double.stop()
    assert result.runs[0].metrics["completed"] == 4, result.runs[0].metrics
    workers = [name for name, _ in seen if name.startswith("worker")]
    if sys.platform.startswith("linux"):
        assert len(workers) == 4, seen  # two workers, each read: the check ran
    assert not [name for name, leaked in seen if leaked], seen
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name.startswith("client-process-") for p in files), files
    assert not [p for p in files if KEY in p.read_text(errors="replace")]
