"""A `keep_running` server on an ssh host, reused by a later apply (a real
sshd on loopback; the server is the stdlib streaming double of known
timing, tests/bench/timed_server.py, started on the host).

The address state records for it is the forward of the apply that started
it, gone with that apply's master connection; a later apply has its own
master and its own forward, on another local port. Reached at the recorded
address, the server read as `alive, not answering` (frozen) and was stopped
before the walk, and a reused handle would have sent the benchmark to a
port nothing listens on."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from specdsl.apply.refresh import refresh
from specdsl.operations.apply import walk
from specdsl.graph.build import build_graph
from specdsl.hosts import HostRegistry
from specdsl.hosts.registry import SSH_CONFIG_ENV
from specdsl.plan.diff import make_plan
from specdsl.plan.model import Action
from specdsl.resolve.resolver import resolve_file
from specdsl.state import Environment, ServerRecord, State, load_state, locked, write_state

TIMED = Path(__file__).resolve().parents[2] / "bench" / "timed_server.py"
GONE = "http://127.0.0.1:1"  # the recorded forward of an apply long gone: nothing listens there


def test_a_kept_server_reused_by_a_later_apply_is_reached_through_this_applys_forward(sshd, tmp_path, monkeypatch):
    monkeypatch.setenv(SSH_CONFIG_ENV, str(sshd.config))
    workdir = tmp_path / "workdir"  # the host is this machine over loopback: its files are read here directly
    spec = tmp_path / "e.spec"
    spec.write_text(f'''
host "loop" {{
  ssh     = "specdsl-test"
  workdir = "{workdir}"
}}
stack "sys" {{
  python = "system"
}}
server "s" {{
  engine       = "command"
  model        = "timed:1:0"
  command      = ["python3", "{TIMED}", "--port", "{{port}}", "--ttft-ms", "1", "--itl-ms", "0"]
  keep_running = true
}}
workload "w" {{
  requests   = 2
  output_len = 2
  runs       = 1
  warmup     = 0
}}
experiment "e" {{
  host     = host.loop
  stack    = stack.sys
  server   = server.s
  workload = workload.w
}}
''')
    resolved = resolve_file(spec)
    assert resolved.ok, [d.summary for d in resolved.diags]
    graph = build_graph(resolved.config, spec_dir=tmp_path)
    launch, prov = graph.steps["launch.s"], graph.steps["provision.sys"]
    registry = HostRegistry()  # this apply's: its own master connection, its own forwards
    host = registry.get(resolved.config.hosts[0])
    # what the earlier apply left: the server up on the host, and its records
    log = workdir / "runs" / "earlier" / "server.log"
    proc = host.start([host.default_python, str(TIMED), "--port", "0", "--ttft-ms", "1", "--itl-ms", "0"], log_path=log)
    try:
        deadline = time.monotonic() + 20
        while "PORT " not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.02)
        port = int(log.read_text().split("PORT ")[1].split()[0])
        python = workdir / "envs" / prov.identity / "venv" / "bin" / "python"
        python.parent.mkdir(parents=True)
        python.write_text("")
        key = "ssh:specdsl-test"
        state = State.new().with_environment(Environment(prov.identity, key, str(python.parents[1]), str(python), "3.12"))
        state = state.with_server(ServerRecord(launch.identity, "launch.s", key, proc.pid, proc.pgid, port, GONE, spec=str(spec)))
        state_dir = tmp_path / ".specdsl"
        decls = {h.name: h for h in resolved.config.hosts}
        with locked(state_dir, "apply") as lock:
            state = write_state(state_dir, state, lock=lock)
            fresh = refresh(state, registry, decls, {prov.identity: prov.payload["host"]})
            plan = make_plan(graph, state, fresh, spec=str(spec), spec_digest="d")
            assert {c.addr: c.action for c in plan.changes}["launch.s"] is Action.REUSE
            result = walk(plan, graph, registry=registry, state_dir=state_dir, state=state, lock=lock,
                          spec=spec)
        failed = "\n".join(f"{o.addr}: {o.detail}" for o in result.outcomes if o.status.name == "FAILED")
        assert result.exit_code() == 0, failed
        # reused, not stopped as frozen and launched again
        assert result.launches == 0 and host.alive(proc)
        here = host.reach(port)
        assert here[1] != 1
        reused = next(o for o in result.outcomes if o.addr == "launch.s")
        assert reused.detail == f"running at http://127.0.0.1:{here[1]}", reused.detail
        # the benchmark ran through that forward, and the record is kept for the next apply
        after = load_state(state_dir)
        assert after.result(graph.steps["benchmark.e"].identity) is not None
        assert after.server(launch.identity).pid == proc.pid
    finally:
        # the host is this machine: its servers' groups are stopped here, without a round trip (also
        # one a failing apply launched again and kept)
        recorded = load_state(tmp_path / ".specdsl") if (tmp_path / ".specdsl").exists() else None
        for pgid in {proc.pgid} | {srv.pgid for srv in (recorded.servers if recorded else ())}:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        registry.close()
