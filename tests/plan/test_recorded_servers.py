"""specdsl.operations.recorded_servers: the host declarations and launch identities
that plan, apply and destroy hand to apply.orphans, from one place."""

from __future__ import annotations

from specdsl.cli import apply_commands, destroy_commands, plan_commands
from specdsl.operations import recorded_servers
from specdsl.hosts import host_key

from test_plan_hosts import graph_of, two_hosts

REMOTE = '  ssh = "gpu-box"\n'


def test_graph_hosts_are_by_physical_key_and_launches_by_identity(tmp_path):
    graph = graph_of(tmp_path, two_hosts(box=REMOTE), "x.spec")
    hosts = recorded_servers.graph_hosts(graph)
    assert sorted(hosts) == ["local", "ssh:gpu-box"]
    assert hosts["ssh:gpu-box"].ssh == "gpu-box" and hosts["local"].ssh is None
    launches = [s for s in graph.steps.values() if s.kind == "launch"]
    assert len(launches) == 2  # on two machines the arms are measured apart: one launch each
    assert recorded_servers.launch_identities(graph) == {s.identity for s in launches}


def test_spec_hosts_are_by_name_and_physical_key(tmp_path):
    (tmp_path / "x.spec").write_text(two_hosts(box=REMOTE))
    hosts = recorded_servers.spec_hosts(str(tmp_path / "x.spec"))
    assert {"box", "gpu", "ssh:gpu-box", "local"} <= set(hosts)
    assert hosts["box"] is hosts["ssh:gpu-box"] and host_key(hosts["gpu"]) == "local"
    (tmp_path / "bad.spec").write_text("experiment {")
    assert recorded_servers.spec_hosts(str(tmp_path / "bad.spec")) == {}  # destroy goes on without it
    assert recorded_servers.spec_hosts(None) == {}


def test_the_commands_keep_no_copy_of_their_own():
    for module in (plan_commands, apply_commands, destroy_commands):
        assert not hasattr(module, "_decls") and not hasattr(module, "_launch_identities"), module.__name__
