"""The report's parts that need no apply: assertions decoded from their
recorded form, and the diagnosis section drawn from differences of the shape
`specdsl.diagnose` gives (built here, since that package may be absent)."""

from __future__ import annotations

import re
import sys
import types

import attrs

from specdsl.model import config
from specdsl.report import diagnosis
from specdsl.report.verdicts import assertion_of
from specdsl.resolve.resolver import resolve_file


def test_an_assertion_is_decoded_from_its_recorded_form(tmp_path):
    spec = tmp_path / "a.spec"
    spec.write_text('host "h" {}\nstack "s" {\n  python = "3.12"\n}\nserver "x" {\n  engine = "vllm"\n  model = "m"\n}\n'
                    'workload "w" {\n  requests = 4\n}\nexperiment "b" {\n  host = host.h\n  stack = stack.s\n  server = server.x\n'
                    '  workload = workload.w\n}\nexperiment "e" {\n  host = host.h\n  stack = stack.s\n  server = server.x\n'
                    '  workload = workload.w\n  baseline = experiment.b\n'
                    '  assert "lat" { p99(itl) <= p99(baseline.itl) * 1.1 }\n  assert "be" { effective.x == "y" and failed == 0 }\n}\n')
    resolved = resolve_file(spec)
    assert resolved.ok, [d.summary for d in resolved.diags]
    exp = next(e for e in resolved.config.experiments if e.name == "e")
    texts = [assertion_of({"assert": config.canonical(a.expr)})[1] for a in exp.asserts]
    assert texts == ["p99(itl) <= p99(baseline.itl) * 1.1", 'effective.x == "y" and failed == 0']
    assert assertion_of({"assert": {"__kind__": "Nonsense"}}) == (None, "(not readable)")


@attrs.frozen
class Difference:  # the shape of specdsl.diagnose's differences
    category: str
    key: str
    baseline: object
    candidate: object
    silent_default: bool
    why: str
    rank: int


DIFFS = (
    Difference("package", "torch", "2.8.0", "2.9.1", False, "the stack pins another torch", 2),
    Difference("server", "attention_backend", "flashinfer", "triton", True, "not given: SGLang chose triton <b>by default</b>", 0),
    Difference("env", "CUDA_HOME", "/usr/local/cuda-12.8", "/usr/local/cuda-13.0", False, "the stack sets it", 1),
)


def test_differences_are_drawn_by_rank_with_silent_defaults_marked_and_escaped():
    page = diagnosis.render_differences(reversed(DIFFS))
    keys = [k for k in ("attention_backend", "CUDA_HOME", "torch")]
    assert [page.index(f"<code>{k}</code>") for k in keys] == sorted(page.index(f"<code>{k}</code>") for k in keys)
    assert page.count('class="fail"') == 1 and "yes: the server chose it" in page
    # numbered from 1 in the order drawn, as `specdsl diagnose` prints them (ranks start at 0)
    assert [int(n) for n in re.findall(r'<td class="num">(\d+)</td>', page)] == [1, 2, 3]
    assert "&lt;b&gt;by default&lt;/b&gt;" in page and "<b>by default" not in page
    assert "No difference found" in diagnosis.render_differences(())


class _View:
    def __init__(self, run, base_run=None):
        self.run, self.base_run = run, base_run
        self.name, self.baseline, self.paired = "cand", "base", base_run is None


def test_the_section_is_left_out_without_the_package_and_drawn_with_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "specdsl.diagnose", None)  # absent: importing it raises ImportError
    assert diagnosis.diagnosis_section(object(), "sd", _View("cand-run", "base-run")) == ""
    calls = []

    def compare(state, baseline_run, candidate_run, *, state_dir, labels, **experiments):
        calls.append((baseline_run, candidate_run, state_dir, labels))
        return types.SimpleNamespace(differences=list(DIFFS), notes=["no log recorded"])

    monkeypatch.setitem(sys.modules, "specdsl.diagnose", types.SimpleNamespace(compare=compare))
    page = diagnosis.diagnosis_section(object(), "sd", _View("cand-run", "base-run"))
    assert calls == [("base-run", "cand-run", "sd", ("base", "cand"))] and page.count("<tr") == 4
    assert "Note: no log recorded" in page
    # a paired run holds both arms: it is passed as both
    diagnosis.diagnosis_section(object(), "sd", _View("paired-run"))
    assert calls[-1][:2] == ("paired-run", "paired-run")

    def broken(state, baseline_run, candidate_run, **kw):
        raise RuntimeError("no effective configuration recorded")

    monkeypatch.setitem(sys.modules, "specdsl.diagnose", types.SimpleNamespace(compare=broken))
    assert "could not be made: no effective configuration recorded" in diagnosis.diagnosis_section(object(), "sd", _View("r"))
