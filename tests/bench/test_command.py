"""The user's own benchmark script: real subprocesses, real output."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from specdsl.bench import BenchError, run_command_workload
from specdsl.bench.command import expand_command, extract_metrics, last_json_object
from specdsl.hosts import Cancelled, LocalHost
from specdsl.model.config import MetricRule, Workload


def script_workload(code: str, rules, **kw) -> Workload:
    return Workload(name="own", command=(sys.executable, "-c", code, "{base_url}", "{model}", "{host}", "{port}"), metrics=tuple(rules), **kw)


def run(w, tmp_path, **kw):
    return run_command_workload(w, host=LocalHost(env_root=tmp_path), server_host="127.0.0.1", port=8123, model="m/x",
                                out_dir=tmp_path, **kw)


def test_regex_metric_is_the_first_group_of_the_last_match(tmp_path):
    code = "import sys; print('tput: 1.5'); print('argv', sys.argv[1:]); print('tput: 42.25 tok/s')"
    w = script_workload(code, [MetricRule(name="output_throughput", regex=r"tput: ([\d.]+)")], runs=2)
    result = run(w, tmp_path)
    assert [r.metrics for r in result.runs] == [{"output_throughput": 42.25}] * 2
    log = Path(result.runs[1].records_file).read_text()
    assert "['http://127.0.0.1:8123', 'm/x', '127.0.0.1', '8123']" in log
    assert (tmp_path / "command-run-0.log").exists() and (tmp_path / "result.json").exists()


def test_json_metric_reads_a_dotted_path_in_the_last_object(tmp_path):
    code = (
        "import json; print(json.dumps({'a': {'b': 1}}));"
        "print('noise {not json}'); print(json.dumps({'a': {'b': 2, 'l': [5, 7]}}, indent=2)); print('done')"
    )
    rules = [MetricRule(name="x", json="a.b"), MetricRule(name="y", json="a.l.1")]
    result = run(script_workload(code, rules), tmp_path)
    assert result.runs[0].metrics == {"x": 2.0, "y": 7.0}


def test_missing_or_non_numeric_metric_is_an_error_not_a_zero(tmp_path):
    code = "print('{\"a\": \"fast\"}')"
    rules = [MetricRule(name="r", regex=r"tput: (\d+)"), MetricRule(name="j", json="a"), MetricRule(name="k", json="b.c")]
    with pytest.raises(BenchError) as info:
        run(script_workload(code, rules), tmp_path)
    msg = str(info.value)
    assert "r: regex" in msg and "matched nothing" in msg
    assert "j: field 'a' gave 'fast', not a number" in msg
    assert "k: field 'b.c' not in the last JSON object" in msg


def test_failing_script_is_an_error_with_its_output(tmp_path):
    code = "import sys; print('bad things happened'); sys.exit(3)"
    with pytest.raises(BenchError, match=r"(?s)exited with status 3.*bad things happened"):
        run(script_workload(code, [MetricRule(name="x", regex="(1)")]), tmp_path)


def test_missing_program_is_an_error(tmp_path):
    w = Workload(name="own", command=("/nonexistent/bench",), metrics=(MetricRule(name="x", regex="(1)"),))
    with pytest.raises(BenchError, match="cannot start"):
        run(w, tmp_path)


def test_timeout_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time;"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); open({str(pidfile)!r}, 'w').write(str(p.pid));"
        "time.sleep(60)"
    )
    t = time.monotonic()
    with pytest.raises(BenchError, match="timeout of 1s"):
        run(script_workload(code, [MetricRule(name="x", regex="(1)")], timeout=1.0), tmp_path)
    assert time.monotonic() - t < 8
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_stop_event_ends_the_script(tmp_path):
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    with pytest.raises(Cancelled):  # an interrupted benchmark, not a failed one
        run(script_workload("import time; time.sleep(60)", [MetricRule(name="x", regex="(1)")], timeout=60), tmp_path, stop=stop)


def test_env_reaches_the_script(tmp_path):
    code = "import os; print('v=' + os.environ['SPECDSL_TEST_V'])"
    result = run(script_workload(code, [MetricRule(name="v", regex=r"v=(\d+)")]), tmp_path, env={"SPECDSL_TEST_V": "17"})
    assert result.runs[0].metrics == {"v": 17.0}
    assert "SPECDSL_TEST_V" not in os.environ


def test_placeholders_and_braces():
    argv = expand_command(["--url={base_url}/v1", '{"k": 1}', "{model}"], host="h", port=1, model="m")
    assert argv == ["--url=http://h:1/v1", '{"k": 1}', "m"]


def test_last_json_object_and_regex_without_group():
    assert last_json_object("x\n{\"a\": 1}\ntrailing") == {"a": 1}
    assert last_json_object("nothing here") is None
    assert extract_metrics("score 12", (MetricRule(name="s", regex=r"\d+"),), source="t") == {"s": 12.0}


def test_placeholders_expand_once():
    # a model name holding `{port}` is not expanded again (one pass over the template)
    argv = expand_command(["{model}", "{model}-{port}", "{unknown}"], host="h", port=7, model="m{port}")
    assert argv == ["m{port}", "m{port}-7", "{unknown}"]
