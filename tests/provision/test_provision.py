"""provision against real uv/pip environments."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from pathlib import Path

import attrs
import pytest

from specdsl.hosts import Cancelled, LocalHost
from specdsl.model.config import Stack, pairs
from specdsl.provision import EnvInfo, ProvisionError, find, provision, verify
from specdsl.provision.pipconf import parse_config_list, read_pip_sources

import uv

from wheel_helpers import make_wheel


def test_transformers_env_records_versions(transformers_env: EnvInfo):
    env = transformers_env
    assert env.python_version.startswith("3.11.")
    assert Path(env.python).exists()
    assert env.packages["transformers"] == "5.19.0"
    # The CPU build came from pip's configured find-links, which uv does not read itself.
    assert env.torch == {"version": "2.13.0+cpu", "cuda": None, "nccl": None}
    assert env.nvcc is None
    assert verify(env, LocalHost())


def test_reuse_returns_the_recorded_env_quickly(transformers_stack, transformers_env: EnvInfo):
    root = Path(transformers_env.path).parent.parent
    identity = transformers_env.identity
    messages = []
    started = time.monotonic()
    again = provision(transformers_stack, LocalHost(env_root=root), identity, root / f"{identity}.log", progress=messages.append)
    assert time.monotonic() - started < 10
    assert again == attrs.evolve(transformers_env, warnings=())
    assert messages == [f"reusing environment {identity}"]


def test_tampered_env_fails_verify_and_is_rebuilt(tmp_path):
    stack = Stack(name="six", packages=("six==1.17.0",))
    log = tmp_path / "p.log"
    first = provision(stack, LocalHost(env_root=tmp_path), "six-a", log)
    assert first.packages["six"] == "1.17.0" and first.torch is None
    subprocess.run([uv.find_uv_bin(), "pip", "uninstall", "--python", first.python, "six"], check=True, capture_output=True, timeout=60)
    assert not verify(first, LocalHost())
    second = provision(stack, LocalHost(env_root=tmp_path), "six-a", log)
    assert second.packages["six"] == "1.17.0"
    assert verify(second, LocalHost())


def test_changed_stack_under_same_identity_is_rebuilt(tmp_path):
    provision(Stack(name="s", packages=("six==1.17.0",)), LocalHost(env_root=tmp_path), "same", tmp_path / "l")
    changed = provision(Stack(name="s", packages=("six==1.16.0",)), LocalHost(env_root=tmp_path), "same", tmp_path / "l")
    assert changed.packages["six"] == "1.16.0"


def test_stacks_differing_only_in_name_share_the_environment(tmp_path):
    first = provision(Stack(name="a", packages=("six==1.17.0",)), LocalHost(env_root=tmp_path), "same", tmp_path / "l")
    messages = []
    second = provision(Stack(name="b", packages=("six==1.17.0",)), LocalHost(env_root=tmp_path), "same", tmp_path / "l", progress=messages.append)
    assert second == attrs.evolve(first, warnings=()) and messages == ["reusing environment same"]


def test_missing_package_names_command_and_installer_output(tmp_path):
    stack = Stack(name="bad", packages=("specdsl-no-such-package-zz9==1.0",))
    log = tmp_path / "bad.log"
    with pytest.raises(ProvisionError) as info:
        provision(stack, LocalHost(env_root=tmp_path), "bad", log)
    err = info.value
    assert "specdsl-no-such-package-zz9==1.0" in err.command
    assert err.command[1:3] == ["pip", "install"]
    assert "specdsl-no-such-package-zz9" in err.tail  # uv's own explanation
    text = str(err)
    assert "Provisioning stack 'bad' failed" in text and str(log) in text and "last lines:" in text
    # No marker: the broken env is not reused next time.
    assert not (tmp_path / "bad" / "specdsl-env.json").exists()


def test_unreachable_index_is_left_out_with_a_warning(tmp_path):
    with socket.socket() as sock:  # a port nothing listens on: connection refused
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/simple"
    stack = Stack(name="s", packages=("six",), index=(dead,), find_links=(str(tmp_path / "missing"),))
    record = provision(stack, LocalHost(env_root=tmp_path), "s", tmp_path / "l")
    assert "six" in record.packages
    assert any(dead in w and "is unreachable from host local" in w for w in record.warnings), record.warnings
    assert any("missing" in w and "does not exist on host local" in w for w in record.warnings)


def test_warnings_of_a_build_are_not_replayed_when_the_environment_is_reused(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/simple"
    host = LocalHost(env_root=tmp_path)
    stack = Stack(name="s", index=(dead,))
    built = provision(stack, host, "s", tmp_path / "l")
    assert any(dead in w for w in built.warnings)
    messages = []
    reused = provision(stack, host, "s", tmp_path / "l", progress=messages.append)
    assert messages == ["reusing environment s"]  # no "warning: ..." either
    assert reused.warnings == () and reused == attrs.evolve(built, warnings=())
    assert find(host, "s").warnings == ()
    # the build's own record keeps them
    marker = json.loads((tmp_path / "s" / "specdsl-env.json").read_text())
    assert any(dead in w for w in marker["record"]["warnings"])


def test_exclude_and_overrides(tmp_path):
    stack = Stack(name="s", packages=("requests", "six==1.17.0"), exclude=("urllib3",), overrides=("six==1.16.0",))
    record = provision(stack, LocalHost(env_root=tmp_path), "s", tmp_path / "l")
    assert "requests" in record.packages
    assert "urllib3" not in record.packages  # a dependency of requests, dropped
    assert record.packages["six"] == "1.16.0"  # the override beats the direct pin
    assert "sys_platform == 'never'" in (tmp_path / "s" / "overrides.txt").read_text()


def test_pip_installer(tmp_path):
    stack = Stack(name="p", installer="pip", packages=("requests", "six==1.17.0"), exclude=("urllib3",), overrides=("six==1.16.0",))
    log = tmp_path / "l"
    record = provision(stack, LocalHost(env_root=tmp_path), "p", log)
    assert record.installer == "pip"
    assert "pip" in record.packages  # a pip venv has pip; the uv one does not
    assert record.packages["six"] == "1.16.0"
    assert "urllib3" not in record.packages
    assert " -m pip install " in log.read_text()
    assert verify(record, LocalHost())


def test_system_python_installs_from_find_links_only(tmp_path):
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "specdsl-testpkg", "0.1")
    stack = Stack(name="sys", python="system", packages=("specdsl-testpkg==0.1",), find_links=(str(wheels),), env=pairs({"SPX": "1"}))
    log = tmp_path / "l"
    record = provision(stack, LocalHost(env_root=tmp_path), "sys", log)
    assert record.packages["specdsl-testpkg"] == "0.1"
    assert "attrs" in record.packages  # the interpreter's own packages stay visible
    assert record.env == {"SPX": "1"}
    install = next(line for line in log.read_text().splitlines() if line.startswith("$ ") and " install " in line)
    assert "--no-index" in install and "--extra-index-url" not in install


def test_interpreter_that_is_missing_or_does_not_run_is_a_provision_error(tmp_path):
    with pytest.raises(ProvisionError, match="no-such-python does not exist"):
        provision(Stack(name="x", installer="pip", python=str(tmp_path / "no-such-python")), LocalHost(env_root=tmp_path), "x", tmp_path / "l")
    broken = tmp_path / "broken-python"
    broken.write_text("not a program\n")  # executable bit, no format the kernel runs
    broken.chmod(0o755)
    with pytest.raises(ProvisionError) as info:
        provision(Stack(name="x", installer="pip", python=str(broken)), LocalHost(env_root=tmp_path), "y", tmp_path / "l")
    assert "could not start" in str(info.value) and info.value.command[0] == str(broken)


def test_system_python_with_an_index_is_refused(tmp_path):
    with pytest.raises(ProvisionError, match="find-links only"):
        provision(Stack(name="x", python="system", index=("https://example.invalid/simple",)), LocalHost(env_root=tmp_path), "x", tmp_path / "l")


def test_cuda_toolkit_is_checked_under_cuda_home(tmp_path):
    cuda = tmp_path / "cuda"
    stack = Stack(name="c", cuda="12.8", env=pairs({"CUDA_HOME": str(cuda)}))
    with pytest.raises(ProvisionError, match="nvcc does not exist"):
        provision(stack, LocalHost(env_root=tmp_path), "c1", tmp_path / "l")
    # A stand-in nvcc that prints what the real one prints.
    (cuda / "bin").mkdir(parents=True)
    nvcc = cuda / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.8, V12.8.93'\n")
    nvcc.chmod(0o755)
    assert provision(stack, LocalHost(env_root=tmp_path), "c2", tmp_path / "l").nvcc == "12.8"
    other = Stack(name="c", cuda="13.0", env=pairs({"CUDA_HOME": str(cuda)}))
    with pytest.raises(ProvisionError, match="release 12.8"):
        provision(other, LocalHost(env_root=tmp_path), "c3", tmp_path / "l")


def test_stop_event_cancels_install(tmp_path):
    stop = threading.Event()
    stop.set()
    with pytest.raises(Cancelled):
        provision(Stack(name="s", packages=("six",)), LocalHost(env_root=tmp_path), "s", tmp_path / "l", stop=stop)


def test_parse_pip_config_list():
    text = (
        ":env:.find-links='/srv/wheels'\n"
        "global.extra-index-url='file:///a/simple file:///b/simple'\n"
        "global.find-links='/srv/wheels /more'\n"
        "global.constraint='/etc/c.txt'\n"
        "download.index-url='https://elsewhere/simple'\n"  # not a section pip install reads
        "install.index-url='https://mirror/simple'\n"
        "global.cert='/etc/ca.pem'\n"
        "freeze.timeout='5'\n"
    )
    sources = parse_config_list(text)
    assert sources.find_links == ("/srv/wheels", "/more")
    assert sources.extra_index_urls == ("file:///a/simple", "file:///b/simple")
    assert sources.constraints == ("/etc/c.txt",)
    assert sources.index_url == "https://mirror/simple"
    assert sources.cert == "/etc/ca.pem"


def test_pip_sources_from_environment_when_the_interpreter_has_no_pip(monkeypatch, tmp_path):
    # An interpreter without pip: a fresh uv venv (uv does not seed pip).
    venv = tmp_path / "nopip"
    subprocess.run([uv.find_uv_bin(), "venv", "-q", "--python", "3.11", str(venv)], check=True, timeout=120)
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    sources = read_pip_sources(LocalHost(), str(venv / "bin" / "python"))
    assert sources.find_links == (str(tmp_path),)


def test_read_pip_sources_sees_pip_environment_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://download.pytorch.org/whl/cpu")
    sources = read_pip_sources(LocalHost())
    assert str(tmp_path) in sources.find_links
    assert "https://download.pytorch.org/whl/cpu" in sources.extra_index_urls
