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
    return next(line for line in out.splitlines() if line.strip().split(" ")[0] == value and "pass" in line or
                line.strip().split(" ")[0] == value and "fail" in line)


def test_a_sweep_over_concurrency_prints_its_frontier(folder):
    write_spec(folder, knee=5, requests=48, slow_ms=300, warmup=8, workload="  slo = { ttft = 150ms }\n",
               experiment=SWEEP)
    text = folder.spec.read_text().replace("workload = workload.w\n", "workload = workload.w { concurrency = matrix.concurrency }\n")
    folder.spec.write_text(text)
    proc = folder.run("apply", "f.spec", "--yes", timeout=300)
    assert proc.returncode == 3, proc.out  # 6 and 8 fail their SLO
    assert "Frontier of e along concurrency (SLO: every check passed):" in proc.stdout, proc.stdout
    header = next(line for line in proc.stdout.splitlines() if line.strip().startswith("concurrency"))
    for column in ("req/s", "out tok/s", "goodput", "p50 ttft", "p99 ttft", "p99 itl", "SLO"):
        assert column in header, header
    assert _row(proc.stdout, "2").rstrip().endswith("pass")
    assert _row(proc.stdout, "4").rstrip().endswith("pass  <- highest that meets")
    assert _row(proc.stdout, "6").rstrip().endswith("fail  <- first that does not")
    assert _row(proc.stdout, "8").rstrip().endswith("fail")
    assert "highest concurrency that meets the SLO: 4; the first that does not: 6" in proc.stdout
    plan = folder.run("plan", "f.spec")
    assert "Recorded frontier of e along concurrency" in plan.stdout, plan.out
    report = folder.run("report", "e", "f.spec", "-o", "e.html")
    assert report.returncode == 0, report.out
    page = (folder.path / "e.html").read_text()
    assert "Frontier along concurrency" in page
    assert "highest concurrency that meets the SLO: 4; the first that does not: 6" in page
