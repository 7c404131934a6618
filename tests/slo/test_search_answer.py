"""An assertion over a search's answer (`search.concurrency >= 16`): how it
is checked where it is written, kept out of what each probe must meet, and
decided on the answer (specdsl.cli.search_commands.answer_verdicts). In
process: the resolver on a spec file, the verdicts on an answer; the CLI
search that reaches them is tests/slo/test_search.py."""

from __future__ import annotations

import pytest

from slo_spec import write_spec
from specdsl.cli.search_commands import answer_verdicts, probe_of
from specdsl.model.search import answer_asserts, describe, slo_asserts
from specdsl.resolve.resolver import resolve_file

SLO = '  assert "slo" { goodput_ratio >= 0.9 }\n'
SEARCH = '  search = { over = "concurrency", from = 1, to = 16 }\n'


class _Spec:
    def __init__(self, tmp_path):
        self.spec, self.pids = tmp_path / "f.spec", tmp_path / "pids"


def _resolved(tmp_path, experiment: str):
    spec = _Spec(tmp_path)
    write_spec(spec, workload="  slo = { ttft = 150ms }\n", experiment=experiment)
    return resolve_file(spec.spec)


def _errors(resolved) -> list[tuple[str, str]]:
    return [(d.summary, f"{d.span.line}:{d.span.col}" if d.span else "") for d in resolved.diags if d.severity == "error"]


def test_an_assertion_over_the_answer_is_not_what_a_probe_meets(tmp_path):
    r = _resolved(tmp_path, SEARCH + SLO + '  assert "capacity" { search.concurrency >= 4 }\n')
    assert not _errors(r), _errors(r)
    (exp,) = r.config.searches
    assert [a.name for a in slo_asserts(exp)] == ["slo"] and [a.name for a in answer_asserts(exp)] == ["capacity"]
    assert [a.name for a in probe_of(exp, 8).asserts] == ["slo"]  # each probe meets the SLO only
    assert describe(exp).endswith("at most 8 probes; then capacity on the answer (search.concurrency)")


@pytest.mark.parametrize("line, summary, where", [
    ('  assert "capacity" { search.rate >= 4 }\n', "Unknown reference `search.rate`", "25:23"),
    ('  assert "capacity" { search.concurrency >= 4 and goodput_ratio >= 0.5 }\n',
     "An assertion over the search's answer reads `search.concurrency`, numbers and `var.NAME`, not `goodput_ratio`", "25:51"),
])
def test_an_answer_assertion_is_checked_where_it_is_written(tmp_path, line, summary, where):
    assert (summary, where) in _errors(_resolved(tmp_path, SEARCH + SLO + line))


def test_the_answer_needs_a_search_and_a_search_an_slo(tmp_path):
    errors = _errors(_resolved(tmp_path, SLO + '  assert "capacity" { search.concurrency >= 4 }\n'))
    assert ("`search.concurrency` is the answer of a search", "24:23") in errors, errors
    errors = _errors(_resolved(tmp_path, SEARCH + '  assert "capacity" { search.concurrency >= 4 }\n'))
    assert [s for s, _ in errors] == ["A search needs an assertion to meet"], errors


def test_the_answer_is_decided_on_the_highest_value_that_meets(tmp_path):
    r = _resolved(tmp_path, SEARCH + SLO + '  assert "capacity" { search.concurrency >= 8 }\n')
    (exp,) = r.config.searches
    (v,) = answer_verdicts(exp, 8, 9, {})
    assert (v.status, v.detail) == ("pass", "search.concurrency = 8")
    (v,) = answer_verdicts(exp, 5, 6, {})
    assert (v.status, v.detail) == ("fail", "search.concurrency = 5")
    (v,) = answer_verdicts(exp, None, 1, {})  # not even `from` meets: there is no highest
    assert (v.status, v.detail) == ("fail", "no concurrency from 1 meets the SLO (1 does not)")
    (v,) = answer_verdicts(exp, 16, None, {})  # every value met: `to` is a lower bound
    assert v.status == "pass" and v.detail.endswith("every concurrency up to `to` (16) meets: at least that"), v.detail
