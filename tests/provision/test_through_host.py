"""Provisioning goes through the `Host` it is given: its interpreter, its uv,
its pip configuration, its files and its lock; nothing of this machine's
is reached around it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from specdsl.hosts import Host, LocalHost
from specdsl.model.config import Stack
from specdsl.provision import find, provision, verify
from specdsl.provision.pipconf import read_pip_sources

import uv

PROVISION = Path(__file__).resolve().parents[2] / "specdsl" / "provision"
FORBIDDEN_MODULES = {"subprocess", "fcntl", "shutil", "tempfile", "os", "requests", "specdsl.hosts.local"}
# Methods that touch files when called on a path: only a host may be asked.
FILE_METHODS = {"read_text", "write_text", "read_bytes", "write_bytes", "exists", "is_file", "is_dir", "mkdir",
                "unlink", "rmdir", "stat", "touch", "chmod", "open", "iterdir", "glob", "rglob", "resolve"}


class RecordingHost(LocalHost):
    """This machine, as a host that differs from the process driving it:
    its own environment variables, its own default interpreter and uv, and
    a log of what it was asked."""

    name = "recorder"

    def __init__(self, env_root: Path, *, default_python: str | None = None, uv: str | None = None,
                 env: dict[str, str] | None = None) -> None:
        super().__init__(env_root=env_root)
        if default_python:
            self.default_python = default_python
        self.uv = uv
        self.host_env = dict(env or {})
        self.calls: list[tuple[str, str]] = []

    def run(self, argv, *, log_path, timeout, env=None, **kw):
        self.calls.append(("run", str(argv[0])))
        return super().run(argv, log_path=log_path, timeout=timeout, env={**self.host_env, **(env or {})}, **kw)

    def which(self, program):
        self.calls.append(("which", program))
        return self.uv if program == "uv" and self.uv else super().which(program)

    def lock(self, path):
        self.calls.append(("lock", str(path)))
        return super().lock(path)

    def write_text(self, path, text, *, mode=0o600):
        self.calls.append(("write_text", str(path)))
        return super().write_text(path, text, mode=mode)

    def read_text(self, path, max_bytes=None):
        self.calls.append(("read_text", str(path)))
        return super().read_text(path, max_bytes)


def test_provision_modules_reach_no_process_or_file_around_the_host():
    for source in sorted(PROVISION.glob("*.py")):
        tree = ast.parse(source.read_text(), str(source))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {node.module or ""} | {f"{node.module}.{a.name}" for a in node.names}
            else:
                names = set()
            assert not names & FORBIDDEN_MODULES, f"{source.name}:{node.lineno} imports {names & FORBIDDEN_MODULES}"
            if isinstance(node, ast.Call):
                func = node.func
                assert not (isinstance(func, ast.Name) and func.id == "open"), f"{source.name}:{node.lineno} opens a file"
                if isinstance(func, ast.Attribute) and func.attr in FILE_METHODS:
                    receiver = func.value
                    assert isinstance(receiver, ast.Name) and receiver.id == "host", (
                        f"{source.name}:{node.lineno}: .{func.attr}() on something other than the host")


def test_system_python_is_the_hosts_default_interpreter_and_uv_the_hosts(tmp_path):
    # The host's interpreter is a venv with a module of its own (not the one running the tests).
    base = tmp_path / "host-python"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base)], check=True, timeout=120)
    site = next(base.glob("lib/python*/site-packages"))
    (site / "only_on_the_host.py").write_text("VALUE = 7\n")
    used = tmp_path / "uv-used"
    shim = tmp_path / "host-uv"
    shim.write_text(f"#!/bin/sh\necho \"$1\" >> {used}\nexec {uv.find_uv_bin()} \"$@\"\n")
    shim.chmod(0o755)
    host = RecordingHost(tmp_path / "envs", default_python=str(base / "bin" / "python"), uv=str(shim))
    assert isinstance(host, Host)
    record = provision(Stack(name="sys", python="system"), host, "ident", tmp_path / "logs" / "p.log")
    assert Path(record.path) == tmp_path / "envs" / "ident" / "venv"
    out = subprocess.run([record.python, "-c", "import only_on_the_host as m; print(m.VALUE)"],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "7", out.stderr
    assert used.read_text().split() == ["venv"]  # the host's uv made the environment
    assert ("lock", str(tmp_path / "envs" / "ident.lock")) in host.calls
    assert ("write_text", str(tmp_path / "envs" / "ident" / "specdsl-env.json")) in host.calls
    # every command ran on the host: the host's interpreter, its uv, the new env's python
    ran = {prog for kind, prog in host.calls if kind == "run"}
    assert ran <= {str(base / "bin" / "python"), str(shim), record.python}, ran


def test_find_returns_a_verified_environment_of_the_host_or_none(tmp_path):
    host = LocalHost(env_root=tmp_path / "envs")
    assert find(host, "nothing-here") is None
    record = provision(Stack(name="sys", python="system"), host, "ident", tmp_path / "p.log")
    found = find(host, "ident")
    assert found == record and verify(found, host)
    # another host (another env root) does not hold it
    assert find(LocalHost(env_root=tmp_path / "elsewhere"), "ident") is None
    # a broken environment is not found
    Path(record.python).unlink()
    assert find(host, "ident") is None


def test_pip_configuration_is_the_hosts(tmp_path):
    # The host's environment names a find-links folder this process does not know.
    host = RecordingHost(tmp_path, env={"PIP_FIND_LINKS": "/srv/host-wheels", "PIP_EXTRA_INDEX_URL": "https://host-mirror/simple"})
    sources = read_pip_sources(host)
    assert "/srv/host-wheels" in sources.find_links
    assert "https://host-mirror/simple" in sources.extra_index_urls
    assert "/srv/host-wheels" not in read_pip_sources(LocalHost()).find_links


def test_pip_configuration_of_a_host_without_that_interpreter_is_empty(tmp_path):
    host = RecordingHost(tmp_path, default_python=str(tmp_path / "no-python"))
    assert read_pip_sources(host).find_links == ()
