"""A track moves only on a gating assertion (one that reads a measured
metric): `specdsl validate` refuses `promote` without one, at the
`promote` value, with a hint; the examples keep validating."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdsl.cli.main import main
from specdsl.model.build import parse
from specdsl.validate.promotion import is_gating

ROOT = Path(__file__).resolve().parents[2]

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
'''


def _expr(text: str):
    spec = 'variable "floor" { default = 1 }\n' + PRELUDE + f'experiment "e" {{\n  stack = stack.s\n  server = server.m\n  workload = workload.w\n  assert "a" {{ {text} }}\n}}\n'
    tree, diags = parse(spec, "x.spec")
    assert tree is not None, diags
    block = [b for b in tree.statements if getattr(b, "kind", "") == "experiment"][-1]
    return next(i for i in block.body if type(i).__name__ == "Assert").expr


GATING = [
    ("output_throughput >= baseline.output_throughput * 1.03", True),  # ratio
    ("p99(itl) <= p99(baseline.itl) * 1.10", True),
    ("baseline.tps * 1.5 <= tps", True),  # written the other way round
    ("output_throughput > baseline.output_throughput / 0.9", True),
    ("p99(itl) <= 50ms", True),  # absolute
    ("tps > var.floor", True),
    ("failed == 0", False),  # exact: no interval decides an equality
    ("effective.attention_backend == \"fa3\" and tps > 1", False),  # logic
    ("not (median(baseline.ttft) > 10)", False),
    ("effective.attention_backend == \"fa3\"", False),
    ("effective.max_model_len == 512 and effective.enforce_eager == true", False),
    ("-1 < 0", False),
    ("baseline.tps > 10", False),  # reads no candidate
    ("tps > effective.max_batch", False),
]


@pytest.mark.parametrize("text, gating", GATING)
def test_gating_means_a_measured_metric_against_a_constant_or_the_baseline(text, gating):
    assert is_gating(_expr(text)) is gating


@pytest.mark.parametrize("text, gating", GATING)
def test_validate_and_the_verdicts_agree_on_what_is_gating(text, gating):
    # a verdict is marked gating by the same shapes: the two never disagree
    from specdsl.apply.checks import Results
    from specdsl.apply.judge import Measured, decide

    runs = tuple(Results(({"tps": 10.0, "output_throughput": 10.0},), {"itl": (1.0,), "ttft": (1.0,)}, {}) for _ in range(2))
    measured = Measured(runs[0], runs[0], candidate_runs=runs)
    verdict = decide("a", _expr(text), measured, {"var.floor": 1}, alpha=0.05)
    assert verdict.gating is gating, verdict


def _validate(tmp_path, capsys, body: str) -> tuple[int, str]:
    path = tmp_path / "p.spec"
    path.write_text(PRELUDE + body)
    code = main(["validate", str(path)])
    return code, capsys.readouterr().err


def test_promote_without_assertions_is_refused_at_the_promote_value(tmp_path, capsys):
    code, err = _validate(tmp_path, capsys, '''experiment "cand" {
  stack    = stack.s
  server   = server.m
  workload = workload.w
  baseline = experiment.base
  promote  = "prod"
}
''')
    assert code == 1
    lines = err.splitlines()
    assert lines[0].endswith("p.spec:17:14: error: Experiment `cand` promotes without any assertion")
    assert lines[1].endswith('promote  = "prod"') and lines[2].endswith("^^^^^^")
    assert "= hint: a track moves only on a passed gating assertion" in err
    assert "output_throughput >= baseline.output_throughput * 1.03" in err


def test_promote_on_effective_only_assertions_is_refused(tmp_path, capsys):
    code, err = _validate(tmp_path, capsys, '''experiment "cand" {
  stack    = stack.s
  server   = server.m
  workload = workload.w
  assert "backend" { effective.attention_backend == "flashinfer" }
  promote  = "prod"
}
''')
    assert code == 1
    assert "p.spec:17:14: error: Experiment `cand` promotes without a gating assertion" in err
    assert "`backend` is decided exactly" in err
    # no baseline: the example the hint gives does not read one
    assert "baseline." not in err.split("= hint:")[1]


def test_one_gating_assertion_is_enough(tmp_path, capsys):
    code, err = _validate(tmp_path, capsys, '''experiment "cand" {
  stack    = stack.s
  server   = server.m
  workload = workload.w
  baseline = experiment.base
  assert "backend" { effective.attention_backend == "flashinfer" }
  assert "faster"  { output_throughput >= baseline.output_throughput * 1.03 }
  promote  = "prod"
}
''')
    assert code == 0 and "error" not in err


def test_an_experiment_that_does_not_promote_needs_no_gating_assertion(tmp_path, capsys):
    code, _ = _validate(tmp_path, capsys, '''experiment "cand" {
  stack    = stack.s
  server   = server.m
  workload = workload.w
  assert "backend" { effective.attention_backend == "flashinfer" }
}
''')
    assert code == 0


@pytest.mark.parametrize("spec", sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").rglob("*.spec"))
                         + ["benchmarks/gpu/gpu.spec"])
def test_examples_still_validate(spec, capsys):
    extra = ["-var", "wheels=/w", "-var", "model=/m"] if spec.startswith(("benchmarks/", "examples/gpu/story")) else []
    assert main(["validate", str(ROOT / spec), *extra]) == 0, capsys.readouterr().err
