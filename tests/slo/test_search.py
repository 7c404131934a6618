"""`specdsl search`: the highest concurrency at which every assertion of a
search experiment passes, through the real CLI against the knee double
(tests/slo/knee_server.py): at concurrency <= K every request is fast, above
K all but the first K are slow, so `goodput_ratio >= 0.9` holds exactly up
to K and the search must answer K, and K + 1 as the first that does not.
Each probe is a recorded experiment (`state list`), reused by a second
search. A few seconds a probe."""

from __future__ import annotations

import json

from slo_spec import write_spec

SEARCH = '''  search = { over = "concurrency", from = 1, to = 16 }
  assert "slo" { goodput_ratio >= 0.9 }
  assert "capacity" { search.concurrency >= 4 }
'''


def test_the_search_finds_the_known_knee_exactly(folder):
    write_spec(folder, knee=5, requests=48, slow_ms=300, workload="  slo = { ttft = 150ms }\n", experiment=SEARCH)
    assert "f.spec: valid (0 experiments, 1 search)" in folder.run("validate", "f.spec").out
    plan = folder.run("plan", "f.spec")
    assert plan.returncode == 0, plan.out
    # 16 values: 1 2 4 8 16 geometric, then bisection: plan states the worst case
    assert "search e: the highest concurrency from 1 to 16 (step 1, 16 values) at which slo pass" in plan.out, plan.out
    assert "at most 8 probes; then capacity on the answer (search.concurrency)" in plan.out
    assert "run: specdsl search e f.spec" in plan.out
    targeted = folder.run("apply", "f.spec", "--target", "e", "--yes")
    assert targeted.returncode != 0 and "--target e: a search experiment, not applied by apply: run `specdsl search e f.spec`" in targeted.out, targeted.out
    proc = folder.run("search", "e", "f.spec", "--yes", timeout=300)
    assert proc.returncode == 0, proc.out
    probed = [line.split("probe ")[1].split(": ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("probe ")]
    # 1, 2, 4 meet; 8 does not; then 6 (no), 5 (yes): neighbours 5 and 6
    assert probed == ["e[concurrency=1]", "e[concurrency=2]", "e[concurrency=4]", "e[concurrency=8]",
                      "e[concurrency=6]", "e[concurrency=5]"], proc.stdout
    assert "Highest concurrency that meets the SLO: 5 (the first that does not: 6)." in proc.stdout
    assert "  capacity  PASS  search.concurrency = 5" in proc.stdout, proc.stdout
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()[:1].isdigit()}
    assert rows["5"].rstrip().endswith("pass  <- highest that meets"), proc.stdout
    assert rows["6"].rstrip().endswith("fail  <- first that does not"), proc.stdout
    # each probe is an experiment recorded in state
    listed = folder.run("state", "list")
    for name in probed:
        assert f"benchmark.{name}" in listed.out, listed.out
    # a second search reads what is recorded: nothing runs, the same answer, as JSON on stdout
    again = folder.run("search", "e", "f.spec", "--yes", "--json", timeout=300)
    assert again.returncode == 0 and again.stderr.count("results recorded, reused") == 6, again.out
    doc = json.loads(again.stdout)
    assert (doc["status"], doc["over"], doc["highest_meeting"], doc["first_not_meeting"]) == ("answered", "concurrency", 5, 6)
    assert [(p["experiment"], p["meets"]) for p in doc["probes"]] == list(zip(probed, [True, True, True, False, False, True]))
    assert "goodput_ratio" in doc["probes"][0]["metrics"]
    assert doc["asserts"] == [{"name": "capacity", "status": "pass", "detail": "search.concurrency = 5"}]
    # a higher floor on the answer: the probes are the same (the SLO did not change), the answer FAILs it
    folder.spec.write_text(folder.spec.read_text().replace("search.concurrency >= 4", "search.concurrency >= 8"))
    floor = folder.run("search", "e", "f.spec", "--yes", timeout=300)
    assert floor.returncode == 3 and floor.stdout.count("results recorded, reused") == 6, floor.out
    assert "  capacity  FAIL  search.concurrency = 5" in floor.stdout, floor.stdout


def test_a_search_is_checked_where_it_is_written(folder):
    write_spec(folder, workload="  slo = { ttft = 150ms }\n",
               experiment='  search = { over = "concurency", from = 1, to = 16 }\n  assert "slo" { goodput_ratio >= 0.9 }\n')
    proc = folder.run("validate", "f.spec")
    assert proc.returncode != 0 and '`search.over` must be "concurrency" or "rate"' in proc.out, proc.out
    write_spec(folder, workload="  slo = { ttft = 150ms }\n",
               experiment='  search = { over = "concurrency", from = 16, to = 4 }\n  assert "slo" { goodput_ratio >= 0.9 }\n')
    proc = folder.run("validate", "f.spec")
    assert "`search.from` must be below `search.to`" in proc.out, proc.out
    write_spec(folder, experiment='  search = { over = "concurrency", from = 1, to = 4 }\n')
    proc = folder.run("validate", "f.spec")
    assert "A search needs an assertion to meet" in proc.out, proc.out
    assert "Traceback" not in proc.out
