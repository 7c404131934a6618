"""Metric presets: the engines' own clients' result files read into
specdsl's metric names, and a command workload run with the stack's
environment (`{python}`, `{bin}`, its variables) writing `{result_file}`.

The files in tests/bench/data are in the exact format each client writes:
- vllm-bench-serve-result.json: `vllm bench serve --save-result
  --result-filename F --max-concurrency 16` (vllm/benchmarks/serve.py:
  `json.dump(result_json, outfile)`, one object, no newline; the per-request
  lists dropped as without `--save-detailed`, `queue_times` kept, as it is);
- vllm-bench-serve-all-failed.json: the same client where every request
  failed, with `--percentile-metrics ttft,tpot,itl,e2el
  --metric-percentiles 50,90,99` (its statistics of no success are 0);
- sglang-bench-serving-result.jsonl: two runs of `python -m
  sglang.bench_serving --output-file F --output-details` appended to one
  file (python/sglang/bench_serving.py: `json.dumps(result |
  result_details) + "\\n"`; `request_rate` inf is written `Infinity`), the
  second with two failed requests in its `errors`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from specdsl.bench import BenchError, run_command_workload
from specdsl.bench.command import StackEnv, preset_metrics
from specdsl.bench.validity import run_invalid
from specdsl.facts.bench_clients import presets
from specdsl.hosts import LocalHost
from specdsl.model.config import MetricRule, Workload
from specdsl.model.metrics import METRICS

DATA = Path(__file__).parent / "data"


def test_every_preset_metric_is_a_specdsl_metric_and_each_preset_says_how_its_file_is_written():
    assert set(presets()) == {"vllm-bench-serve", "sglang-bench-serving"}
    for preset in presets().values():
        assert set(preset.metrics) <= set(METRICS), set(preset.metrics) - set(METRICS)
        assert {"output_throughput", "request_throughput", "completed"} <= set(preset.required)
        assert preset.writes and preset.source.endswith(".py")
    assert presets()["vllm-bench-serve"].writes == ("--save-result", "--result-filename")
    assert presets()["sglang-bench-serving"].writes == ("--output-file",)


def test_vllm_result_file_gives_specdsl_metrics_by_their_names():
    got = preset_metrics((DATA / "vllm-bench-serve-result.json").read_text(), "vllm-bench-serve", source="r")
    assert got["output_throughput"] == 6479.684 and got["request_throughput"] == 50.62253
    assert got["total_token_throughput"] == 12959.368 and got["duration"] == 0.3160648
    assert (got["completed"], got["failed"], got["total_output_tokens"]) == (16, 0, 2048)
    assert (got["median_ttft_ms"], got["p99_ttft_ms"], got["median_itl_ms"], got["p99_tpot_ms"]) == (45.23, 69.8, 2.15, 2.52)
    # what it did not measure is absent, never a zero; what specdsl has no name for is left out
    assert "median_e2el_ms" not in got and "p90_ttft_ms" not in got
    assert "mean_client_queue_time_ms" not in got and "request_goodput" not in got
    assert run_invalid(got, Workload(name="w")) == ""


def test_a_vllm_run_whose_requests_failed_is_invalid_and_its_percentiles_are_read():
    got = preset_metrics((DATA / "vllm-bench-serve-all-failed.json").read_text(), "vllm-bench-serve", source="r")
    assert (got["completed"], got["failed"], got["output_throughput"]) == (0, 16, 0.0)
    assert {"p50_e2el_ms", "p90_ttft_ms", "median_e2el_ms"} <= set(got)
    assert run_invalid(got, Workload(name="w")) == "16 of 16 requests failed (max_failed 0)"


def test_sglang_jsonl_reads_its_last_run_and_counts_its_errors_as_failed():
    text = (DATA / "sglang-bench-serving-result.jsonl").read_text()
    got = preset_metrics(text, "sglang-bench-serving", source="r")
    last = json.loads(text.splitlines()[-1])
    assert got["completed"] == 6 and got["failed"] == 2  # the second line, two non-empty errors
    assert got["output_throughput"] == last["output_throughput"] and got["request_throughput"] == last["request_throughput"]
    # its own names: end-to-end latency, and no total throughput in this release's result
    assert got["median_e2el_ms"] == 298.7 and got["p99_e2el_ms"] == 333.0 and got["p99_itl_ms"] == 4.2
    assert "total_token_throughput" not in got
    first = preset_metrics(text.splitlines()[0], "sglang-bench-serving", source="r")
    assert first["failed"] == 0 and first["completed"] == 8


def test_sglang_without_output_details_has_no_failed_count():
    obj = json.loads((DATA / "sglang-bench-serving-result.jsonl").read_text().splitlines()[0])
    for key in ("errors", "input_lens", "output_lens", "ttfts", "itls", "generated_texts"):
        del obj[key]
    got = preset_metrics(json.dumps(obj), "sglang-bench-serving", source="r")
    assert "failed" not in got and got["completed"] == 8


def test_a_missing_required_field_or_no_object_is_an_error_never_a_zero():
    obj = json.loads((DATA / "vllm-bench-serve-result.json").read_text())
    del obj["output_throughput"]
    obj["completed"] = None
    with pytest.raises(BenchError) as info:
        preset_metrics(json.dumps(obj), "vllm-bench-serve", source="run 0 (r.json)")
    assert str(info.value) == ("run 0 (r.json): the vllm bench serve result has no number for output_throughput "
                               "(field 'output_throughput'), completed (field 'completed')")
    with pytest.raises(BenchError, match="no JSON object in the result file"):
        preset_metrics("Traceback (most recent call last):\n", "sglang-bench-serving", source="r")


# -- the command run with the stack's environment -------------------------------------------------

# a client that writes the vLLM fixture to the path it is given, with the interpreter and variables it saw
CLIENT = (
    "import json, os, sys; out = sys.argv[sys.argv.index('--result-filename') + 1];"
    f"obj = json.load(open({str(DATA / 'vllm-bench-serve-result.json')!r}));"
    "obj['seen'] = [sys.executable, os.environ.get('STACK_MARK'), os.environ.get('SERVER_MARK')];"
    "json.dump(obj, open(out, 'w')); print('done')"
)


def _workload(argv, **kw) -> Workload:
    return Workload(name="client", command=tuple(argv), **kw)


def _run(w, tmp_path, stack=None):
    return run_command_workload(w, host=LocalHost(env_root=tmp_path), server_host="127.0.0.1", port=8123, model="m",
                                out_dir=tmp_path / "out", stack=stack)


def test_python_bin_and_result_file_are_the_stack_env_and_a_fresh_file_per_run(tmp_path):
    stack = StackEnv(python=sys.executable, bin=str(Path(sys.executable).parent),
                     env={"STACK_MARK": "s", "SERVER_MARK": "v"})
    w = _workload(["{python}", "-c", CLIENT, "--bin", "{bin}", "--save-result", "--result-filename", "{result_file}"],
                  metrics_preset="vllm-bench-serve", runs=2,
                  metrics=(MetricRule(name="peak", json="max_output_tokens_per_s"),))
    result = _run(w, tmp_path, stack)
    assert [r.metrics["output_throughput"] for r in result.runs] == [6479.684, 6479.684]
    assert result.runs[0].metrics["peak"] == 7424.0  # a metric block reads the result file too
    for i in range(2):
        written = json.loads((tmp_path / "out" / f"command-run-{i}.result.json").read_text())
        assert written["seen"] == [sys.executable, "s", "v"]
    log = (tmp_path / "out" / "command-run-0.log").read_text()
    assert "done" in log


def test_a_run_that_writes_no_result_file_is_an_error(tmp_path):
    w = _workload([sys.executable, "-c", "print('forgot --save-result')", "--result-filename", "{result_file}"],
                  metrics_preset="vllm-bench-serve")
    with pytest.raises(BenchError, match=r"wrote no result file at .*command-run-0\.result\.json"):
        _run(w, tmp_path)


def test_python_without_the_stack_env_is_an_error_not_a_literal_brace(tmp_path):
    w = _workload(["{python}", "-c", "print(1)"], metrics=(MetricRule(name="x", regex="(1)"),))
    with pytest.raises(BenchError, match="the stack's environment is not known here"):
        _run(w, tmp_path)
