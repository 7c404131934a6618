"""Fixtures for the bench tests: the instant-server and known-timing test
doubles, each started as a real process in its own process group and killed
(the whole group) after."""

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
    return start_double("instant_server.py")


def start_double(script: str, *args: str) -> tuple[subprocess.Popen, int]:
    """Start the test double tests/bench/SCRIPT; (process, port). Bounded: 20 s."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / script), "--port", "0", *args],
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
    raise RuntimeError(f"{script} did not start: {line!r}")


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


@pytest.fixture(scope="session")
def timed_server():
    """Base URL of a running known-timing double (tests/bench/timed_server.py:
    first token 20 ms after the request, then one every 2 ms)."""
    proc, port = start_double("timed_server.py", "--ttft-ms", "20", "--itl-ms", "2")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_group(proc)


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory):
    """A small byte-level BPE tokenizer trained here (no model hub)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>", "</s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(["the quick brown fox jumps over the lazy dog, a server answers requests"] * 20, trainer=trainer)
    folder = tmp_path_factory.mktemp("tok")
    tok.save(str(folder / "tokenizer.json"))
    return folder
