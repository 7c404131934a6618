"""Step addresses say what a step is: a step of one cell carries the cell's
name; a launch (or provision) shared by cells and not the first under its
name is named after what it serves (the experiment, or the matrix values
its cells share), never after one of its cells; names stay put when the
contents change, so a plan can say what replaces what."""

from __future__ import annotations

from specdsl.graph.build import build_graph
from specdsl.plan.model import Action

from plan_helpers import applied_state, plan_for, resolve_text
from test_plan_graph import example_graph

HEAD = '''stack "s" {
  python = "3.11"
}
server "srv" {
  engine = "sglang"
  model  = "m"
  args   = { mem-fraction-static = 0.85 }
}
workload "w" {
  requests = 4
}
experiment "base" {
  stack    = stack.s
  server   = server.srv
  workload = workload.w
}
'''


def graph_of(tmp_path, text):
    graph = build_graph(resolve_text(tmp_path, HEAD + text))
    assert not graph.diags
    return graph


def kind_of(graph, kind):
    return {addr: step for addr, step in graph.steps.items() if step.kind == kind}


def test_sweep_launches_are_named_after_the_backend_they_serve():
    graph = example_graph("examples/sweep/sweep.spec")
    launches = kind_of(graph, "launch")
    # every one labelled, the first backend's too (it used to be the bare `launch.qwen`)
    assert set(launches) == {"launch.qwen/sweep[backend=triton]", "launch.qwen/sweep[backend=fa3]",
                             "launch.qwen/sweep[backend=flashinfer]"}
    for backend in ("triton", "fa3", "flashinfer"):
        served = launches[f"launch.qwen/sweep[backend={backend}]"].experiments
        assert len(served) == 4 and all(f"backend={backend}," in cell for cell in served)
    assert set(kind_of(graph, "teardown")) == {"teardown.qwen/sweep[backend=triton]", "teardown.qwen/sweep[backend=fa3]",
                                               "teardown.qwen/sweep[backend=flashinfer]"}


def test_every_step_of_one_cell_carries_the_cells_name():
    graph = example_graph("examples/sweep/sweep.spec")
    for addr, step in graph.steps.items():
        if len(step.experiments) == 1 and step.kind in ("benchmark", "check", "promote"):
            assert step.experiments[0] in addr, addr
    assert len({a for a in graph.steps if a.startswith("benchmark.")}) == 12  # no two cells share a name


def test_a_launch_serving_a_whole_sweep_is_named_after_the_sweep(tmp_path):
    graph = graph_of(tmp_path, '''
experiment "sweep" {
  matrix   = { c = [1, 4, 16] }
  stack    = stack.s
  server   = server.srv { args = { attention-backend = "fa3" } }
  workload = workload.w { concurrency = matrix.c }
}
''')
    launches = kind_of(graph, "launch")
    assert set(launches) == {"launch.srv", "launch.srv/sweep"}
    assert launches["launch.srv/sweep"].experiments == ("sweep[c=1]", "sweep[c=4]", "sweep[c=16]")
    assert "teardown.srv/sweep" in graph.steps


def test_a_launch_serving_one_cell_is_named_after_the_cell(tmp_path):
    graph = graph_of(tmp_path, '''
experiment "grid" {
  matrix   = { b = ["fa3", "triton"], on = [true, false], m = [0.5, 0.9] }
  stack    = stack.s
  server   = server.srv { args = { attention-backend = matrix.b, disable-cuda-graph = matrix.on, mem-fraction-static = matrix.m } }
  workload = workload.w
}
''')
    launches = kind_of(graph, "launch")
    assert len(launches) == 9  # base's and one per cell
    for cell in graph.by_experiment:
        if cell != "base":
            assert graph.by_experiment[cell]["launch"] == f"launch.srv/{cell}"
            assert launches[f"launch.srv/{cell}"].experiments == (cell,)
    assert "launch.srv/grid[b=fa3,on=true,m=0.5]" in launches  # values written as in the cell's name


def test_a_shared_stack_variant_is_named_after_the_values_its_cells_share(tmp_path):
    graph = graph_of(tmp_path, '''
experiment "grid" {
  matrix   = { py = ["3.12", "3.13"], c = [1, 2] }
  stack    = stack.s { python = matrix.py }
  server   = server.srv
  workload = workload.w { concurrency = matrix.c }
}
''')
    provisions = kind_of(graph, "provision")
    assert set(provisions) == {"provision.s", "provision.s/grid[py=3.12]", "provision.s/grid[py=3.13]"}
    assert provisions["provision.s/grid[py=3.13]"].experiments == ("grid[py=3.13,c=1]", "grid[py=3.13,c=2]")
    # the launches on those stacks point at their provisions' names
    for py in ("3.12", "3.13"):
        launch = graph.steps[graph.by_experiment[f"grid[py={py},c=1]"]["launch"]]
        assert launch.deps == (f"provision.s/grid[py={py}]",)


def test_a_launch_shared_by_two_experiments_is_named_after_the_first(tmp_path):
    graph = graph_of(tmp_path, '''
experiment "cand" {
  stack    = stack.s
  server   = server.srv { args = { attention-backend = "fa3" } }
  workload = workload.w
}
experiment "more" {
  matrix   = { b = ["fa3", "triton"] }
  stack    = stack.s
  server   = server.srv { args = { attention-backend = matrix.b } }
  workload = workload.w
}
''')
    launches = kind_of(graph, "launch")
    assert set(launches) == {"launch.srv", "launch.srv/cand", "launch.srv/more[b=triton]"}
    assert launches["launch.srv/cand"].experiments == ("cand", "more[b=fa3]")


def test_every_reference_points_at_a_step():
    graph = example_graph("examples/sweep/sweep.spec")
    for step in graph.steps.values():
        assert all(a in graph.steps for a in step.deps + step.after), step.addr
        if step.kind == "teardown":
            assert step.payload["launch"] in graph.steps
    for cell, steps in graph.by_experiment.items():
        for kind, addrs in steps.items():
            for addr in addrs if isinstance(addrs, tuple) else (addrs,):
                assert addr in graph.steps and cell in graph.steps[addr].experiments, (cell, kind, addr)


def test_names_stay_when_the_server_changes(tmp_path):
    sweep = '''
experiment "sweep" {
  matrix   = { b = ["fa3", "triton"], c = [1, 4] }
  stack    = stack.s
  server   = server.srv { args = { attention-backend = matrix.b } }
  workload = workload.w { concurrency = matrix.c }
}
'''
    graph, _ = plan_for(resolve_text(tmp_path, HEAD + sweep))
    state = applied_state(graph)
    changed = (HEAD + sweep).replace("mem-fraction-static = 0.85", "mem-fraction-static = 0.9")
    _, plan = plan_for(resolve_text(tmp_path, changed), state)
    replaced = {c.addr: c for c in plan.changes if c.action is Action.REPLACE}
    assert set(replaced) == {"launch.srv", "launch.srv/sweep[b=fa3]", "launch.srv/sweep[b=triton]"}
    assert replaced["launch.srv/sweep[b=fa3]"].reason == "args.mem-fraction-static: 0.85 -> 0.9"
