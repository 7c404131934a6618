"""Burst detection: the host's load around a run (specdsl.bench.hostload,
on this machine's real /proc and on hand-made /proc files), the rule that
says which rounds a burst hit (specdsl.bench.bursts), and what a paired
result keeps of a round measured again (specdsl.apply.bursts)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specdsl.apply import bursts as apply_bursts
from specdsl.apply.judge import blocks_of, client_bound_of
from specdsl.bench import RunResult, bursts
from specdsl.bench.hostload import (LoadMeter, Snapshot, between, parse_pid_stat, parse_pressure, running_of, tree_pids,
                                    tree_ticks)
from specdsl.bench.validity import valid_document

# --- the rule ---------------------------------------------------------------


def host(other: float, cores: int = 2) -> dict:
    return {"other_runnable": other, "other_cores": min(other, cores), "cores": cores, "wall_s": 0.5}


def test_a_round_with_free_cores_on_both_sides_is_balanced():
    # 2 cores: a run wants about one, so with under one other task neither run waited for a CPU
    assert bursts.contention(0.0, 2) == bursts.contention(0.9, 2) == 1.0
    assert bursts.unbalanced({"A": host(0.0), "B": host(0.9)}) == {}
    assert bursts.unbalanced({"A": host(5.5), "B": host(6.5)}) == {}  # x3.25 against x3.75: within 25%


def test_a_burst_in_one_arm_makes_the_round_unbalanced_and_says_why_for_each_arm():
    why = bursts.unbalanced({"A": host(0.2), "B": host(4.0)})
    assert set(why) == {"A", "B"}
    assert why["B"].startswith("a burst of other work: 4.00 other tasks wanted the 2 cores on average during it "
                               "(contention x2.50), 0.20 during arm A's run of its round (x1.00; more than 25% apart)")
    assert why["B"].endswith("; its round is measured again")
    assert why["A"].startswith("its round was measured again: arm B's run beside it was hit by a burst of other work: 4.00")


def test_the_threshold_is_a_quarter_more_contention_than_the_quiet_run():
    # with 5.5 other tasks on 2 cores (x3.25) the limit is x4.0625: 7.125 other tasks
    assert bursts.unbalanced({"A": host(5.5), "B": host(7.1)}) == {}
    assert set(bursts.unbalanced({"A": host(5.5), "B": host(7.2)})) == {"A", "B"}
    # more cores take more other work before a run waits
    assert bursts.unbalanced({"A": host(0.0, 8), "B": host(7.0, 8)}) == {}
    assert bursts.unbalanced({"A": host(0.0, 8), "B": host(9.5, 8)}) != {}


def test_shared_blocks_mark_every_arm_of_the_round():
    why = bursts.unbalanced({"A": host(1.0), "B": host(1.2), "B2": host(6.0)})
    assert why["B2"].startswith("a burst of other work: 6.00") and why["A"].startswith("its round was measured again: arm B2's")
    assert why["B"].startswith("its round was measured again: arm B2's")


def test_without_host_records_nothing_is_decided():
    assert bursts.unbalanced({"A": {}, "B": host(9.0)}) == {}
    assert bursts.unbalanced({"A": None, "B": None}) == {}
    assert bursts.unbalanced({"A": host(9.0)}) == {}


def test_cpu_time_decides_where_runnable_tasks_were_not_sampled():
    why = bursts.unbalanced({"A": {"other_cores": 0.1, "cores": 2}, "B": {"other_cores": 1.9, "cores": 2}})
    assert why["B"].startswith("a burst of other work: 1.90 cores of the 2 cores went to other processes during it")
    # one run with the sampled figure, one without: the figure both have
    assert bursts.measure_of([host(1.0), {"other_cores": 1.0, "cores": 2}]) == "other_cores"


# --- the client's lag ---------------------------------------------------------


def streamed(lag_ms: float, duration: float = 1.2, other: float | None = 1.0) -> dict:
    """The round record of a run of the built-in client: its worst timer lag over a run of `duration` s."""
    run = RunResult(index=0, metrics={"duration": duration, "output_throughput": 55.0},
                    client={"loop_lag_max_ms": lag_ms, "loop_lag_p99_ms": lag_ms / 2})
    return bursts.round_record(host(other) if other is not None else None, [run])


def test_a_late_timer_in_one_arm_of_a_round_of_streamed_runs_makes_it_unbalanced():
    # the story's replay: 59 ms against 17 ms on 1.16 s runs, the host's averages alike
    why = bursts.unbalanced({"A": streamed(59.0, 1.159, other=6.8), "B": streamed(17.0, 1.139, other=7.1)})
    assert set(why) == {"A", "B"}
    assert why["A"].startswith("a burst of other work: the client's event loop ran a timer 59.0 ms late during it, "
                               "17.0 ms at most during arm B's run of its round (more than 1% of the round's 1.15 s runs "
                               "apart, and at least 5 ms: 11.5 ms); its round is measured again")
    assert why["B"].startswith("its round was measured again: arm A's run beside it was hit by a burst of other work: "
                               "the client's event loop ran a timer 59.0 ms late")


def test_the_lag_limit_is_a_share_of_the_rounds_runs_not_a_fixed_time():
    assert bursts.unbalanced({"A": streamed(30.0), "B": streamed(18.0)}) == {}  # 12 ms apart: 1% of 1.2 s is the limit
    assert set(bursts.unbalanced({"A": streamed(30.0), "B": streamed(17.0)})) == {"A", "B"}
    # on 3-minute runs a 100 ms stall is no burst; every arm's lag alike is none either
    assert bursts.unbalanced({"A": streamed(100.0, 180.0), "B": streamed(2.0, 180.0)}) == {}
    assert bursts.unbalanced({"A": streamed(45.0), "B": streamed(40.0), "B2": streamed(48.0)}) == {}
    # the scale is the round's mean duration, the same whichever arm is faster
    a, b = bursts.unbalanced({"A": streamed(19.5, 0.8), "B": streamed(8.5, 1.5)}), bursts.unbalanced(
        {"A": streamed(8.5, 1.5), "B": streamed(19.5, 0.8)})
    assert a == {} and b == {}  # 11 ms apart, within 11.5 ms (1% of the 1.15 s mean), whichever arm ran longer
    assert set(bursts.unbalanced({"A": streamed(20.5, 0.8), "B": streamed(8.5, 1.5)})) == {"A", "B"}
    # on the doubles' runs of 25 ms, 1% is 0.25 ms: a timer's jitter of a millisecond is no burst, 5 ms is the floor
    assert bursts.unbalanced({"A": streamed(1.6, 0.025), "B": streamed(0.3, 0.025)}) == {}
    assert bursts.unbalanced({"A": streamed(5.2, 0.025), "B": streamed(0.3, 0.025)}) == {}
    assert set(bursts.unbalanced({"A": streamed(5.4, 0.025), "B": streamed(0.3, 0.025)})) == {"A", "B"}


def test_the_hosts_load_is_read_first_and_runs_without_a_client_record_are_never_lag_unbalanced():
    why = bursts.unbalanced({"A": streamed(60.0, other=0.2), "B": streamed(2.0, other=4.0)})
    assert why["B"].startswith("a burst of other work: 4.00 other tasks")
    command = bursts.round_record(host(1.0), [RunResult(index=0, metrics={"tps": 100.0})])
    assert "client_lag_ms" not in command
    assert bursts.unbalanced({"A": command, "B": streamed(80.0)}) == {}
    # without host records (not Linux) the lag still decides, and no calm is waited for
    assert set(bursts.unbalanced({"A": streamed(60.0, other=None), "B": streamed(2.0, other=None)})) == {"A", "B"}
    assert bursts.quiet_of({"A": streamed(60.0, other=None), "B": streamed(2.0, other=None)}) is None
    assert bursts.quiet_of({"A": host(3.0), "B": host(1.5)}) == 1.5


def test_a_worker_clients_worst_lag_is_the_runs():
    runs = [RunResult(index=0, metrics={"duration": 1.0}, client={"loop_lag_max_ms": 3.0, "workers": []}),
            RunResult(index=1, metrics={"duration": 1.0}, client={"loop_lag_max_ms": 40.0})]
    got = bursts.round_record({"wall_s": 2.1}, runs)
    assert got["client_lag_ms"] == 40.0 and got["run_s"] == 2.0 and got["wall_s"] == 2.1


def test_a_round_unbalanced_by_lag_without_host_records_is_measured_again_without_waiting():
    lags = iter([60.0, 2.0, 3.0, 2.5])
    waited = []

    def measure(arm, j):
        return streamed(next(lags), other=None)

    dropped = []
    n = apply_bursts.measure_rounds([("A", 0), ("B", 0)], measure, lambda a, why: dropped.append(a),
                                    lambda a, w: None, wait=lambda quiet, stop: waited.append(quiet))
    assert n == 2 and dropped == ["A", "B"] and waited == []


# --- measuring rounds again -------------------------------------------------


def _rounds(loads: list[float], order=(("A", 0), ("B", 0))):
    """measure_rounds over a scripted sequence of other-task figures."""
    made, dropped, kept = [], [], []
    feed = iter(loads)

    def measure(arm, j):
        made.append((arm, j))
        return host(next(feed))

    n = apply_bursts.measure_rounds(list(order), measure, lambda a, why: dropped.append((a, why)),
                                    lambda a, w: kept.append((a, w)), wait=lambda quiet, stop: None)
    return n, made, dropped, kept


def test_an_unbalanced_round_is_dropped_and_measured_again_in_reverse_order():
    n, made, dropped, kept = _rounds([0.0, 5.0, 0.1, 0.2])
    assert made == [("A", 0), ("B", 0), ("B", 0), ("A", 0)]
    assert n == 2 and [a for a, _ in dropped] == ["A", "B"] and kept == []
    assert dropped[1][1].startswith("a burst of other work: 5.00")


def test_a_round_unbalanced_every_time_is_kept_after_the_retries_and_says_so():
    n, made, dropped, kept = _rounds([0.0, 5.0] * (bursts.RETRIES + 1))
    assert len(made) == 2 * (bursts.RETRIES + 1) and n == 2 * bursts.RETRIES
    assert sorted(a for a, _ in kept) == ["A", "B"]
    assert all(w.startswith(f"{bursts.KEPT} after {bursts.RETRIES + 1} measurements of its round: ") for _, w in kept)


def test_rounds_are_the_runs_of_one_index_and_each_is_checked_apart():
    order = [("A", 0), ("B", 0), ("B", 1), ("A", 1)]
    n, made, dropped, kept = _rounds([0.0, 0.1, 0.0, 6.0, 0.0, 0.0], order)
    assert made == order + [("A", 1), ("B", 1)] and n == 2


def test_a_dropped_run_stays_in_the_result_and_no_verdict_reads_it():
    from specdsl.apply.steps.paired import _Pairing

    done = _Pairing()
    value = {"A": 100.0, "B": 124.0}
    for i in range(2):
        for arm in ("A", "B"):
            done.add_runs(i, arm, [RunResult(index=0, metrics={"tps": value[arm]})], launch=2 * i + (arm == "B"))
    # pair 1's round was hit: both its runs dropped, then measured again
    for arm, why in (("A", "its round was measured again: ..."), ("B", "a burst of other work: ...")):
        apply_bursts.drop_latest(done, 1, arm, why)
    for arm in ("B", "A"):
        done.add_runs(1, arm, [RunResult(index=0, metrics={"tps": value[arm] * 1.01})], launch=2 + (arm == "B"))
    doc = done.to_json({"A": "base", "B": "cand"})
    assert [r["index"] for r in doc["runs"]] == [0, 1, 2, 3, 4, 5]  # nothing measured is lost
    hit = [b for p in doc["pairs"] if p["pair"] == 1 for b in p["blocks"]]
    assert {b["arm"]: (b["runs"], b["remeasured"]) for b in hit} == {"A": ([5], [2]), "B": ([4], [3])}
    assert doc["runs"][3]["invalid"] == "a burst of other work: ..."
    assert apply_bursts.remeasured(doc) == [(1, "A", 2, "its round was measured again: ..."), (1, "B", 3, "a burst of other work: ...")]
    valid = valid_document(doc)
    assert len(valid["pairs"]) == 2 and [r["index"] for r in valid["runs"]] == [0, 1, 4, 5]  # the pair stays, read again
    _, _, pairs = blocks_of(valid, {})
    assert [(a.runs[0]["tps"], b.runs[0]["tps"]) for a, b in pairs] == [(100.0, 124.0), (101.0, 124.0 * 1.01)]
    # a dropped run's client-bound warning blocks no verdict: it is not a measurement
    doc["runs"][3]["warnings"] = ["client-bound: the client's event loop ran timers 9 ms late"]
    assert client_bound_of(doc) == ""
    doc["runs"][4]["warnings"] = ["client-bound: the client's event loop ran timers 9 ms late"]
    assert client_bound_of(doc).startswith("run 4: client-bound")


# --- the host's load ----------------------------------------------------------


def test_pid_stat_parses_a_command_name_with_spaces_and_parentheses():
    text = "4242 (a (b) c) S 17 4242 4242 0 -1 4194304 1 0 0 0 30 12 5 3 20 0 1 0 100 0 0"
    assert parse_pid_stat(text) == (4242, 17, 30 + 12 + 5 + 3)


def test_pressure_reads_the_some_total():
    text = "some avg10=1.00 avg60=0.50 avg300=0.10 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    assert parse_pressure(text) == 123456 and parse_pressure("") is None


def test_between_turns_two_readings_into_cores_and_pressure():
    hz = os.sysconf("SC_CLK_TCK")
    a = Snapshot(t=10.0, busy=0, steal=0, ours=0, pressure_us=0, load1=1.0)
    b = Snapshot(t=12.0, busy=3 * hz, steal=hz // 2, ours=hz, pressure_us=500_000, load1=2.5)
    got = between(a, b, cores=2)
    # 1.5 cores busy, 0.5 of them ours, 0.25 stolen: 1.25 cores to others
    assert got == {"wall_s": 2.0, "cores": 2, "other_cores": 1.25, "ours_cores": 0.5, "steal_cores": 0.25, "load1": 2.5,
                   "cpu_pressure": 0.25}
    assert between(None, b) == {} and between(b, a) == {}


def _fake_proc(root: Path, procs: dict[int, tuple[int, int, str]]) -> Path:
    """A /proc of `procs`: pid -> (ppid, ticks, state), one thread each."""
    for pid, (ppid, ticks, state) in procs.items():
        line = f"{pid} (p {pid}) {state} {ppid} 0 0 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0 0 0 0\n"
        (root / str(pid) / "task" / str(pid)).mkdir(parents=True)
        (root / str(pid) / "stat").write_text(line)
        (root / str(pid) / "task" / str(pid) / "stat").write_text(line)
    (root / "loadavg").write_text("3.00 2.00 1.00 4/120 999\n")
    (root / "stat").write_text("cpu  100 0 50 800 0 0 0 0 0 0\n")
    return root


def test_our_tree_is_this_process_and_its_descendants_only(tmp_path):
    proc = _fake_proc(tmp_path, {1: (0, 5, "S"), 10: (1, 7, "R"), 11: (10, 3, "R"), 12: (11, 2, "S"), 20: (1, 100, "R")})
    assert tree_pids(10, str(proc)) == {10, 11, 12}
    assert tree_ticks(10, str(proc)) == 12
    assert running_of({10, 11, 12}, str(proc)) == 2


def test_the_meter_leaves_our_own_children_out_of_the_other_work():
    # four CPU burners of our own: runnable, but none of them is other work
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(4)]
    try:
        time.sleep(0.2)
        ours = tree_pids(os.getpid())
        assert {b.pid for b in burners} <= ours
        meter = LoadMeter().start()
        seen = []
        for _ in range(10):
            seen.append(running_of(ours))
            time.sleep(0.02)
        got = meter.stop()
    finally:
        for b in burners:
            os.killpg(b.pid, signal.SIGKILL)
            b.wait()
    assert max(seen) >= 3  # they were runnable (running, or waiting for a core)
    assert got["samples"] >= 3 and got["ours_cores"] > 0.5
    assert {"other_runnable", "other_cores", "cores", "wall_s", "load1"} <= set(got)


def test_a_process_that_is_not_ours_is_left_out_of_our_tree():
    # a daemon (forked twice, its parent gone) belongs to the machine, not to this process
    code = ("import os, sys, time\nif os.fork() == 0:\n    print(os.getpid(), flush=True)\n    os.close(1)\n    os.close(2)\n"
            "    time.sleep(30)\n    os._exit(0)\nos._exit(0)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    pid = int(proc.stdout.split()[0])
    try:
        assert Path(f"/proc/{pid}").exists() and pid not in tree_pids(os.getpid())
    finally:
        os.kill(pid, signal.SIGKILL)


@pytest.fixture(autouse=True)
def _linux():
    if not Path("/proc/stat").exists():
        pytest.skip("the host's load is read from /proc")


def test_a_run_measured_again_is_announced_at_the_place_of_the_one_it_replaces():
    said = []
    again = apply_bursts.said_again(said.append)
    for m in ("run 3/6, pair 2 arm B: the command", "runs 3-4/8, pair 2 arm B: done", "pair 2 arm B: starting its server"):
        again(m)
    assert said == ["run 3/6 again, pair 2 arm B: the command", "runs 3-4/8 again, pair 2 arm B: done",
                    "pair 2 arm B: starting its server"]
