"""The streams of a run spread over worker processes (`client_processes`):
against the known-timing double (a real process, real HTTP) two workers
give the records and metrics one process gives; a worker that dies fails
the run at once; a stop, a Ctrl-C or the benchmark's own death ends every
worker. Figures are compared with generous bounds on the double's fixed
timing (20 ms to the first token, then one per 2 ms), never on luck."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from specdsl import stats
from specdsl.bench import BenchError, run_benchmark
from specdsl.bench.loadgen import arrival_offsets
from specdsl.bench.monitor import merge_clients, worker_warnings
from specdsl.bench.timings import read_records
from specdsl.bench.workers import closed_shares, open_shares
from specdsl.graph.build import build_graph
from specdsl.model.config import Workload
from specdsl.resolve.resolver import resolve_file

ROOT = Path(__file__).resolve().parents[2]
WORKER = "specdsl.bench.worker"


def wl(**kw) -> Workload:
    base = dict(name="t", input_len=8, output_len=8, requests=24, concurrency=4, warmup=0, timeout=10.0)
    base.update(kw)
    return Workload(**base)


def worker_pids() -> list[int]:
    """Live (non-zombie) worker processes in this test's process group."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state, pgrp = stat.rsplit(")", 1)[1].split()[0], int(stat.rsplit(")", 1)[1].split()[2])
        if WORKER in cmd and state != "Z" and pgrp == os.getpgrp():
            found.append(int(entry.name))
    return found


def lag_ms(client: dict) -> float:
    """How late the client's event loop(s) ran timers at worst (its own figure, specdsl.bench.monitor)."""
    return max(w.get("loop_lag_max_ms", 0.0) for w in client.get("workers", [client]))


def ttfts(records) -> list[float]:
    return [r.chunks_s[0] * 1000 for r in records if r.ok]


def itls(records) -> list[float]:
    return [(b - a) * 1000 for r in records if r.ok for a, b in zip(r.chunks_s, r.chunks_s[1:])]


def test_shares_split_streams_and_requests_without_loss_or_overlap():
    shares = closed_shares(10, 4, 2)
    assert [s for s, _ in shares] == [2, 2]
    assert sorted(i for _, idx in shares for i in idx) == list(range(10))
    assert shares[0][1] == [0, 2, 4, 6, 8]  # request i to the worker of stream i mod 4
    assert [s for s, _ in closed_shares(3, 8, 4)] == [1, 1, 1]  # never a worker without a stream
    assert [s for s, _ in closed_shares(20, 5, 2)] == [3, 2]
    assert open_shares(5, 2) == [[0, 2, 4], [1, 3]] and open_shares(2, 4) == [[0], [1]]


def test_closed_loop_over_two_processes_measures_what_one_does(timed_server, tmp_path):
    one = run_benchmark(wl(), timed_server, "m", tmp_path / "one").runs[0]
    two = run_benchmark(wl(client_processes=2, warmup=2), timed_server, "m", tmp_path / "two").runs[0]
    _, recs1 = read_records(one.records_file)
    _, recs2 = read_records(two.records_file)
    assert sorted(r.i for r in recs2) == list(range(24)) and all(r.ok for r in recs2)
    assert two.metrics["completed"] == one.metrics["completed"] == 24
    assert two.metrics["total_output_tokens"] == 24 * 8
    # per request: the double's timing, in one process or two, within what the
    # clients say of their own lag (a loaded machine stamps late, and says so)
    slack = 5 + lag_ms(one.client) + lag_ms(two.client)
    assert min(ttfts(recs2)) >= 19.5 and all(len(r.chunks_s) == 8 for r in recs2)
    assert stats.median(ttfts(recs2)) < 20 + slack
    assert abs(stats.median(ttfts(recs2)) - stats.median(ttfts(recs1))) < slack
    assert abs(stats.mean(itls(recs2)) - stats.mean(itls(recs1))) < 1 + slack / 7
    # one start for all, the duration to the last end, throughput over it
    ends = [r.start_s + r.chunks_s[-1] for r in recs2]
    m = two.metrics
    assert min(r.start_s for r in recs2) >= 0 and max(ends) <= m["duration"] < max(ends) + 0.25
    assert m["request_throughput"] == pytest.approx(24 / m["duration"])
    assert m["output_throughput"] == pytest.approx(24 * 8 / m["duration"])
    # 4 streams in all (not 4 per process): 24 requests of ~35 ms leave in 6 waves
    starts = sorted(r.start_s for r in recs2)
    assert starts[4] - starts[0] >= 0.03 and starts[20] - starts[0] >= 5 * 0.03
    # two real processes, each with its own figures
    workers = two.client["workers"]
    assert two.client["processes"] == 2 and len({w["pid"] for w in workers}) == 2
    assert os.getpid() not in {w["pid"] for w in workers}
    assert all(w["wall_s"] > 0 and "loop_lag_p50_ms" in w for w in workers)
    assert workers[0]["t0"] == workers[1]["t0"] and all(0 <= w["start_late_ms"] < 1000 for w in workers)
    assert worker_pids() == []


def test_open_loop_over_two_processes_keeps_the_schedule(timed_server, tmp_path):
    async def inside():  # as apply calls it: from a thread that runs a loop (the workers start on a helper thread)
        return run_benchmark(wl(requests=30, rate=100.0, seed=5, client_processes=2), timed_server, "m", tmp_path)

    run = asyncio.run(inside()).runs[0]
    _, records = read_records(run.records_file)
    planned = arrival_offsets(30, 100.0, 1.0, 5)
    assert sorted(r.i for r in records) == list(range(30))
    slack_s = (20 + lag_ms(run.client)) / 1000
    for rec in records:  # one clock origin: every worker's requests leave on the run's schedule
        assert planned[rec.i] - 0.001 <= rec.start_s < planned[rec.i] + slack_s
    assert all("late_p90_ms" in w for w in run.client["workers"]) and "late_p90_ms" in run.client
    ends = [r.start_s + r.chunks_s[-1] for r in records]
    assert max(ends) <= run.metrics["duration"] < max(ends) + 0.25


