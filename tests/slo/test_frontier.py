"""A sweep's frontier table: a matrix over concurrency against the knee
double (tests/slo/knee_server.py, knee 5), through the real CLI. apply
prints the table (the value against throughput and latency percentiles,
each cell's SLO, the frontier marked), plan shows it as recorded, and the
report page has it. A few seconds a cell."""

from __future__ import annotations

from slo_spec import write_spec

SWEEP = '''  matrix = { concurrency = [2, 4, 6, 8] }
  assert "slo" { goodput_ratio >= 0.9 }
'''


def _row(out: str, value: str) -> str:
    """The frontier table's row of `value` (the last table printed)."""
    return [line for line in out.splitlines() if line.strip().split(" ")[0] == value and line.strip().count("%")][-1]


def test_a_sweep_over_concurrency_prints_its_frontier(folder):
    write_spec(folder, knee=5, requests=48, slow_ms=300, itl_ms=20, warmup=8, workload="  slo = { ttft = 150ms }\n",
               experiment=SWEEP)
    text = folder.spec.read_text().replace("workload = workload.w\n", "workload = workload.w { concurrency = matrix.concurrency }\n")
    folder.spec.write_text(text)
    proc = folder.run("apply", "f.spec", "--yes", timeout=300)
    assert proc.returncode == 3, proc.out  # 6 and 8 fail their SLO
    assert "Frontier of e along concurrency (SLO: every check passed):" in proc.stdout, proc.stdout
    header = next(line for line in proc.stdout.splitlines() if line.strip().startswith("concurrency"))
    for column in ("req/s", "out tok/s", "goodput", "p50 ttft", "p99 ttft", "p99 itl", "SLO"):
        assert column in header, header
    # each row's SLO is its cell's check; the marks follow from them. Above the knee (6, 8) every request
    # but the first 5 is slow: a certain FAIL. At 2 and 4 all are fast: PASS, unless this machine left the
    # client without a free core (its run is then client-bound, the verdict ERROR, the row undecided)
    status = {v: ("pass" if f"e[concurrency={v}]: slo  PASS" in proc.stdout else
                  "fail" if f"e[concurrency={v}]: slo  FAIL" in proc.stdout else "undecided") for v in (2, 4, 6, 8)}
    assert status[6] == status[8] == "fail", status
    assert status[2] != "fail" and status[4] != "fail", status
    best = max((v for v in (2, 4) if status[v] == "pass"), default=None)
    for v in (2, 4, 6, 8):
        mark = "  <- highest that meets" if v == best else "  <- first that does not" if v == 6 else ""
        assert _row(proc.stdout, str(v)).rstrip().endswith(status[v] + mark), (v, status, proc.stdout)
    answer = f"highest concurrency that meets the SLO: {best}" if best else "no concurrency meets the SLO"
    assert f"{answer}; the first that does not: 6" in proc.stdout
    plan = folder.run("plan", "f.spec")
    assert "Recorded frontier of e along concurrency" in plan.stdout, plan.out
    report = folder.run("report", "e", "f.spec", "-o", "e.html")
    assert report.returncode == 0, report.out
    page = (folder.path / "e.html").read_text()
    assert "Frontier along concurrency" in page
    assert f"{answer}; the first that does not: 6" in page
