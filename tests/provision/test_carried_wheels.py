"""A carried wheel rebuilt under its old file name: a new stack identity, and
the new environment runs the new code (uv's cache keeps find-links wheels by
file name, so without `--refresh-package` the old build would be installed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from specdsl.graph.build import build_graph
from specdsl.hosts import LocalHost
from specdsl.model.config import Stack
from specdsl.provision import provision
from specdsl.resolve.resolver import resolve_file

from wheel_helpers import make_wheel

SPEC = """
stack "carried" {
  python     = "system"
  find_links = ["WHEELS"]
  packages   = ["specdsl-carried==0.1"]
}
server "srv" {
  engine = "command"
  model  = "m"
  command = ["true", "{port}"]
  ready_url = "/health"
}
workload "w" { requests = 1 }
experiment "e" {
  stack    = stack.carried
  server   = server.srv
  workload = workload.w
}
"""


def provision_step(spec: Path):
    resolved = resolve_file(spec)
    assert resolved.ok, [d.summary for d in resolved.diags]
    graph = build_graph(resolved.config)
    return next(s for s in graph.steps.values() if s.kind == "provision")


def value_in(python: str) -> str:
    out = subprocess.run([python, "-c", "import specdsl_carried as m; print(m.VALUE)"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_rebuilt_wheel_changes_the_identity_and_the_new_env_runs_the_new_code(tmp_path, monkeypatch):
    # A cache of uv's own for this test: the first build seeds it, as a GPU host's cache would be.
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    wheels = tmp_path / "wheels"
    wheel = make_wheel(wheels, "specdsl-carried", "0.1", code="VALUE = 'first build'\n")
    spec = tmp_path / "carried.spec"
    spec.write_text(SPEC.replace("WHEELS", str(wheels)))
    host = LocalHost(env_root=tmp_path / "envs")
    log = tmp_path / "provision.log"

    first = provision_step(spec)
    env1 = provision(first.payload["stack"], host, first.identity, log)
    assert value_in(env1.python) == "first build"

    rebuilt = make_wheel(wheels, "specdsl-carried", "0.1", code="VALUE = 'second build'\n")
    assert rebuilt == wheel  # the same file name, other code
    second = provision_step(spec)
    assert second.identity != first.identity
    env2 = provision(second.payload["stack"], host, second.identity, log)
    assert value_in(env2.python) == "second build"
    assert value_in(env1.python) == "first build"  # the old environment is another one
    install = [line for line in log.read_text().splitlines() if line.startswith("$ ") and " install " in line]
    assert all("--refresh-package specdsl-carried" in line for line in install)


def test_pip_builds_carried_sdists_without_its_wheel_cache(tmp_path):
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "specdsl-carried", "0.1")
    (wheels / "specdsl_other-0.1.tar.gz").write_bytes(b"")  # an sdist pip would cache the build of by URL
    stack = Stack(name="p", installer="pip", python="system", find_links=(str(wheels),), packages=("specdsl-carried==0.1",))
    log = tmp_path / "l"
    record = provision(stack, LocalHost(env_root=tmp_path / "envs"), "p", log)
    assert record.packages["specdsl-carried"] == "0.1"
    install = next(line for line in log.read_text().splitlines() if line.startswith("$ ") and " install " in line)
    assert "--no-cache-dir" in install


def test_only_the_stacks_own_folders_are_refreshed(tmp_path):
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "specdsl-carried", "0.1")
    log = tmp_path / "l"
    provision(Stack(name="s", python="system", find_links=(str(wheels),), packages=("specdsl-carried",)),
              LocalHost(env_root=tmp_path / "envs"), "s", log)
    install = next(line for line in log.read_text().splitlines() if line.startswith("$ ") and " install " in line)
    # the host's pip-configured find-links (here: the torch folder) are its mirror, not refreshed
    assert install.count("--refresh-package") == 1
