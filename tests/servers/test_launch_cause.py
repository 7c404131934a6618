"""A server that dies at start is a failed launch whose message quotes the
log's cause: real SGLang 0.5.17 left at its Hopper default (fa3) without the
FA3 kernel logs `ImportError: Can not import FA3 in sgl_kernel. ...` in its
scheduler and then pages of shutdown (tests/servers/data/, from the H200
run of docs/gpu-run.md); the double replays that log and exits as it did."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from specdsl.hosts import LocalHost
from specdsl.model.config import Server
from specdsl.servers import LaunchError, launch
from specdsl.servers.lifecycle import log_cause

from test_launch_faults import system_env  # noqa: F401  (fixture)

HOST = LocalHost()
DATA = Path(__file__).with_name("data")
FA3_LOG = DATA / "sglang-0.5.17-fa3-missing.log"
REPLAY = "import sys; sys.stdout.write(open(sys.argv[1]).read()); sys.stdout.flush(); sys.exit(int(sys.argv[2]))"


def test_a_launch_dying_at_start_quotes_the_logged_cause(system_env, tmp_path):  # noqa: F811
    server = Server(name="upgrade", engine="command", model="m", ready_url="/health", ready_timeout=30,
                    command=(sys.executable, "-c", REPLAY, str(FA3_LOG), "1", "{port}"))
    with pytest.raises(LaunchError) as info:
        launch(server, system_env, tmp_path, host=HOST)
    what = info.value.what
    assert what.startswith("command server 'upgrade' exited with code 1 during startup: ")
    assert what.endswith("ImportError: Can not import FA3 in sgl_kernel. Please check your installation.")
    assert "ImportError: Can not import FA3" in str(info.value).splitlines()[0]  # the step's one-line summary


def test_log_cause_is_the_last_exception_line_without_its_prefix():
    assert log_cause(FA3_LOG.read_text()) == "ImportError: Can not import FA3 in sgl_kernel. Please check your installation."
    assert log_cause("[2026-12-02 10:00:00 TP0] torch.OutOfMemoryError: CUDA out of memory.\nbye\n") == \
        "torch.OutOfMemoryError: CUDA out of memory."
    assert log_cause("loading\nready? no\nWarning: something: else\n") is None


def test_log_cause_reads_vllm_logs_to_the_root_cause():
    """Real vLLM 0.26.0 on the H200 (docs/gpu-run.md): every line tagged
    `(APIServer pid=N) `, the engine core's `RuntimeError:` with its message
    on the lines below, and the API server's last word only pointing up."""
    text = (DATA / "vllm-0.26.0-spawn-in-main.log").read_text()
    assert text.rstrip().endswith("Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    assert log_cause(text) == ("RuntimeError: An attempt has been made to start a new process before the "
                               "current process has finished its bootstrapping phase.")
    assert log_cause("(EngineCore_DP0 pid=7) torch.OutOfMemoryError: CUDA out of memory.\n") == \
        "torch.OutOfMemoryError: CUDA out of memory."
    assert log_cause("RuntimeError: failed. See root cause above.\n") == "RuntimeError: failed. See root cause above."
