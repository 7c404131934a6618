"""Fixtures for the bench tests: the instant-server test double, started as
a real process in its own process group and killed (the whole group) after."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def start_instant_server() -> tuple[subprocess.Popen, int]:
    """Start tests/bench/instant_server.py; (process, port). Bounded: 20 s."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "instant_server.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
    )
    deadline = time.monotonic() + 20
    line = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("PORT "):
            return proc, int(line.split()[1])
        if proc.poll() is not None:
            break
    stop_group(proc)
    raise RuntimeError(f"instant server did not start: {line!r}")


def stop_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def instant_server():
    """Base URL of a running instant server (shared by the session)."""
    proc, port = start_instant_server()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_group(proc)
