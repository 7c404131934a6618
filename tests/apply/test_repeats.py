"""A message many runs said is said once, with its count and where from
(apply's summary and the report print warnings through `said_once`)."""

from __future__ import annotations

import io

from specdsl.apply.outcome import ApplyResult
from specdsl.apply.repeats import said_once
from specdsl.cli.apply_view import print_result

NO_METRICS = ("no server metrics: unavailable: GET /metrics answered http 404; SGLang serves /metrics only with "
              "`--enable-metrics` (args = { enable-metrics = true })")


def _paired(n_pairs: int) -> list[str]:
    out = []
    for pair in range(1, n_pairs + 1):
        for arm, name in (("A", "serial"), ("B", "batched")):
            out.append(f"benchmark.batched pair {pair} arm {arm} ({name}): run {2 * pair}: {NO_METRICS}")
    return out


def test_repeats_of_one_step_become_one_line_with_their_count():
    warnings = ["upgrade (benchmark.upgrade launch 1, arm B): RISK: Blackwell + DeepGEMM"] + _paired(8)[:15] + [
        "benchmark.batched pair 2 arm B (batched, launch 3): cold start: its first run's output_throughput (80) was 20% below"]
    out = said_once(warnings)
    assert out == [
        "upgrade (benchmark.upgrade launch 1, arm B): RISK: Blackwell + DeepGEMM",
        f"benchmark.batched: {NO_METRICS} (said by 15 runs: pairs 1-8, arms A (serial) and B (batched))",
        warnings[-1],  # said once: as it was
    ]


def test_a_benchmark_measured_alone_and_steps_kept_apart():
    warnings = [f"benchmark.a: run {i}: client-bound: x" for i in range(3)] + ["benchmark.b: run 0: client-bound: x"]
    assert said_once(warnings) == ["benchmark.a: client-bound: x (said by 3 runs)", "benchmark.b: run 0: client-bound: x"]
    assert said_once(["benchmark.a pair 1 arm B (c): run 1: m", "benchmark.a pair 3 arm B (c): run 5: m"]) == \
        ["benchmark.a: m (said by 2 runs: pairs 1, 3, arm B (c))"]


def test_apply_prints_the_fifteen_copies_once():
    result = ApplyResult()
    for w in _paired(8)[:15]:
        result.warn(w)
    stream = io.StringIO()
    print_result(result, None, stream=stream)
    lines = [l for l in stream.getvalue().splitlines() if l.startswith("warning:")]
    assert lines == [f"warning: benchmark.batched: {NO_METRICS} (said by 15 runs: pairs 1-8, arms A (serial) and B (batched))"]
    assert "--enable-metrics" in lines[0]
