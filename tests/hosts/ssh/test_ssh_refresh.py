"""Refresh over ssh: environments by their interpreter on the host, servers
alive there and answering through a forward made for the refresh."""

from __future__ import annotations

import time

from specdsl.apply.refresh import refresh
from specdsl.hosts import HostRegistry
from specdsl.hosts.registry import SSH_CONFIG_ENV
from specdsl.model.config import Host as HostDecl
from specdsl.state import Environment, ServerRecord, State


def test_refresh_asks_the_ssh_host(ssh_host, sshd, tmp_path, monkeypatch):
    monkeypatch.setenv(SSH_CONFIG_ENV, str(sshd.config))
    decl = HostDecl("loop", ssh="specdsl-test", workdir=str(ssh_host.workdir))
    port = ssh_host.free_port()
    live = ssh_host.start([ssh_host.default_python, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                          log_path=ssh_host.workdir / "http" / "server.log", cwd=ssh_host.workdir)
    dead = ssh_host.start(["true"], log_path=ssh_host.workdir / "dead" / "server.log")
    try:
        deadline = time.monotonic() + 20
        while ssh_host.port_free(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        python = ssh_host.workdir / "envs" / "e1" / "venv" / "bin" / "python"
        ssh_host.write_text(python, "")
        key = "ssh:specdsl-test"
        state = State.new()
        # the recorded address is a forward of an apply long gone: refresh makes its own
        state = state.with_server(ServerRecord("alive", "launch.a", key, live.pid, live.pgid, port, "http://127.0.0.1:1"))
        state = state.with_server(ServerRecord("gone", "launch.b", key, dead.pid, dead.pgid, port + 1, "http://127.0.0.1:2"))
        state = state.with_environment(Environment("e1", key, str(python.parent.parent.parent), str(python), "3.11"))
        state = state.with_environment(Environment("e2", key, "/nope", "/nope/bin/python", "3.11"))
        registry = HostRegistry()
        fresh = refresh(state, registry, names={"loop": decl})
        registry.close()
        assert fresh.servers == frozenset({"alive"})
        assert fresh.environments == frozenset({"e1"})
        assert any("launch.b" in d and "does not answer" in d for d in fresh.drift)
        assert any("e2" in d and "missing" in d for d in fresh.drift)
        # a host that cannot be reached: its records stand, and the plan says why
        monkeypatch.setenv(SSH_CONFIG_ENV, str(tmp_path / "no-config"))
        (tmp_path / "no-config").write_text("Host specdsl-test\n  HostName no-such-host.invalid\n")
        unreachable = refresh(state, names={"loop": decl})
        assert unreachable.servers == frozenset({"alive", "gone"}) and unreachable.environments == frozenset({"e1", "e2"})
        assert [d for d in unreachable.drift if "host loop (specdsl-test)" in d and "unknown host" in d]
    finally:
        ssh_host.stop(live, grace_s=5)
