"""The JIT caches of a host and stack (specdsl.servers.caches): one folder
beside the provisioned environment, the compilers pointed at it unless the
stack or the server says otherwise, cold until a launch got ready with it;
and what the plan says of it (specdsl.plan.cost.cold_note)."""

from __future__ import annotations

import platform
import sys

from specdsl.hosts import LocalHost
from specdsl.plan.cost import cold_note
from specdsl.provision import EnvInfo
from specdsl.servers import caches


def env_at(tmp_path, identity="abc123") -> EnvInfo:
    return EnvInfo(identity=identity, path=str(tmp_path / identity / "venv"), python=sys.executable,
                   python_version=platform.python_version(), packages={}, torch=None, nvcc=None, created="")


def test_every_compiler_points_at_the_stacks_folder_unless_set(tmp_path):
    env = env_at(tmp_path)
    got = caches.cache_env(env, {"TRITON_CACHE_DIR"})
    root = tmp_path / "abc123" / "jit-cache"
    assert "TRITON_CACHE_DIR" not in got  # the stack's or the server's own wins
    assert got["TORCHINDUCTOR_CACHE_DIR"] == str(root / "inductor")
    assert got["VLLM_CACHE_ROOT"] == str(root / "vllm")
    assert {"FLASHINFER_WORKSPACE_BASE", "TVM_FFI_CACHE_DIR", "SGLANG_DG_CACHE_DIR"} <= set(got)
    assert caches.cache_key(LocalHost(), env) == "local abc123"


def test_cold_until_a_launch_got_ready_then_warm_for_every_later_one(tmp_path):
    env, host = env_at(tmp_path), LocalHost()
    assert caches.prepare(host, env) is True
    assert (tmp_path / "abc123" / "jit-cache").is_dir()
    assert caches.prepare(host, env) is True  # a launch that never got ready filled nothing
    caches.mark(host, env)
    assert caches.prepare(host, env) is False
    assert caches.prepare(host, env_at(tmp_path, "other")) is True  # another stack: its own folder


def test_an_environment_specdsl_did_not_lay_out_keeps_its_own_caches(tmp_path):
    env = EnvInfo(identity="system", path=sys.prefix, python=sys.executable, python_version=platform.python_version(),
                  packages={}, torch=None, nvcc=None, created="")
    assert caches.cache_env(env, set()) == {} and caches.cache_key(LocalHost(), env) == ""
    assert caches.prepare(LocalHost(), env) is None


def test_the_plan_names_the_cold_launches():
    stacks = [("vllm", "local", "e1"), ("vllm", "local", "e1"), ("sglang", "ssh:gpu", "e2")]
    note = cold_note(stacks, frozenset({"local e1"}))
    assert note == ("the first launch of stack sglang on host ssh:gpu is cold (no JIT cache recorded there: "
                    "it compiles its kernels, slower than recorded)")
    assert cold_note(stacks, frozenset({"local e1", "ssh:gpu e2"})) == ""
