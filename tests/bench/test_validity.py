"""Run validity (specdsl.bench.validity) and exact verdicts on counts
(specdsl.apply.counts): pure functions, checked on hand-made values."""

from __future__ import annotations

import attrs
import pytest

from specdsl.apply import checks, counts
from specdsl.apply.judge import Measured, judge_experiment
from specdsl.bench.validity import (allowed_failures, describe_invalid, excluded_pairs, invalid_runs, run_invalid,
                                    valid_document)
from specdsl.model import ast
from specdsl.model.config import Workload
from specdsl.model.counts import COUNTS, count_shape, is_count
from specdsl.model.build import parse


def w(**kw) -> Workload:
    return Workload(name="w", **kw)


@pytest.mark.parametrize(("workload", "requests", "allowed"), [
    (w(), 240, 0),
    (w(max_failed=3), 240, 3),
    (w(max_failed_fraction=0.01), 240, 2),  # 2.4, rounded down
    (w(max_failed_fraction=0.01), 100, 1),
    (w(max_failed_fraction=0.5), 10, 5),
    (w(max_failed_fraction=1.0), 10, 10),
])
def test_allowed_failures(workload, requests, allowed):
    assert allowed_failures(workload, requests) == allowed


def test_a_run_is_invalid_above_max_failed_or_with_short_outputs():
    assert run_invalid({"completed": 240, "failed": 0}, w()) == ""
    assert run_invalid({"completed": 32, "failed": 208}, w()) == "208 of 240 requests failed (max_failed 0)"
    assert run_invalid({"completed": 99, "failed": 1}, w(max_failed_fraction=0.01)) == ""
    assert run_invalid({"completed": 98, "failed": 2}, w(max_failed_fraction=0.01)) == "2 of 100 requests failed (max_failed 1%)"
    assert run_invalid({"completed": 10, "failed": 3}, w(max_failed=3)) == ""
    assert run_invalid({"completed": 10, "failed": 0}, w(), "short outputs: 1 of 10") == "short outputs: 1 of 10"


def _doc():
    runs = [{"index": i, "metrics": {"completed": 10.0}} for i in range(4)]
    runs[3]["invalid"] = "5 of 10 requests failed (max_failed 0)"
    pairs = [{"pair": 0, "blocks": [{"arm": "A", "runs": [0]}, {"arm": "B", "runs": [1]}]},
             {"pair": 1, "blocks": [{"arm": "B", "runs": [2]}, {"arm": "A", "runs": [3]}]}]
    return {"runs": runs, "pairs": pairs}


def test_an_invalid_run_leaves_the_document_and_its_pair_with_both_blocks():
    doc = _doc()
    assert invalid_runs(doc) == [(3, "5 of 10 requests failed (max_failed 0)")]
    assert describe_invalid(invalid_runs(doc)) == "run 3: 5 of 10 requests failed (max_failed 0)"
    valid = valid_document(doc)
    assert [r["index"] for r in valid["runs"]] == [0, 1, 2] and [p["pair"] for p in valid["pairs"]] == [0]
    assert excluded_pairs(doc) == [(1, "arm A run 3: 5 of 10 requests failed (max_failed 0)")]
    assert doc["runs"][3]["invalid"] and len(doc["pairs"]) == 2  # the document itself is left as it was
    clean = {"runs": doc["runs"][:3]}
    assert valid_document(clean) is clean


def _expr(text: str):
    file, diags = parse(f'experiment "e" {{\n  assert "a" {{ {text} }}\n}}\n', "x.spec")
    assert not diags, diags
    return next(item for item in file.statements[0].body if isinstance(item, ast.Assert)).expr


def test_which_assertions_read_a_count():
    assert set(COUNTS) >= {"completed", "failed", "total_input_tokens", "total_output_tokens"}
    assert "output_throughput" not in COUNTS and "duration" not in COUNTS
    assert count_shape(_expr("failed == 0"))[:2] == ("failed", "==")
    assert count_shape(_expr("240 <= completed"))[:2] == ("completed", ">=")
    assert count_shape(_expr("completed >= var.n * 2"))[:2] == ("completed", ">=")
    # the extreme of a count that bounds every run is that count, exactly (issue 34)
    assert count_shape(_expr("max(failed) <= 2"))[:2] == ("failed", "<=")
    assert count_shape(_expr("1 <= min(completed)"))[:2] == ("completed", ">=")
    for text in ("output_throughput >= 1", "min(completed) <= 1", "max(failed) >= 1", "completed >= baseline.completed",
                 "failed == 0 and completed >= 1"):
        assert not is_count(_expr(text)), text


def _measured(*runs):
    return Measured(None, None, candidate_runs=tuple(checks.Results(({"completed": float(c), "failed": float(f)},), {}, {})
                                                     for c, f in runs))


def test_a_count_is_decided_exactly_over_every_run_at_any_number_of_runs():
    one = counts.decide_count("ok", _expr("completed >= 1"), counts.runs_of(_measured((240, 0))), {})
    assert one.status == "pass" and not one.gating
    assert one.detail == "completed >= 1 in every one of 1 valid run (a count: exact, no interval): 240"
    bad = counts.decide_count("none-failed", _expr("failed == 0"), counts.runs_of(_measured((240, 0), (239, 1), (240, 0))), {})
    assert bad.status == "fail" and bad.detail.endswith(": run 1: failed = 1")
    none = counts.decide_count("ok", _expr("completed >= 1"), [], {})
    assert none.status == "error" and none.detail == "no valid run to read"
    assert counts.decide_count("x", _expr("output_throughput >= 1"), [], {}) is None


def test_counts_are_not_gating_and_leave_holm_alone():
    exp = attrs.make_class("Exp", ["asserts", "workload"])(
        (ast.Assert("ok", _expr("completed >= 1")), ast.Assert("fast", _expr("output_throughput >= 1"))), w(runs=1))
    verdicts = judge_experiment(exp, _measured((240, 0)), {})
    assert verdicts["ok"].status == "pass" and not verdicts["ok"].gating
    assert verdicts["fast"].gating and "Holm" not in verdicts["fast"].detail  # one gating assertion: no correction
