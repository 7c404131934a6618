"""`effective.torch_cuda` (issue 34): what the stack under test was built as,
read from its provisioned environment, so that an assertion can hold a
cu130 stack to torch built for CUDA 13.0."""

from __future__ import annotations

import types

from specdsl.apply import checks
from specdsl.apply.stack_facts import stack_facts
from specdsl.graph.build import build_graph
from specdsl.model.build import parse
from specdsl.model import ast
from specdsl.resolve.resolver import resolve_file
from specdsl.state.model import Environment, State

SPEC = '''stack "s" {
  python = "3.12"
  cuda   = "13.0"
}
server "m" {
  engine = "sglang"
  model  = "m"
}
workload "w" { requests = 1 }
experiment "e" {
  stack    = stack.s
  server   = server.m
  workload = workload.w
  assert "built" { effective.torch_cuda == "13.0" }
}
'''


def test_the_benchmark_reads_what_torch_was_built_for(tmp_path):
    (tmp_path / "x.spec").write_text(SPEC)
    resolved = resolve_file(tmp_path / "x.spec")
    assert resolved.ok, resolved.diags
    graph = build_graph(resolved.config)
    bench = graph.steps[graph.by_experiment["e"]["benchmark"]]
    prov = graph.steps["provision.s"]  # through launch.m
    env = Environment(prov.identity, "local", "/envs/x", "3.12", "3.12.1", (), (("version", "2.9.0"), ("cuda", "12.8")),
                      nvcc="13.0")
    state = State.new().with_environment(env)
    walk = types.SimpleNamespace(graph=graph, envs={})
    facts = stack_facts(walk, state, bench)
    assert facts == {"torch_cuda": "12.8", "torch_version": "2.9.0", "nvcc": "13.0"}
    # the assertion reads it: a stack built against the wrong CUDA FAILs
    file, _ = parse('experiment "e" {\n  assert "a" { effective.torch_cuda == "13.0" }\n}\n', "y.spec")
    expr = next(i for i in file.statements[0].body if isinstance(i, ast.Assert)).expr
    verdict = checks.check("built", expr, checks.Results((), {}, facts), None)
    assert verdict.status == "fail" and "effective.torch_cuda = '12.8'" in verdict.detail
    # nothing provisioned, nothing recorded: no facts, never a guess
    assert stack_facts(walk, State.new(), bench) == {}


PAIRED = '''stack "old" { python = "3.12" }
stack "new" {
  python = "3.12"
  cuda   = "13.0"
}
server "m" {
  engine = "sglang"
  model  = "m"
}
workload "w" { requests = 1 }
experiment "base" {
  stack    = stack.old
  server   = server.m
  workload = workload.w
}
experiment "e" {
  stack    = stack.new
  server   = server.m
  workload = workload.w
  baseline = experiment.base
  assert "built" { effective.torch_cuda == "13.0" }
}
'''


def test_a_paired_benchmark_reads_its_candidates_stack(tmp_path):
    """A paired benchmark depends on both arms' provisions, the baseline's
    first: the facts are the candidate's (its last dependency), which the
    paired step records (apply/steps/paired.py, `record`)."""
    (tmp_path / "x.spec").write_text(PAIRED)
    resolved = resolve_file(tmp_path / "x.spec")
    assert resolved.ok, resolved.diags
    graph = build_graph(resolved.config)
    bench = graph.steps[graph.by_experiment["e"]["benchmark"]]
    old, new = graph.steps["provision.old"], graph.steps["provision.new"]
    assert bench.deps == (old.addr, new.addr)
    state = State.new()
    for prov, cuda in ((old, "12.8"), (new, "13.0")):
        state = state.with_environment(Environment(prov.identity, "local", f"/envs/{prov.addr}", "3.12", "3.12.1", (),
                                                   (("version", "2.9.0"), ("cuda", cuda))))
    walk = types.SimpleNamespace(graph=graph, envs={})
    assert stack_facts(walk, state, bench)["torch_cuda"] == "12.8"  # the step's first dependency: the baseline's
    assert stack_facts(walk, state, bench, deps=bench.deps[-1:])["torch_cuda"] == "13.0"
