"""`failed`/`completed` assertions read every run, valid or not (issue 34):
a real `specdsl apply` against the streaming double failing requests on cue
(tests/bench/timed_server.py `--fail-percent`). A candidate that drops
requests FAILs `failed == 0` (exit 3) and the verdict names the runs; the
throughput verdict still reads only valid runs (none here: ERROR). About 6 s."""

from __future__ import annotations

import json

from test_broken_runs import spec


def test_dropped_requests_fail_failed_assertions_with_the_runs_named(folder):
    # 20 requests a run, every tenth fails: two failures in each of the 2 runs, both invalid (max_failed 0)
    spec(folder, fail_percent=10, requests=20, asserts='''  assert "none-failed" { failed == 0 }
  assert "all-done" { completed >= 20 }
  assert "fast" { output_throughput >= 1 }
''')
    proc = folder.run("apply", "f.spec", "--yes", "--json")
    assert proc.returncode == 3, proc.out
    doc = json.loads(proc.stdout)
    assert doc["exit_code"] == 3 and doc["invalid_runs"] == 2
    verdicts = {v["assertion"]: v for v in doc["verdicts"]}
    none_failed = verdicts["none-failed"]
    assert none_failed["verdict"] == "fail", none_failed
    assert "not failed == 0 in every one of 2 runs" in none_failed["detail"]
    assert "run 0 (invalid: 2 of 20 requests failed (max_failed 0)): failed = 2" in none_failed["detail"]
    assert "run 1 (invalid: 2 of 20 requests failed (max_failed 0)): failed = 2" in none_failed["detail"]
    assert "invalid runs not read" not in none_failed["detail"]  # it read them
    assert verdicts["all-done"]["verdict"] == "fail" and "completed = 18" in verdicts["all-done"]["detail"]
    # the throughput verdict reads only valid runs: none is
    assert verdicts["fast"]["verdict"] == "error"
    assert "too few valid runs: 0 valid (invalid runs not read: run 0: 2 of 20 requests failed" in verdicts["fast"]["detail"]
