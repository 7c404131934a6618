"""What a command workload's step hands the runner: its scripts made the
spec folder's (on this machine only), and the stack's environment as
`{python}`/`{bin}` with the stack's and server's variables, found on the
host when this apply provisioned nothing (a server left running)."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from specdsl.apply.context import StepFailed
from specdsl.apply.steps.common import command_stack, localize_command, stack_info
from specdsl.hosts import LocalHost
from specdsl.model.config import MetricRule, Server, Stack, Workload
from specdsl.provision import provision

RULE = (MetricRule(name="x", regex="(1)"),)


def test_scripts_become_the_spec_folders_on_this_machine_only(tmp_path):
    (tmp_path / "bench.py").write_text("")
    w = Workload(name="w", command=("{python}", "bench.py", "bench", "--out", "r.py"), metrics=RULE)
    (tmp_path / "bench").mkdir()
    local = localize_command(w, tmp_path, LocalHost(env_root=tmp_path / "envs"))
    # bench.py is there; `bench` is a word; r.py is not there and stays as written (plan reports it)
    assert local.command == ("{python}", str((tmp_path / "bench.py").resolve()), "bench", "--out", "r.py")
    elsewhere = types.SimpleNamespace(key="ssh:me@gpu")  # a host that is not this machine: only its key is read
    assert localize_command(w, tmp_path, elsewhere) is w


@pytest.mark.timeout(300)
def test_the_stack_env_is_found_on_the_host_when_nothing_was_provisioned(tmp_path):
    host = LocalHost(env_root=tmp_path / "envs")
    stack = Stack(name="sys", python="system", env=(("STACK_MARK", "s"),))
    info = provision(stack, host, "sys-1", tmp_path / "provision.log")
    server = Server(name="srv", engine="command", model="m", env=(("SERVER_MARK", "v"), ("STACK_MARK", "server wins")))
    w = Workload(name="w", command=("{bin}/python", "-V"), metrics=RULE)
    # the walk of an apply that reuses a running server: no environment provisioned, the graph's provision step
    walk = types.SimpleNamespace(envs={}, graph=types.SimpleNamespace(steps={"provision.sys": types.SimpleNamespace(identity="sys-1")}))
    found = stack_info(walk, "provision.sys", host, w)
    assert found is not None and found.python == info.python
    env = command_stack(found, stack.env, server)
    assert (env.python, env.bin) == (info.python, str(Path(info.python).parent))
    assert env.env == {"STACK_MARK": "server wins", "SERVER_MARK": "v"}
    # a command that names neither needs no environment; one that does and has none fails the step
    assert stack_info(walk, "provision.sys", host, Workload(name="w", command=("true",), metrics=RULE)) is None
    walk.graph.steps["provision.sys"] = types.SimpleNamespace(identity="not-built")
    with pytest.raises(StepFailed, match="the environment of provision.sys is not on local"):
        stack_info(walk, "provision.sys", host, w)
