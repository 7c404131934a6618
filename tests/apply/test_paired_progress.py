"""A paired benchmark's progress names each run by its place in the step.

The load generator is given one block of a pair at a time (`workload.block`
runs) and counts within it: it said `run 1/1: ...` for every block of one
run, so four runs of two pairs read as the same line four times (on a
terminal's status line, two adjacent blocks of one arm did not even change
it). `paired.block_progress` turns the real load generator's messages
(against the instant-server double, a real process) into the step's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from specdsl.apply.steps.paired import block_progress
from specdsl.bench import run_benchmark
from specdsl.graph.pairs import run_order
from specdsl.model.config import Workload

INSTANT = Path(__file__).parents[1] / "bench" / "instant_server.py"


@pytest.fixture(scope="module")
def instant_url():
    proc = subprocess.Popen([sys.executable, str(INSTANT), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True, text=True)
    try:
        line = proc.stdout.readline()  # "PORT n" once it listens (or "" if it died)
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{line.split()[1]}"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.mark.parametrize("block", [1, 2])
def test_every_run_of_every_pair_and_arm_is_announced_once_by_its_place(instant_url, tmp_path, block):
    pairs = 2
    said: list[str] = []
    before = 0
    order = [(i, x, j) for i in range(pairs) for x, j in run_order(i, block, side_by_side=True)]
    for i, letter, j in order:  # as paired.run_paired measures them: one load-generator call a run
        w = Workload(name="w", input_len=4, output_len=2, requests=2, concurrency=2, timeout=10.0, runs=1,
                     warmup=1 if before == 0 else 0)
        say = block_progress(said.append, i, letter, before, 2 * block * pairs)
        run_benchmark(w, instant_url, "instant", tmp_path / f"pair-{i}-{letter}-{j}", progress=say, first_run=before)
        before += 1
    total = 2 * block * pairs
    places = [f"run {n}/{total}, pair {i + 1} arm {x}" for n, (i, x, _) in enumerate(order, 1)]
    assert [m.split(":")[0] for m in said if m.endswith(": 2 requests")] == places, said
    assert [m.split(":")[0] for m in said if " completed, " in m] == places, said
    assert len(set(said)) == len(said), said  # no two announcements read alike
    assert said[0].startswith("pair 1 arm A: warmup: 2 requests at concurrency 2"), said  # one full wave at least  # any other message: named by pair and arm
