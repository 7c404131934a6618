"""`transformers serve` of the tiny model, for real (CPU, memory capped)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdsl.servers import LaunchError, answers, effective_config, launch, teardown
from specdsl.hosts import LocalHost
from specdsl.hosts.http import session
from specdsl.model.config import Server, pairs

from specdsl.hosts import LocalHost

HOST = LocalHost()  # one host object: it reaps the servers it started

pytestmark = pytest.mark.e2e

# Uncapped, continuous batching pre-allocates ~20 GiB of KV cache on this machine.
CB_ARGS = (("continuous-batching", True), ("cb-max-memory-percent", 0.02))


def tf_server(model: Path, hf_home: Path, args=(), **kw) -> Server:
    return Server(name="tiny", engine="transformers", model=str(model), args=tuple(args),
                  env=pairs({"HF_HOME": str(hf_home)}), ready_timeout=180, **kw)


@pytest.fixture(scope="module")
def cb_server(transformers_env, tiny_model, hf_home, tmp_path_factory):
    server = tf_server(tiny_model, hf_home, CB_ARGS)
    handle = launch(server, transformers_env, tmp_path_factory.mktemp("tf-cb"), host=HOST)
    try:
        yield server, handle
    finally:
        teardown(handle, HOST)


def complete(handle, prompt="Hello", max_tokens=8):
    resp = session(60).post(handle.base_url + "/v1/completions",
                            json={"model": handle.model, "prompt": prompt, "max_tokens": max_tokens})
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_continuous_batching_server_serves_and_reports_cb(cb_server):
    server, handle = cb_server
    assert answers(handle, HOST)
    assert handle.argv[1:3] == ("serve", server.model)
    assert "--cb-max-memory-percent" in handle.argv
    out = complete(handle)
    assert out["usage"]["completion_tokens"] == 8
    config, warnings = effective_config(server, handle, HOST)
    assert config["continuous_batching"] is True  # from the server's own per-request log line
    assert config["cb_max_memory_percent"] == 0.02
    assert config["version"] == "5.19.0"
    assert warnings == []


def test_memory_stays_capped(cb_server):
    _, handle = cb_server
    rss_kib = 0
    for pid in LocalHost().group_pids(handle.pgid):
        status = Path(f"/proc/{pid}/status").read_text()
        rss_kib += int(next(l for l in status.splitlines() if l.startswith("VmRSS:")).split()[1])
    assert rss_kib < 4 * 1024 * 1024, f"server group uses {rss_kib / 1024**2:.1f} GiB"


def test_serial_server_reports_no_cb_and_teardown_leaves_nothing(transformers_env, tiny_model, hf_home, tmp_path):
    server = tf_server(tiny_model, hf_home)
    handle = launch(server, transformers_env, tmp_path, host=HOST)
    try:
        complete(handle)
        config, _ = effective_config(server, handle, HOST)
        assert config["continuous_batching"] is False
    finally:
        teardown(handle, HOST)
    assert LocalHost().group_pids(handle.pgid) == []
    assert not answers(handle, HOST)


def test_bad_model_path_exits_during_startup(transformers_env, hf_home, tmp_path):
    server = tf_server(tmp_path / "no-such-model", hf_home)
    with pytest.raises(LaunchError) as info:
        launch(server, transformers_env, tmp_path, host=HOST)
    assert "exited" in str(info.value) and "during startup" in str(info.value)
    assert "no-such-model" in info.value.tail
    assert LocalHost().group_pids(info.value.pgid) == []
