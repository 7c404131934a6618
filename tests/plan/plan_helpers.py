import json
from pathlib import Path


from specdsl.graph.build import build_graph
from specdsl.plan.diff import make_plan
from specdsl.plan.model import Refresh
from specdsl.resolve.resolver import resolve_file
from specdsl.state import Environment, RunRecord, ServerRecord, State, StepRecord

ROOT = Path(__file__).resolve().parents[2]


def resolve_text(tmp_path: Path, text: str, name: str = "x.spec"):
    path = tmp_path / name
    path.write_text(text)
    resolved = resolve_file(path)
    assert resolved.ok, [d.summary for d in resolved.diags]
    return resolved.config


def plan_for(cfg, state=None, refresh=None, **kw):
    graph = build_graph(cfg)
    assert not graph.diags
    if refresh is None:
        refresh = Refresh() if state is None else Refresh(
            frozenset(e.identity for e in state.environments), frozenset(s.identity for s in state.servers)
        )
    return graph, make_plan(graph, state, refresh, spec="x.spec", spec_digest="d", **kw)


def applied_state(graph, state=None, *, keep_servers=False) -> State:
    """What a complete apply of `graph` records: every provision's
    environment, every step's content, every benchmark's completed result
    (servers torn down unless kept)."""
    state = state or State.new()
    n = 0
    for addr in graph.order():
        step = graph.steps[addr]
        content = json.dumps(step.content, sort_keys=True)
        state = state.with_step(StepRecord(addr, step.kind, step.identity, content, "t"))
        if step.kind == "provision":
            state = state.with_environment(Environment(step.identity, "local", f"/envs/{step.identity}", "/envs/py", "3.11"))
        elif step.kind == "launch" and (keep_servers or step.payload["server"].keep_running):
            state = state.with_server(ServerRecord(step.identity, addr, "local", 1, 1, 8000, "http://127.0.0.1:8000"))
        elif step.kind == "benchmark":
            n += 1
            run = RunRecord(id=f"r{n}", step=addr, identity=step.identity, experiment=step.experiments[0], status="completed", started="t")
            state = state.with_run(run)
    return state


SPEC = '''
stack "s" {
  python   = "3.11"
  packages = ["transformers==5.19.0", "torch==2.13.0"]
}
server "tiny" {
  engine = "sglang"
  model  = "m"
  args   = { attention-backend = "triton" }
}
workload "w" {
  output_len  = 64
  concurrency = 4
  requests    = 16
}
experiment "base" {
  stack    = stack.s
  server   = server.tiny
  workload = workload.w
  # an assertion of its own: base is benchmarked on its own launch (a
  # baseline only paired candidates read is measured as their arm alone)
  assert "serves" { output_throughput > 0 }
}
experiment "cand" {
  stack    = stack.s
  server   = server.tiny { args = { attention-backend = "flashinfer" } }
  workload = workload.w
  baseline = experiment.base
  assert "faster" { output_throughput >= baseline.output_throughput * 1.03 }
  promote  = "prod"
}
'''

