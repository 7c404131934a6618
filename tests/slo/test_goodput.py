"""Goodput, vLLM's definition (`vllm bench serve --goodput`): a request is
good when each metric of the workload's `slo` is within its bound;
`request_goodput` = good requests / duration, `goodput_ratio` = good /
requests sent. Through a real `specdsl apply` against the knee double
(tests/slo/knee_server.py): with knee K at concurrency C > K, exactly the
first K requests of a run find at most K in flight and are fast (2 ms to
the first token), every later one slow (120 ms), so the ratio is known: a
request holds its stream 30 ms or more (3 gaps of 10 ms), longer than the
client takes to open its C streams. A few seconds."""

from __future__ import annotations

import json

from slo_spec import write_spec


def _result(folder):
    state = folder.state()
    run = [r for r in state.runs if r.step == "benchmark.e"][-1]
    return state.result(run.identity)


def test_goodput_counts_the_requests_within_every_bound(folder):
    # concurrency 4 against knee 2: the first 2 requests are fast, the 22 after them slow
    write_spec(folder, knee=2, concurrency=4, requests=24, workload="  slo = { ttft = 50ms, e2el = 1s }\n",
               asserts='''  assert "most-good" { goodput_ratio >= 0.99 }
  assert "some-good" { request_goodput > 0 }
''')
    proc = folder.run("apply", "f.spec", "--yes", "--json")
    doc = json.loads(proc.stdout)
    verdicts = {v["assertion"]: v for v in doc["verdicts"]}
    assert verdicts["most-good"]["verdict"] == "fail", verdicts["most-good"]
    assert proc.returncode == 3, proc.out
    m = dict(_result(folder).metrics)
    assert m["goodput_ratio"] == 2 / 24, m
    # request_goodput is good requests over the run's duration, beside request_throughput (all of them)
    assert abs(m["request_goodput"] / m["request_throughput"] - 2 / 24) < 1e-9, m


def test_goodput_at_the_knee_is_every_request(folder):
    write_spec(folder, knee=4, concurrency=4, workload="  slo = { ttft = 50ms, tpot = 50ms }\n",
               asserts='  assert "all-good" { goodput_ratio >= 0.99 }\n')
    proc = folder.run("apply", "f.spec", "--yes", "--json")
    assert proc.returncode == 0, proc.out
    m = dict(_result(folder).metrics)
    assert m["goodput_ratio"] == 1.0 and abs(m["request_goodput"] - m["request_throughput"]) < 1e-9, m


def test_goodput_without_an_slo_and_a_bad_slo_are_located_errors(folder):
    write_spec(folder, asserts='  assert "g" { goodput_ratio >= 0.99 }\n')
    proc = folder.run("validate", "f.spec")
    lines = folder.spec.read_text().splitlines()
    row = next(i for i, line in enumerate(lines, 1) if "goodput_ratio" in line)
    assert proc.returncode != 0
    assert f"f.spec:{row}:{lines[row - 1].index('goodput_ratio') + 1}: error: `goodput_ratio` needs the workload's `slo`" in proc.out, proc.out
    write_spec(folder, workload="  slo = { ttft = 200ms, itll = 5ms }\n")
    proc = folder.run("validate", "f.spec")
    assert proc.returncode != 0 and "`slo.itll`: an SLO bounds one of ttft, tpot, e2el" in proc.out, proc.out
    write_spec(folder, workload="  slo = { ttft = 200 }\n")
    proc = folder.run("validate", "f.spec")
    assert "`slo.ttft` must be a duration such as `200ms`" in proc.out and "write `ttft = 200ms`" in proc.out, proc.out
    assert "Traceback" not in proc.out
