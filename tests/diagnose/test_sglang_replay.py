"""Apply, for real, with SGLang doubles that replay the startup lines of
releases 0.5.6 and 0.5.9 (installed as wheels named sglang into real uv
environments, started as SGLang is): each release's log is read with its
own patterns, the log's resolved values stand, each warning names its
experiment and launch once, and the FAIL of the upgrade says why: the
attention backend the server chose itself, first."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest

from specdsl.cli.main import main
from specdsl.state import load_state

HERE = Path(__file__).parent
PROBE = str(HERE.parent / "apply" / "walk_probe.py")


def _sglang_wheel(folder: Path, version: str) -> None:
    dist = f"sglang-{version}.dist-info"
    files = {
        "sglang/__init__.py": f"VERSION = {version!r}\n",
        "sglang/launch_server.py": (HERE / "sglang_double.py").read_text(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{dist}/RECORD"] = "".join(f"{p},,\n" for p in files) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(folder / f"sglang-{version}-py3-none-any.whl", "w") as z:
        for path, text in files.items():
            z.writestr(path, text)


@pytest.fixture
def story(tmp_path, monkeypatch, tmp_path_factory):
    monkeypatch.setenv("SPECDSL_ENV_ROOT", str(tmp_path_factory.mktemp("envs")))
    monkeypatch.chdir(tmp_path)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for version in ("0.5.6", "0.5.9"):
        _sglang_wheel(wheels, version)
    probe = ", ".join(json.dumps(a) for a in [sys.executable, PROBE, "{base_url}"])
    links = json.dumps(str(wheels))
    (tmp_path / "story.spec").write_text(f'''
host "a" {{}}
stack "cu128" {{
  python     = "system"
  find_links = [{links}]
  packages   = ["sglang==0.5.6"]
}}
stack "cu130" {{
  python     = "system"
  find_links = [{links}]
  packages   = ["sglang==0.5.9"]
}}
server "kimi" {{
  engine        = "sglang"
  model         = "m"
  ready_timeout = 30s
}}
workload "decode" {{
  command = [{probe}]
  runs     = 2
  max_runs = 2
  timeout  = 60s
  metric "tps" {{ regex = "tps: ([0-9.]+)" }}
}}
experiment "baseline" {{
  host     = host.a
  stack    = stack.cu128
  server   = server.kimi
  workload = workload.decode
}}
experiment "upgrade" {{
  host     = host.a
  stack    = stack.cu130
  server   = server.kimi
  workload = workload.decode
  baseline = experiment.baseline
  assert "not slower" {{ tps >= baseline.tps * 0.97 }}
}}
''')
    return tmp_path


def test_upgrade_fails_and_says_the_server_chose_triton(story, capsys):
    assert main(["apply", "story.spec", "--yes", "--target", "upgrade"]) == 3
    out = capsys.readouterr().out
    # the short diagnosis under the FAIL: the backend SGLang 0.5.9 chose itself, first
    why = out.split("why, against its baseline (ranked):")[1].splitlines()
    assert why[1].strip().startswith("1. effective.attention_backend: flashinfer -> triton  [server default]")
    # each warning names its experiment and its launch, once (the servers share the block "kimi")
    warnings = [l for l in out.splitlines() if l.startswith("warning:")]
    assert "warning: baseline (benchmark.upgrade launch 0, arm A): attention backend not specified: flashinfer chosen by default" in warnings
    assert "warning: upgrade (benchmark.upgrade launch 1, arm B): attention backend not specified: triton chosen by default" in warnings
    assert sum("DeepGEMM" in w for w in warnings) == 1 and "upgrade (benchmark.upgrade launch 1, arm B): RISK" in out
    assert not any(w.startswith("warning: kimi:") for w in warnings)

    state = load_state(story / ".specdsl")
    run = next(r for r in state.runs if r.step == "benchmark.upgrade" and r.status == "completed")
    doc = json.loads((story / ".specdsl" / run.folder / "result.json").read_text())
    old, new = doc["effective"]["A"], doc["effective"]["B"]
    assert (old["log_patterns"], new["log_patterns"]) == ("sglang 0.5.6", "sglang 0.5.9")
    assert old["attention_backend"] == "flashinfer" and new["attention_backend"] == "triton"
    assert old["kv_cache_dtype"] == new["kv_cache_dtype"] == "torch.bfloat16"  # the log's, not /server_info's 'auto'
    assert old["architecture"] == "LlamaForCausalLM"  # 0.5.6's weight-loading line, without elapsed=

    assert main(["diagnose", "upgrade", "story.spec", "--json"]) == 0
    diffs = json.loads(capsys.readouterr().out)["differences"]
    assert diffs[0]["key"] == "attention_backend" and diffs[0]["silent_default"]
    assert ("stack", "resolved.sglang", "0.5.6", "0.5.9") in {(d["category"], d["key"], d["baseline"], d["candidate"]) for d in diffs}
    assert ("stack", "packages.sglang") in {(d["category"], d["key"]) for d in diffs}