def test_any_client_bound_worker_makes_the_run_client_bound():
    calm = {"pid": 1, "busy": 0.2, "cpu_s": 0.2, "wall_s": 1.0, "loop_lag_p50_ms": 0.5}
    busy = {"pid": 2, "busy": 0.95, "cpu_s": 0.95, "wall_s": 1.0, "loop_lag_p50_ms": 0.5}
    warnings = worker_warnings([calm, busy], {"median_itl_ms": 10.0})
    assert len(warnings) == 1 and warnings[0].startswith("client-bound: client process 2 of 2 (pid 2): the client's event loop was busy 95%")
    assert worker_warnings([calm, calm], {"median_itl_ms": 10.0}) == []
    merged = merge_clients([calm, busy])
    assert merged["busy"] == 0.95 and merged["cpu_s"] == pytest.approx(1.15) and merged["processes"] == 2

    from specdsl.apply.judge import client_bound_of

    assert client_bound_of({"runs": [{"index": 0, "warnings": warnings}]}).startswith("run 0: client-bound: client process 2")


def test_a_worker_that_dies_fails_the_run_at_once_and_leaves_nothing(instant_server, tmp_path):
    pids: list[int] = []

    def progress(msg: str) -> None:
        if msg.startswith("client: 2 processes"):
            pids.extend(int(p) for p in msg.split("pids ")[1].rstrip(")").split(", "))
        if msg.startswith("run 1/1:") and pids:  # the streams hang: the worker dies before or during the run
            threading.Timer(0.3, os.kill, (pids[0], signal.SIGKILL)).start()

    t = time.monotonic()
    with pytest.raises(BenchError, match=r"client process 1 of 2 \(pid \d+\) was killed by signal 9 (before|during) the run"):
        run_benchmark(wl(requests=4, timeout=60, client_processes=2), instant_server, "hang", tmp_path, progress=progress)
    assert time.monotonic() - t < 15
    assert len(pids) == 2 and worker_pids() == []


def test_stop_ends_the_workers_promptly(instant_server, tmp_path):
    stop = threading.Event()
    started: list[str] = []

    def progress(msg: str) -> None:
        if msg.startswith("run 1/1:"):
            started.append(msg)
            threading.Timer(0.3, stop.set).start()

    with pytest.raises(BenchError, match="stopped"):
        run_benchmark(wl(requests=4, timeout=60, client_processes=2), instant_server, "hang", tmp_path, stop=stop,
                      progress=progress)
    assert started and worker_pids() == []


_CHILD = textwrap.dedent("""
    import sys
    from specdsl.bench import run_benchmark
    from specdsl.model.config import Workload
    w = Workload(name="t", input_len=8, output_len=8, requests=4, concurrency=4, warmup=0, timeout=60.0, client_processes=2)
    run_benchmark(w, sys.argv[1], "hang", sys.argv[2], progress=lambda m: print(m, flush=True))
""")


def _group_pids(pgid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


@pytest.mark.parametrize("how", ["ctrl-c", "benchmark killed"])
def test_ctrl_c_or_the_benchmarks_death_ends_every_worker(instant_server, tmp_path, how):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, instant_server, str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        line = ""
        while time.monotonic() < deadline and not line.startswith("run 1/1:"):
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "the benchmark ended before its run"
        assert len(_group_pids(proc.pid)) == 3  # the benchmark and its two workers, in one process group
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal does on Ctrl-C: the foreground group
        else:
            os.kill(proc.pid, signal.SIGKILL)  # the benchmark alone, no chance to clean up
        proc.wait(timeout=15)
        deadline = time.monotonic() + 10
        while _group_pids(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _group_pids(proc.pid) == []
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


SPEC = '''
stack "s" {
  python   = "3.11"
  packages = ["sglang==0.5.0"]
}
server "tiny" {
  engine = "sglang"
  model  = "m"
}
workload "w" {
  requests = 16
EXTRA}
experiment "e" {
  stack    = stack.s
  server   = server.tiny
  workload = workload.w
}
'''


def _identity(tmp_path, extra: str, name: str) -> str:
    path = tmp_path / name
    path.write_text(SPEC.replace("EXTRA", extra))
    resolved = resolve_file(path)
    assert resolved.ok, [d.summary for d in resolved.diags]
    return build_graph(resolved.config).steps["benchmark.e"].identity


def test_client_processes_is_part_of_the_identity_when_set(tmp_path):
    plain = _identity(tmp_path, "", "a.spec")
    assert _identity(tmp_path, "  client_processes = 1\n", "b.spec") == plain  # the default
    assert _identity(tmp_path, "  client_processes = 2\n", "c.spec") != plain
    path = tmp_path / "bad.spec"
    path.write_text(SPEC.replace("EXTRA", "  client_processes = 0\n"))
    resolved = resolve_file(path)
    # (the spec's SGLang release has no flag table of its own: a warning names the one used)
    errors = [d for d in resolved.diags if d.severity == "error"]
    assert [d.summary for d in errors] == ["`client_processes` must be >= 1, not 0"]
    assert errors[0].span.line == 12
