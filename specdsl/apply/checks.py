"""Evaluating assertions on recorded results.

Semantics (for now; the noise-aware verdicts build on the same inputs):
- a scalar metric read bare is the median across runs; a function applied
  to it works across runs (`min(output_throughput)`);
- a distribution metric (ttft, tpot, itl, e2el) pools every request's values
  over all runs; read bare it is their median, a function gives that
  statistic (`p99(itl)`);
- `baseline.X` reads the baseline's results the same way; `effective.NAME`
  the server's effective configuration; durations compare in milliseconds
  (`200ms`, `1s` = 1000), beside a metric counted in seconds (`duration`)
  in seconds, and `3%` is 0.03.
Missing data is never a pass: the verdict is "inconclusive" with the reason.
"""

from __future__ import annotations

import statistics
from typing import Any

import attrs

from specdsl import stats
from specdsl.model import ast
from specdsl.model.metrics import DISTRIBUTIONS, SERVER_METRICS, percentile_of
from specdsl.stats import significant
from specdsl.verdict.decision import Status
from specdsl.verdict.record import Verdict


@attrs.frozen
class Results:
    """What an assertion can read about one experiment's benchmark."""

    runs: tuple[dict[str, float], ...]  # per-run scalar metrics
    samples: dict[str, tuple[float, ...]]  # distribution -> pooled per-request values
    effective: dict[str, Any]

    @classmethod
    def from_bench(cls, bench_json: dict, effective: dict[str, Any]) -> "Results":
        runs, pooled = [], {}
        for run in bench_json.get("runs", ()):
            runs.append({k: float(v) for k, v in run.get("metrics", {}).items()})
            for name, values in run.get("samples", {}).items():
                pooled.setdefault(name, []).extend(float(v) for v in values)
        return cls(tuple(runs), {k: tuple(v) for k, v in pooled.items()}, dict(effective))


class Missing(Exception):
    """Data an expression reads is not there."""


_Missing = Missing


# One definition of each statistic, specdsl.stats: percentiles interpolate
# linearly between closest ranks (numpy's default); stddev is the sample
# standard deviation (n - 1), 0.0 for a single value.
_FUNCS = {
    "p50": lambda xs: stats.percentile(xs, 50),
    "p90": lambda xs: stats.percentile(xs, 90),
    "p99": lambda xs: stats.percentile(xs, 99),
    "median": stats.median,
    "mean": stats.mean,
    "min": min,
    "max": max,
    "stddev": lambda xs: stats.stdev(xs) if len(xs) > 1 else 0.0,
}


def function(name: str):
    """The statistic an assertion's function computes: one of _FUNCS, or
    any percentile `pNN` / `pNN.N` (specdsl.model.metrics.percentile_of)."""
    if name in _FUNCS:
        return _FUNCS[name]
    q = percentile_of(name)
    if q is None:
        raise ValueError(f"unknown function {name!r}")
    return lambda xs: stats.percentile(xs, q)


def _values(results: Results | None, name: str, who: str) -> list[float]:
    if results is None:
        raise _Missing(f"{who} has no results")
    if name in DISTRIBUTIONS:
        xs = list(results.samples.get(name, ()))
    else:
        xs = [r[name] for r in results.runs if name in r]
    if not xs and name in SERVER_METRICS:
        raise _Missing(f"the server of {who} did not export `{name}`: its /metrics was absent or had no counters for it "
                       "(each run's `server.metrics` in result.json says which)")
    if not xs:
        raise _Missing(f"{who} recorded no `{name}` values")
    return xs


def evaluate(expr: ast.Expr, mine: Results | None, baseline: Results | None, env: dict[str, Any], shown: list[str]) -> Any:
    """The value of `expr`; raises _Missing when data is absent. `shown`
    collects `name = value` notes for the verdict's detail."""
    if isinstance(expr, (ast.Number, ast.String, ast.Bool)):
        return expr.value
    if isinstance(expr, ast.Quantity):
        return expr.fraction() if expr.unit == "%" else expr.seconds() * 1000.0
    if isinstance(expr, ast.Not):
        return not evaluate(expr.operand, mine, baseline, env, shown)
    if isinstance(expr, ast.Neg):
        return -evaluate(expr.operand, mine, baseline, env, shown)
    if isinstance(expr, ast.Call):
        ref = expr.args[0]
        results, who, name = _target(ref, mine, baseline)
        value = function(expr.func)(_values(results, name, who))
        shown.append(f"{_text(expr)} = {_num(value)}")
        return value
    if isinstance(expr, ast.Ref):
        head = expr.parts[0]
        if head == "effective":
            key = expr.parts[1]
            if key not in (mine.effective if mine else {}):
                raise _Missing(f"the server did not report `{key}` in its effective configuration")
            value = mine.effective[key]
            shown.append(f"{expr.dotted} = {value!r}")
            return value
        if head in ("var", "matrix", "search"):
            value = env.get(expr.dotted)
            if value is None:
                raise _Missing(f"`{expr.dotted}` has no value")
            if head == "search":
                shown.append(f"{expr.dotted} = {_num(value)}")
            return value
        results, who, name = _target(expr, mine, baseline)
        values = _values(results, name, who)
        value = statistics.median(values)
        shown.append(f"{expr.dotted} = {_num(value)}")
        return value
    if isinstance(expr, ast.BinOp):
        if expr.op == "and":
            return evaluate(expr.left, mine, baseline, env, shown) and evaluate(expr.right, mine, baseline, env, shown)
        if expr.op == "or":
            return evaluate(expr.left, mine, baseline, env, shown) or evaluate(expr.right, mine, baseline, env, shown)
        left, right = expr.left, expr.right
        if expr.op in ("+", "-", "==", "!=", "<", "<=", ">", ">="):
            # a duration beside a metric in seconds (`duration <= 20m`) reads in seconds
            from specdsl.model.assert_shape import in_seconds, time_unit

            if time_unit(left) == "s":
                right = in_seconds(right)
            elif time_unit(right) == "s":
                left = in_seconds(left)
        a = evaluate(left, mine, baseline, env, shown)
        b = evaluate(right, mine, baseline, env, shown)
        op = expr.op
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            if b == 0:
                raise _Missing(f"division by zero in `{_text(expr)}`")
            return a / b
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    raise _Missing(f"cannot evaluate `{_text(expr)}`")


def _target(ref: ast.Ref, mine, baseline):
    if ref.parts[0] == "baseline":
        return baseline, "the baseline", ref.parts[1]
    return mine, "this experiment", ref.parts[0]


def _num(value: float) -> str:
    return significant(value, 4) if isinstance(value, float) else str(value)


def _text(expr) -> str:
    from specdsl.model.printer import expr_text

    return expr_text(expr)


def check(name: str, expr: ast.Expr, mine: Results | None, baseline: Results | None, env: dict[str, Any] | None = None) -> Verdict:
    shown: list[str] = []
    try:
        ok = evaluate(expr, mine, baseline, env or {}, shown)
    except _Missing as exc:
        return Verdict(name, Status.INCONCLUSIVE, str(exc))
    except TypeError as exc:
        return Verdict(name, Status.INCONCLUSIVE, f"values cannot be compared: {exc}")
    detail = ", ".join(dict.fromkeys(shown))
    return Verdict(name, Status.PASS if ok is True else Status.FAIL, detail)
