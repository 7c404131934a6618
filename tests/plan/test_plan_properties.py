"""Properties of planning over generated specs (hypothesis)."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plan_helpers import applied_state, plan_for, resolve_text
from specdsl.plan.model import Action
from specdsl.plan.render import render_json
from specdsl.state import encode_state

ROOT = Path(__file__).resolve().parents[2]

CHANGED = (Action.CREATE, Action.REPLACE, Action.RUN)


@st.composite
def specs(draw):
    n_stacks = draw(st.integers(1, 3))
    n_servers = draw(st.integers(1, 3))
    n_work = draw(st.integers(1, 2))
    lines = []
    for i in range(n_stacks):
        pkgs = draw(st.lists(st.sampled_from(["a==1", "b==2", "c==3", "d==4"]), min_size=1, max_size=3, unique=True))
        lines.append(f'stack "s{i}" {{\n  packages = [{", ".join(chr(34) + p + chr(34) for p in pkgs)}]\n}}')
    for i in range(n_servers):
        backend = draw(st.sampled_from(["triton", "flashinfer", "fa3"]))
        lines.append(f'server "v{i}" {{\n  engine = "sglang"\n  model = "m{i % 2}"\n  args = {{ attention-backend = "{backend}" }}\n}}')
    for i in range(n_work):
        out_len = draw(st.integers(1, 4)) * 64
        lines.append(f'workload "w{i}" {{\n  output_len = {out_len}\n  requests = 8\n}}')
    n_exp = draw(st.integers(1, 5))
    for i in range(n_exp):
        s, v, w = draw(st.integers(0, n_stacks - 1)), draw(st.integers(0, n_servers - 1)), draw(st.integers(0, n_work - 1))
        body = f'  stack = stack.s{s}\n  server = server.v{v}\n  workload = workload.w{w}\n'
        if i > 0 and draw(st.booleans()):
            body += f'  baseline = experiment.e{draw(st.integers(0, i - 1))}\n  assert "ok" {{ output_throughput >= baseline.output_throughput }}\n'
        lines.append(f'experiment "e{i}" {{\n{body}}}')
    return "\n\n".join(lines) + "\n"


def _cfg(text):
    with tempfile.TemporaryDirectory() as d:
        return resolve_text(Path(d), text)


# Two planning processes with other string-hash seeds than each other (and
# than this one, whose seed is random unless PYTHONHASHSEED is set).
HASH_SEEDS = ("0", "4242")


class Worker:
    def __init__(self, seed: str):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("plan_worker.py"))], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)

    def plan_json(self, text: str, state_toml: str | None) -> str:
        self.proc.stdin.write(json.dumps({"spec": text, "state": state_toml}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the planning worker died: {self.proc.stderr.read()}"
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def workers():
    started = [Worker(seed) for seed in HASH_SEEDS]
    yield started
    for w in started:
        w.close()


@settings(max_examples=25, deadline=None)
@given(specs())
def test_plans_are_deterministic_across_processes(workers, text):
    """The same spec and state give the same JSON bytes in processes with
    different PYTHONHASHSEEDs (and in this one)."""
    cfg = _cfg(text)
    graph, here = plan_for(cfg)
    state = applied_state(graph)
    _, here_applied = plan_for(cfg, state)
    for state_toml, mine in ((None, here), (encode_state(state), here_applied)):
        a, b = (w.plan_json(text, state_toml) for w in workers)
        assert a.encode() == b.encode()
        assert a.encode() == render_json(mine).encode()


@settings(max_examples=25, deadline=None)
@given(specs())
def test_applied_state_yields_no_changes(text):
    cfg = _cfg(text)
    graph, _ = plan_for(cfg)
    _, plan = plan_for(cfg, applied_state(graph))
    assert not plan.has_changes, [(c.addr, c.action, c.reason) for c in plan.changes if c.action in CHANGED]


@settings(max_examples=25, deadline=None)
@given(specs(), st.data())
def test_workload_change_replans_only_its_benchmarks_and_checks(text, data):
    cfg = _cfg(text)
    graph, _ = plan_for(cfg)
    state = applied_state(graph)
    used = sorted({e.workload.name for e in cfg.experiments})
    target = data.draw(st.sampled_from(used))
    changed_text = text.replace(f'workload "{target}" {{\n  output_len = ', f'workload "{target}" {{\n  output_len = 9', 1)
    cfg2 = _cfg(changed_text)
    graph2, plan = plan_for(cfg2, state)
    runs = {c.addr for c in plan.changes if c.action in CHANGED}
    # a baseline only paired candidates read has no benchmark of its own
    # (graph `arm_only`): its candidate's paired benchmark uses the candidate's workload
    expected_bench = {f"benchmark.{e.name}" for e in cfg2.experiments if e.workload.name == target and graph2.arm(e.name) != "A"}
    assert {a for a in runs if a.startswith("benchmark.")} == expected_bench
    assert all(a.split(".")[0] in ("benchmark", "launch", "provision", "preflight") for a in runs)
    # nothing is created or replaced: servers start again only to serve the new benchmarks
    assert not any(c.action is Action.REPLACE for c in plan.changes)


@settings(max_examples=25, deadline=None)
@given(specs(), st.data())
def test_package_change_replans_that_provision_and_downstream_only(text, data):
    cfg = _cfg(text)
    graph, _ = plan_for(cfg)
    state = applied_state(graph)
    used = sorted({e.stack.name for e in cfg.experiments})
    target = data.draw(st.sampled_from(used))
    changed_text = text.replace(f'stack "{target}" {{\n  packages = [', f'stack "{target}" {{\n  packages = ["zz==9", ', 1)
    cfg2 = _cfg(changed_text)
    graph2, plan = plan_for(cfg2, state)
    # replaced, or created when the stack used to share an environment with
    # another stack of identical content
    replaced = {c.addr for c in plan.changes if c.action in (Action.REPLACE, Action.CREATE) and c.kind == "provision"}
    assert replaced and all(graph2.steps[a].payload["stack"].name == target for a in replaced)
    allowed = set()
    for addr in replaced:
        allowed |= {addr} | nx.descendants(graph2.dag, addr) | set(nx.ancestors(graph2.dag, addr))
    changed = {c.addr for c in plan.changes if c.action in CHANGED}
    assert changed <= allowed, changed - allowed
