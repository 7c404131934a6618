"""The step graph's own walks (topological order, reachability, cycle
check) agree with networkx's, and every identity is the digest of its step's
content, also where build_graph hashes shared content only once."""

import networkx as nx
import pytest

from specdsl.graph.build import Graph, _Work, acyclic, build_graph, edges
from specdsl.graph.steps import KIND_ORDER, Step, digest, step_digest
from specdsl.names import natural_key, natural_sorted
from specdsl.resolve.resolver import resolve_file

from plan_helpers import ROOT, SPEC, resolve_text

EXAMPLES = ["examples/kimi-k25/upgrade.spec", "examples/sweep/sweep.spec"]


def example_graph(name):
    resolved = resolve_file(ROOT / name)
    assert resolved.ok, [d.summary for d in resolved.diags]
    graph = build_graph(resolved.config)
    assert not graph.diags
    return graph


@pytest.mark.parametrize("name", EXAMPLES)
def test_identity_is_digest_of_content(name):
    graph = example_graph(name)
    for step in graph.steps.values():
        assert step.identity == digest([step.kind, step.content]), step.addr


def test_step_digest_matches_digest_byte_for_byte():
    content = {"b": [1, 2.5, None, "é"], "a": {"z": 1, "y": True}, "c": "plain"}
    texts = {"a": '{"y":true,"z":1}'}
    assert step_digest("check", content, texts) == digest(["check", content])
    assert step_digest("check", content, {}) == digest(["check", content])


@pytest.mark.parametrize("name", EXAMPLES)
def test_order_and_reach_agree_with_networkx(name):
    graph = example_graph(name)
    dag = graph.dag
    assert isinstance(dag, nx.DiGraph)
    assert set(dag.nodes) == set(graph.steps)
    assert set(dag.edges) == {(d, a) for a, s in graph.steps.items() for d in s.deps + s.after}
    expected = list(nx.lexicographical_topological_sort(dag, key=lambda a: (KIND_ORDER[graph.steps[a].kind], natural_key(a))))
    assert graph.order() == expected
    for addr in graph.steps:
        assert graph.downstream(addr) == nx.descendants(dag, addr)
        assert graph.upstream(addr) == nx.ancestors(dag, addr)


def test_shared_steps_list_every_user_sorted(tmp_path):
    graph = build_graph(resolve_text(tmp_path, SPEC))
    assert graph.steps["provision.s"].experiments == ("base", "cand")
    assert graph.steps["preflight.local"].experiments == ("base", "cand")
    assert graph.steps["teardown.tiny"].experiments == ("base",)  # the candidate's pairs stop their own servers
    graph = example_graph("examples/sweep/sweep.spec")
    cells = natural_sorted(graph.by_experiment)
    assert len(cells) == 12
    provision = next(s for s in graph.steps.values() if s.kind == "provision")
    assert provision.experiments == tuple(cells)
    for step in graph.steps.values():
        assert list(step.experiments) == natural_sorted(set(step.experiments)), step.addr
        if step.kind == "teardown":
            assert step.experiments == graph.steps[step.payload["launch"]].experiments


def test_a_cycle_is_a_diagnostic_and_order_refuses_it():
    graph = Graph()
    for addr, deps in {"benchmark.a": ("benchmark.c",), "benchmark.b": ("benchmark.a",), "benchmark.c": ("benchmark.b",),
                       "benchmark.d": ()}.items():
        graph.steps[addr] = Step(addr, "benchmark", addr, {}, deps)
    work = _Work(None, graph)
    edges(work)
    acyclic(work)
    assert [d.summary for d in graph.diags] == ["The steps form a cycle"]
    assert "benchmark.a -> benchmark.b -> benchmark.c -> benchmark.a" in graph.diags[0].detail
    with pytest.raises(ValueError, match="cycle"):
        graph.order()
