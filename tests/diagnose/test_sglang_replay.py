"""Apply, for real, with SGLang doubles that replay the startup lines of
releases 0.5.6 and 0.5.9 (installed as wheels named sglang into real uv
environments, started as SGLang is), beside torch and flashinfer doubles of
the story's two stacks (cu128: torch 2.8.0, CUDA 12.8, NCCL 2.26.2;
cu130: torch 2.9.1, CUDA 13.0, NCCL 2.27.7) and their environment
variables: each release's log is read with its own patterns, the log's
resolved values stand, each warning names its experiment and launch once,
the FAIL of the upgrade says why (the attention backend the server chose
itself, first), and `specdsl diagnose` reads as the story does, in the
story's size."""

from __future__ import annotations

import hashlib
import html
import json
import math
import re
import sys
import zipfile
from pathlib import Path

import pytest

from specdsl.cli.main import main
from specdsl.state import load_state

HERE = Path(__file__).parent
PROBE = str(HERE.parent / "apply" / "walk_probe.py")


def _sglang_wheel(folder: Path, version: str) -> None:
    _wheel(folder, "sglang", version, {
        "sglang/__init__.py": f"VERSION = {version!r}\n",
        "sglang/launch_server.py": (HERE / "sglang_double.py").read_text(),
    })


def _torch_wheel(folder: Path, version: str, cuda: str, nccl: tuple[int, ...]) -> None:
    """A torch double: what specdsl's environment probe reads (version, CUDA, NCCL)."""
    _wheel(folder, "torch", version, {
        "torch/__init__.py": f"__version__ = {version!r}\nfrom torch import cuda, version\n",
        "torch/version.py": f"cuda = {cuda!r}\n",
        "torch/cuda/__init__.py": "from torch.cuda import nccl\n",
        "torch/cuda/nccl.py": f"def version():\n    return {nccl!r}\n",
    })


