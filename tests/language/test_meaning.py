"""Assertions mean what they read (issue: percentages, time units, every
algebraic form of a baseline comparison): the error, its exit code and its
position for each mistake; the shape each algebraic spelling reads as; and
the verdict a difference assertion gets (an interval, never two medians)."""

from __future__ import annotations

import json

import pytest

from specdsl.apply import judge
from specdsl.apply.checks import Results, check
from specdsl.cli.main import main
from specdsl.model.assert_shape import shape_of
from specdsl.model.build import parse
from specdsl.model.printer import expr_text

PRELUDE = '''stack "s" { python = "3.12" }
server "m" {
  engine = "sglang"
  model  = "m"
}
workload "w" { requests = 4 }
experiment "base" {
  stack    = stack.s
  server   = server.m
  workload = workload.w
}
experiment "cand" {
  stack    = stack.s
  server   = server.m
  workload = workload.w
  baseline = experiment.base
'''
LINE = PRELUDE.count("\n") + 1  # the line of the assertion under test


def run_validate(tmp_path, capsys, assertion: str):
    spec = tmp_path / "t.spec"
    spec.write_text(PRELUDE + f'  assert "a" {{ {assertion} }}\n}}\n')
    code = main(["validate", "--json", str(spec)])
    doc = json.loads(capsys.readouterr().out)
    return code, doc["files"][0]["diagnostics"]


COL = len('  assert "a" { ') + 1  # column of the assertion's first character


@pytest.mark.parametrize(
    "assertion, summary, at, detail",
    [
        ("output_throughput >= baseline.output_throughput + 3%", "`+ 3%` adds 0.03, not 3% of `baseline.output_throughput`",
         "3%", "write `baseline.output_throughput * 1.03`"),
        ("p99(itl) <= p99(baseline.itl) - 10%", "`- 10%` subtracts 0.1, not 10% of `p99(baseline.itl)`",
         "10%", "write `p99(baseline.itl) * 0.9`"),
        ("p99(ttft) <= 0.5", "A time needs a unit: `0.5` against `p99(ttft)`", "0.5",
         "a bare `0.5` reads as 0.5ms; if you meant seconds, write `0.5s` (= 500ms)"),
        ("ttft - baseline.ttft <= 5", "A time needs a unit: `5` against `ttft - baseline.ttft`", "5",
         "reads as 5ms; if you meant seconds, write `5s`"),
        ("duration <= 20", "A time needs a unit: `20` against `duration`", "20",
         "a bare `20` reads as 20s; if you meant milliseconds, write `20ms`"),
        ("output_throughput >= baseline.output_throughput and p99(ttft) <= 1s",
         "A comparison with the baseline cannot be combined with `and`/`or`", "output_throughput", "its own assertion"),
        ("output_throughput + baseline.output_throughput > 5",
         "This comparison with the baseline is not a ratio or a difference", "output_throughput", "decided with an interval"),
    ],
)
def test_each_mistake_is_a_located_error(tmp_path, capsys, assertion, summary, at, detail):
    code, diags = run_validate(tmp_path, capsys, assertion)
    assert code == 1
    assert [d["summary"] for d in diags] == [summary]
    r = diags[0]["range"]
    assert (r["line"], r["col"]) == (LINE, COL + assertion.index(at))
    assert detail in diags[0]["detail"]


@pytest.mark.parametrize(
    "assertion",
    [
        "output_throughput / baseline.output_throughput >= 1.03",
        "baseline.output_throughput * 1.03 <= output_throughput",
        "p99(ttft) - p99(baseline.ttft) <= 20ms",
        "p99(ttft) <= p99(baseline.ttft) + 0.02s",
        "p99(baseline.ttft) - p99(ttft) >= 0",
        "spec_accept_rate >= 50%",
        "duration <= 20m",
        "failed == 0",
    ],
)
def test_what_it_reads_is_valid(tmp_path, capsys, assertion):
    assert run_validate(tmp_path, capsys, assertion) == (0, [])


def expr(text):
    file, diags = parse(f'experiment "x" {{\n  assert "a" {{ {text} }}\n}}\n', "t.spec")
    assert not diags, diags
    return file.statements[0].body[0].expr


@pytest.mark.parametrize(
    "text, kind, op, k",
    [
        ("output_throughput >= baseline.output_throughput * 1.03", "ratio", ">=", "1.03"),
        ("output_throughput / baseline.output_throughput >= 1.03", "ratio", ">=", "1.03"),
        ("1.03 <= output_throughput / baseline.output_throughput", "ratio", ">=", "1.03"),
        ("baseline.output_throughput * 1.03 <= output_throughput", "ratio", ">=", "1.03"),
        ("baseline.output_throughput / output_throughput <= 0.97", "ratio", ">=", "1.0 / 0.97"),
        ("p99(ttft) - p99(baseline.ttft) <= 5ms", "difference", "<=", "5ms"),
        ("p99(baseline.ttft) - p99(ttft) >= 5ms", "difference", "<=", "-5ms"),
        ("p99(ttft) <= p99(baseline.ttft) + 5ms", "difference", "<=", "5ms"),
        ("p99(ttft) <= 5ms + p99(baseline.ttft)", "difference", "<=", "5ms"),
        ("p99(ttft) <= p99(baseline.ttft) - 5ms", "difference", "<=", "-5ms"),
        ("duration <= 20s", "absolute", "<=", "20.0"),  # in seconds: duration counts seconds
        ("output_throughput + baseline.output_throughput > 5", "exact", "", None),
    ],
)
def test_every_algebraic_form_has_its_shape(text, kind, op, k):
    shape = shape_of(expr(text))
    assert (shape.kind, shape.op) == (kind, op)
    assert (expr_text(shape.k) if shape.k is not None else None) == k
    if kind in ("ratio", "difference"):
        assert expr_text(shape.baseline).startswith(("baseline.", "p99(baseline."))


