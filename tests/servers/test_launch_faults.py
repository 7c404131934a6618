"""launch/teardown with real processes of the `command` engine: a stdlib
OpenAI double (fast) and servers that fail in the ways real ones do."""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from specdsl.servers import LaunchError, answers, effective_config, launch, teardown
from specdsl.hosts import Cancelled, LocalHost
from specdsl.model.config import Server, pairs
from specdsl.provision import EnvInfo

from specdsl.hosts import LocalHost

HOST = LocalHost()  # one host object: it reaps the servers it started

DOUBLE = str(Path(__file__).with_name("openai_double.py"))


@pytest.fixture(scope="module")
def system_env() -> EnvInfo:
    """The interpreter running the tests, as an environment record (the
    `command` engine needs no packages)."""
    import platform

    return EnvInfo(
        identity="system", path=sys.prefix, python=sys.executable, python_version=platform.python_version(),
        packages={}, torch=None, nvcc=None, created="",
    )


def group_gone(pgid: int) -> bool:
    return LocalHost().group_pids(pgid) == []


def command_server(*argv: str, ready_timeout: float = 20, port: int | None = None, **kw) -> Server:
    return Server(name="s", engine="command", model="tiny", command=tuple(argv), ready_url="/health",
                  ready_timeout=ready_timeout, port=port, **kw)


def test_launch_waits_for_health_and_a_completion(system_env, tmp_path):
    server = command_server(sys.executable, DOUBLE, "{port}", "--health-after", "1.5", env=pairs({"SPX": "1"}))
    started = time.monotonic()
    handle = launch(server, system_env, tmp_path, host=HOST)
    try:
        assert time.monotonic() - started >= 1.5  # /health said 503 until then
        assert handle.pgid == handle.pid
        assert answers(handle, HOST)
        log = Path(handle.log_path).read_text()
        assert "completion request for tiny" in log  # readiness sent a real completion
        assert handle.argv[-1] != "{port}" and str(handle.port) in handle.argv
        config, warnings = effective_config(server, handle, HOST)
        assert config == {} and warnings == []
    finally:
        teardown(handle, HOST)
    assert group_gone(handle.pgid)
    assert not answers(handle, HOST)


def test_sglang_server_info_is_the_effective_config(system_env, tmp_path):
    handle = launch(command_server(sys.executable, DOUBLE, "{port}"), system_env, tmp_path, host=HOST)
    try:
        sglang = Server(name="s", engine="sglang", model="tiny", args=(("tp-size", 1),))
        config, warnings = effective_config(sglang, handle, HOST)
    finally:
        teardown(handle, HOST)
    assert config["attention_backend"] == "flashinfer" and config["version"] == "0.5.9"
    assert config["limits.max_total_num_tokens"] == 1000  # nested reports are flattened
    assert config["tensor_parallel_size"] == 1  # the spec's arg under its dest name
    assert warnings == []


def test_server_exiting_during_startup(system_env, tmp_path):
    code = "import sys; print('loading weights'); print('RuntimeError: out of memory', flush=True); sys.exit(7)"
    with pytest.raises(LaunchError) as info:
        launch(command_server(sys.executable, "-c", code), system_env, tmp_path, host=HOST)
    assert group_gone(info.value.pgid)
    text = str(info.value)
    assert "exited with code 7 during startup" in text
    assert str(tmp_path / "server.log") in text
    assert "RuntimeError: out of memory" in text  # the log's last lines are in the message


def test_server_never_ready_times_out_and_is_stopped(system_env, tmp_path):
    # Listens nowhere, forks a child, sleeps: readiness can never succeed.
    code = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']);"
            "print('still loading', flush=True); time.sleep(120)")
    started = time.monotonic()
    with pytest.raises(LaunchError) as info:
        launch(command_server(sys.executable, "-c", code, ready_timeout=2), system_env, tmp_path, host=HOST)
    assert time.monotonic() - started < 20
    err = info.value
    assert "was not ready within 2s" in str(err) and "still loading" in str(err)
    assert err.pgid is not None and group_gone(err.pgid)  # the forked child too


def test_busy_port_is_refused_before_starting(system_env, tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(LaunchError, match=f"port {port} on 127.0.0.1 is already in use"):
            launch(command_server(sys.executable, DOUBLE, "{port}", port=port), system_env, tmp_path, host=HOST)
    assert not (tmp_path / "server.log").exists()  # nothing was started


def test_configured_port_is_used_and_a_relaunch_gets_a_fresh_log(system_env, tmp_path):
    port = LocalHost().free_port()
    server = command_server(sys.executable, DOUBLE, "{port}", port=port)
    for attempt in (1, 2):
        handle = launch(server, system_env, tmp_path, host=HOST)
        try:
            assert handle.port == port and handle.base_url == f"http://127.0.0.1:{port}"
        finally:
            teardown(handle, HOST)
        assert group_gone(handle.pgid)
        assert Path(handle.log_path).read_text().count("double listening") == 1
    assert (tmp_path / "server.log.1").exists()


def test_failing_first_completion_is_a_launch_error(system_env, tmp_path):
    with pytest.raises(LaunchError, match="first completion failed: HTTP 500") as info:
        launch(command_server(sys.executable, DOUBLE, "{port}", "--fail-completions"), system_env, tmp_path, host=HOST)
    assert group_gone(info.value.pgid)


def test_missing_program_is_a_launch_error(system_env, tmp_path):
    with pytest.raises(LaunchError, match="could not start"):
        launch(command_server("/nonexistent/server-binary", "{port}"), system_env, tmp_path, host=HOST)


def test_stop_event_cancels_launch_and_stops_the_server(system_env, tmp_path):
    stop = threading.Event()
    threading.Timer(1.0, stop.set).start()
    with pytest.raises(Cancelled):
        launch(command_server(sys.executable, DOUBLE, "{port}", "--health-after", "60", ready_timeout=60), system_env, tmp_path, stop=stop, host=HOST)
    import re

    pid = int(re.search(r"double listening on \d+ pid (\d+)", (tmp_path / "server.log").read_text())[1])
    assert group_gone(pid)  # the double led its own group