def _wheel(folder: Path, name: str, version: str, files: dict[str, str]) -> None:
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    files = {
        **files,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{dist}/RECORD"] = "".join(f"{p},,\n" for p in files) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl", "w") as z:
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
    _torch_wheel(wheels, "2.8.0+cu128", "12.8", (2, 26, 2))
    _torch_wheel(wheels, "2.9.1+cu130", "13.0", (2, 27, 7))
    for version in ("0.5.3", "0.6.4"):
        _wheel(wheels, "flashinfer-python", version, {"flashinfer/__init__.py": f"__version__ = {version!r}\n"})
    probe = ", ".join(json.dumps(a) for a in [sys.executable, PROBE, "{base_url}"])
    links = json.dumps(str(wheels))
    (tmp_path / "story.spec").write_text(f'''
host "a" {{}}
stack "cu128" {{
  python     = "system"
  find_links = [{links}]
  packages   = ["sglang==0.5.6", "torch==2.8.0+cu128", "flashinfer-python==0.5.3"]
  env        = {{ CUDA_HOME = "/usr/local/cuda-12.8" }}
}}
stack "cu130" {{
  python     = "system"
  find_links = [{links}]
  packages   = ["sglang==0.5.9", "torch==2.9.1+cu130", "flashinfer-python==0.6.4"]
  env        = {{ CUDA_HOME = "/usr/local/cuda-13.0", TRITON_PTXAS_PATH = "/usr/local/cuda-13.0/bin/ptxas" }}
}}
server "kimi" {{
  engine        = "sglang"
  model         = "m"
  ready_timeout = 30s
}}
workload "decode" {{
  command = [{probe}]
  runs     = 3
  max_runs = 3
  block    = 1
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
  assert "within 15%" {{ tps >= baseline.tps * 0.85 }}
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
    doc = json.loads(capsys.readouterr().out)
    diffs = doc["differences"]
    assert diffs[0]["key"] == "attention_backend" and diffs[0]["silent_default"]
    assert ("stack", "resolved.sglang", "0.5.6", "0.5.9") in {(d["category"], d["key"], d["baseline"], d["candidate"]) for d in diffs}
    # the declared requirement is said by the resolved version's line, and still bisectable
    hidden = {(d["category"], d["key"]): d for d in doc["hidden"]}
    assert hidden[("stack", "packages.sglang")]["hidden"] == "said by stack.resolved.sglang"
    assert hidden[("stack", "packages.sglang")]["bisectable"]

    # the story's diagnosis, in the story's size: from state alone (what the
    # step records say each arm declared) and with the spec, the same lines
    assert main(["diagnose", "upgrade"]) == 0
    text = capsys.readouterr().out
    numbered = [l.strip() for l in text.splitlines() if re.match(r"\s+\d+\. ", l)]
    # the story's four facts, its environment, the other resolved versions and, in one line, the flags 0.5.9 added
    assert len(numbered) == 10, text
    expected = [
        '1. effective.attention_backend: flashinfer -> triton  [server default]  '
        'log: "Attention backend not specified. Use triton backend by default."',
        "2. log (candidate only, 3 of 3 launches: 1, 2, 4): RISK: Blackwell + DeepGEMM",
        "3. stack.resolved.sglang: 0.5.6 -> 0.5.9  (the serving engine itself; declared sglang==0.5.6 -> sglang==0.5.9)",
        "4. env.CUDA_HOME: /usr/local/cuda-12.8 -> /usr/local/cuda-13.0",
        "5. env.TRITON_PTXAS_PATH: (unset) -> /usr/local/cuda-13.0/bin/ptxas",
        "6. stack.resolved.flashinfer-python: 0.5.3 -> 0.6.4",
        "7. stack.resolved.torch: 2.8.0+cu128 -> 2.9.1+cu130",
        "8. stack.resolved.torch.cuda: 12.8 -> 13.0",
        "9. stack.resolved.torch.nccl: 2.26.2 -> 2.27.7",
        "10. sglang 0.5.9 adds 6 flags, all at their defaults: disable_flashinfer_autotune=false, enable_dynamic_chunking=false, "
        "enable_fused_qk_norm_rope=false, fp8_gemm_runner_backend=auto, mamba_backend=triton, pp_async_batch_depth=0",
    ]
    for line, start in zip(numbered, expected):
        assert line.startswith(start), (line, start)
    assert "DeepGemm is enabled but the scale_fmt of checkpoint is not ue8m0" in numbered[1]
    # each fact once (an engine's internal_states record of a flag is the flag), no quote over 200 characters
    assert not any("internal_states.enable_dynamic_chunking" in l or "internal_states.mamba_backend" in l for l in numbered)
    assert all(len(q) <= 200 for q in re.findall(r'log: "([^"]*)"', text))
    assert "server_args=ServerArgs(" not in text
    # each arm's figures say what they are: the median of that arm's runs of this paired run
    assert f"(each figure: baseline: median of the arm's runs (arm A: 3 runs of paired benchmark run {run.id}); " \
           f"candidate: median of the arm's runs (arm B: 3 runs of paired benchmark run {run.id}))" in text
    # noise (ports, seeds, a runtime gauge: each launch its own) and what another line says, counted, not listed
    hidden = next(l for l in text.splitlines() if l.startswith("Hidden:"))
    assert hidden == ("Hidden: 4 that differ between launches of one configuration (effective.internal_states.last_gen_throughput, "
                      "effective.nccl_port, effective.port, effective.random_seed); 12 said by another line (--all shows them)")
    assert "internal_states:" not in text and "{" not in "".join(numbered)  # compared field by field, never as a blob
    assert main(["diagnose", "upgrade", "story.spec"]) == 0
    with_spec = capsys.readouterr().out
    assert [l.strip() for l in with_spec.splitlines() if re.match(r"\s+\d+\. ", l)] == numbered
    assert main(["diagnose", "upgrade", "story.spec", "--all"]) == 0
    every = capsys.readouterr().out.split("Hidden (16):\n")[1]
    assert "  - effective.internal_states.mamba_backend: (unset) -> triton" in every and "[said by effective.mamba_backend]" in every
    assert "  - effective.random_seed: " in every and "[noise: differs between launches of one configuration]" in every
    assert "  - stack.packages.sglang: sglang==0.5.6 -> sglang==0.5.9" in every and "[said by stack.resolved.sglang]" in every

    # the page a team attaches to the release, opened in headless Chromium:
    # the undecided check says what would decide it, every fact is on it
    page_file = story / "upgrade.html"
    assert main(["report", "upgrade", "story.spec", "-o", str(page_file)]) == 0
    capsys.readouterr()
    page = page_file.read_text()
    plain = html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]*"', "", page)))
    check = next(r for r in state.runs if r.step == "check.upgrade.within 15%")
    detail = check.verdict.detail
    need = check.verdict.needed
    assert f"a decision would need about {need} pairs" in detail and not check.verdict.needed_beyond
    per_pair = (_time(run.finished) - _time(run.started)) / 3
    row = re.search(r'<tr class="inconclusive"><td>within 15%</td>.*?</tr>', page).group(0)
    assert ">INCONCLUSIVE<" in row and ">3 pairs<" in row and "&gt;= 0.85" in row
    # Holm's level (2.5%), of which a one-look design spends 0.8 (the rest kept for
    # pairs past max_runs, docs/verdicts.md) less the simulation's safety margin: both ends
    # (1 - 2 alpha from the recorded level, 98.024%: 96.05%, not twice the rounded 98.02)
    assert "two-sided 96.05% confidence interval (its two ends are one-sided 98.02% bounds" in row
    assert "geometric mean of the pair ratios (candidate / baseline, 3 pairs)" in row
    decide = re.search(r'<p class="problem decide" data-check="within 15%">.*?</p>', page).group(0)
    assert f"about {need} pairs, {need - 3} more than the 3 measured, about " in html.unescape(decide)
    assert f"at this run's {per_pair:.0f} s per pair" in html.unescape(decide)
    # each pair's ratio as a number, with the launches it was measured on
    pairs = page[page.index('<h3 class="pairs" data-check="within 15%">'):]
    rows = re.findall(r'<tr><td class="num">(\d)</td><td class="num">launch (\d)</td><td class="num">launch (\d)</td>'
                      r'<td class="num">([\d.]+)</td><td class="num">([\d.]+)</td><td class="num">([\d.]+)</td></tr>', pairs)
    doc = json.loads((story / ".specdsl" / run.folder / "result.json").read_text())
    launches = [(str(p["pair"] + 1), *(str(b["launch"]) for b in sorted(p["blocks"], key=lambda b: b["arm"]))) for p in doc["pairs"]]
    assert [r[:3] for r in rows[:3]] == launches
    ratios = [float(r[5]) for r in rows[:3]]
    geomean = float(re.match(r"ratio (\S+)", detail).group(1))
    assert abs(math.exp(sum(math.log(x) for x in ratios) / 3) / geomean - 1) < 1e-3  # the estimate is their geometric mean
    # the workload, both arms' stacks and servers as resolved, host, version, identity, the command again
    for fact in ("input_len 1024", "env.CUDA_HOME /usr/local/cuda-12.8 /usr/local/cuda-13.0",
                 "env.TRITON_PTXAS_PATH (absent) /usr/local/cuda-13.0/bin/ptxas", "torch.nccl 2.26.2 2.27.7",
                 "torch 2.8.0+cu128 2.9.1+cu130", "sglang 0.5.6 0.5.9", "attention_backend flashinfer triton",
                 "internal_states.avg_spec_accept_length 2.71 2.71", "host block a", "machine this machine (no ssh)",
                 "GPUs, driver none recorded", "specdsl that measured 0.1.0",
                 f"benchmark identity (digest of both arms' stacks, servers and the workload) {run.identity}",
                 "spec sha256 " + hashlib.sha256((story / "story.spec").read_bytes()).hexdigest(),
                 "the spec as read now plans this same benchmark identity",
                 "command that reproduces the run specdsl apply story.spec --target upgrade",
                 "no promotion asked : the experiment names no track"):
        assert fact in " ".join(plain.split()), fact
    assert "-m sglang.launch_server --model-path m" in plain  # each arm's command line
    differ = page[page.index("what differs between the arms</h2>"):page.index("<h2>Diagnosis</h2>")]
    assert "<td>attention_backend</td>" in differ and "<td>internal_states.avg_spec_accept_length</td>" not in differ
    # a flag 0.5.9 added is one row, not a second for its internal_states record
    assert "<td>mamba_backend</td>" in differ and "<td>internal_states.mamba_backend</td>" not in differ
    for noise in ("port", "nccl_port", "random_seed", "internal_states.last_gen_throughput"):  # each launch its own
        assert f"<td>{noise}</td>" not in differ, noise
    ids = re.sub(r"\b[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\b|\b\d{8}T\d{6}Z-[0-9a-f]{8}\b", "", plain)
    # (without the lineage and run ids: a uuid whose first group reads 7398976e-1... is no number)
    assert not re.search(r"(?<![\w.-])\d+(?:\.\d+)?e[+-]\d", ids)  # no exponent anywhere: 220%, not 2.2e+02%
    assert "tps (the command's unit)" in plain
    helpers = _report_helpers()
    plots = helpers.embedded_plots(page)
    assert sorted(plots) == ["intervals", "runs"]
    helpers.check_in_browser(page_file, plots, 3000)


def _time(stamp: str):
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _report_helpers():
    """The report tests' Chromium helpers (screenshot, plots found pixel for pixel)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("report_helpers", HERE.parent / "report" / "test_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