def test_a_duration_beside_a_metric_in_seconds_reads_in_seconds():
    mine = Results(runs=({"duration": 30.0},), samples={}, effective={})
    assert check("a", expr("duration <= 1m"), mine, None).status == "pass"
    assert check("a", expr("duration <= 20s"), mine, None).status == "fail"


def _exp(tmp_path, assertion):
    from specdsl.resolve.resolver import resolve_file

    spec = tmp_path / "t.spec"
    spec.write_text(PRELUDE + f'  assert "a" {{ {assertion} }}\n}}\n')
    resolved = resolve_file(spec)
    assert resolved.ok, resolved.diags
    return resolved.config.experiment("cand")


def _pairs(base_values, cand_values, metric="output_throughput"):
    return tuple((Results(({metric: a},), {}, {}), Results(({metric: b},), {}, {})) for a, b in zip(base_values, cand_values))


@pytest.mark.parametrize("assertion", [
    "output_throughput / baseline.output_throughput >= 1.03",
    "baseline.output_throughput * 1.03 <= output_throughput",
])
def test_a_ratio_in_any_form_is_decided_with_its_interval(tmp_path, assertion):
    exp = _exp(tmp_path, assertion)
    # medians 100 vs 104: a bare comparison would pass; the pairs' log ratios are too noisy to decide
    pairs = _pairs([100, 100, 100, 100], [90, 118, 95, 114])
    verdict = judge.judge_experiment(exp, judge.Measured(None, None, pairs=pairs), {})["a"]
    assert verdict.gating and verdict.status == "inconclusive", verdict
    assert verdict.decision.n == 4 and verdict.decision.threshold == pytest.approx(1.03)
    steady = _pairs([100, 100, 100, 100], [110, 111, 110, 112])
    assert judge.judge_experiment(exp, judge.Measured(None, None, pairs=steady), {})["a"].status == "pass"


def test_a_gating_assertion_is_decided_once_and_keeps_its_decision(tmp_path, monkeypatch):
    """Holm re-decides an assertion only at a new level; the verdict it
    ends on is the one kept (with the Decision behind it), not decided again."""
    exp = _exp(tmp_path, "output_throughput >= baseline.output_throughput * 1.03")
    calls = []
    decide = judge.decide
    monkeypatch.setattr(judge, "decide", lambda name, *a, **kw: calls.append(name) or decide(name, *a, **kw))
    verdict = judge.judge_experiment(exp, judge.Measured(None, None, pairs=_pairs([100, 100, 100], [110, 111, 112])), {})["a"]
    assert calls == ["a"]
    assert verdict.status == "pass" and verdict.decision.verdict is verdict.status and verdict.decision.n == 3
    assert verdict.detail.startswith(verdict.decision.detail) and verdict.noise > 0


def test_a_difference_is_decided_on_paired_differences(tmp_path):
    exp = _exp(tmp_path, "output_throughput - baseline.output_throughput >= 5")
    clear = judge.judge_experiment(exp, judge.Measured(None, None, pairs=_pairs([100, 80, 120], [110, 91, 129])), {})["a"]
    # the arms drift together (80..120): the differences (10, 11, 9) are steady, so the interval is narrow
    assert clear.status == "pass" and clear.gating, clear
    assert clear.decision.threshold == 5 and clear.decision.n == 3
    assert "paired differences (candidate block - baseline block)" in clear.detail
    noisy = judge.judge_experiment(exp, judge.Measured(None, None, pairs=_pairs([100, 100, 100], [90, 120, 104])), {})["a"]
    assert noisy.status == "inconclusive", noisy  # mean difference 4.7, but the interval straddles 5
    fail = judge.judge_experiment(exp, judge.Measured(None, None, pairs=_pairs([100, 100, 100], [99, 100, 98])), {})["a"]
    assert fail.status == "fail", fail


def test_a_difference_not_paired_uses_the_baseline_value_plus_the_offset(tmp_path):
    exp = _exp(tmp_path, "output_throughput >= baseline.output_throughput + 5")
    base = Results(({"output_throughput": 100.0},), {}, {})
    runs = tuple(Results(({"output_throughput": v},), {}, {}) for v in (110.0, 111.0, 109.0))
    verdict = judge.judge_experiment(exp, judge.Measured(None, base, candidate_runs=runs), {})["a"]
    assert verdict.status == "pass" and verdict.decision.threshold == 105
    assert "baseline value 100 + 5" in verdict.detail and "drift between them is not controlled" in verdict.detail
