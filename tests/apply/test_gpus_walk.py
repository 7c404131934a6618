"""GPUs in a walk, on the CPU: a host declaring GPUs that a test double of
nvidia-smi reports (tests/apply/nvidia_smi_double.py, first on PATH), real
server processes (walk_double.py) that record the CUDA_VISIBLE_DEVICES
they got, real state. No two servers ever share a GPU (checked by their
recorded lifetimes), servers that fit run side by side and the rest
queue, a failed server frees its GPUs, a paired comparison alternates on
its own GPUs, busy or throttled GPUs stop the benchmark unless the host
allows busy ones, and the host facts land in state."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from test_walk import COMMON, apply_spec, failures, lives, outcome, workload

from specdsl.apply import Status

HERE = Path(__file__).parent
DOUBLE = str(HERE / "walk_double.py")
SMI = HERE / "nvidia_smi_double.py"


@pytest.fixture(scope="module")
def env_root(tmp_path_factory):
    return tmp_path_factory.mktemp("envs")


@pytest.fixture
def gpus_file(tmp_path, monkeypatch):
    """Install the nvidia-smi double; returns a function that writes its
    config. Its live servers are read from `tmp_path/gpus.txt`."""
    bin_dir = tmp_path / "smi-bin"
    bin_dir.mkdir()
    exe = bin_dir / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {SMI} \"$@\"\n")
    exe.chmod(0o755)
    cfg = tmp_path / "smi.json"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NVIDIA_SMI_DOUBLE", str(cfg))
    track = tmp_path / "gpus.txt"

    def configure(**config):
        cfg.write_text(json.dumps({"servers": str(track), **config}))
        return track

    return configure


def gpu_server(name: str, speed: float, life: Path, track: Path, gpus: int, *extra: str) -> str:
    argv = [sys.executable, DOUBLE, "{port}", "--speed", str(speed), "--life", str(life), "--gpus-file", str(track), *extra]
    items = ", ".join(f'"{a}"' for a in argv)
    return (f'server "{name}" {{\n  engine = "command"\n  model = "m"\n  command = [{items}]\n'
            f'  ready_timeout = 30s\n  gpus = {gpus}\n}}\n')


def experiment(name: str, server: str, host: str = "g", wl: str = "w", extra: str = "") -> str:
    return (f'experiment "{name}" {{\n  host = host.{host}\n  stack = stack.sys\n  server = server.{server}\n'
            f'  workload = workload.{wl}\n{extra}}}\n')


def placements(track: Path) -> list[tuple[str, tuple[int, ...], float, float]]:
    """(server, its GPUs, start, stop) of every server life in the track file."""
    starts: dict[str, tuple[tuple[int, ...], float]] = {}
    out = []
    for line in track.read_text().splitlines():
        parts = line.split()
        if parts[0] == "start":
            ids = tuple(int(x) for x in parts[3].split(",")) if parts[3] != "-" else ()
            starts[parts[1]] = (ids, float(parts[2]))
        else:
            ids, t0 = starts.pop(parts[1])
            out.append((parts[1], ids, t0, float(parts[2])))
    assert not starts, f"servers never stopped: {starts}"
    return sorted(out, key=lambda p: p[2])


def assert_never_shared(spans) -> None:
    for i, (a, ga, a0, a1) in enumerate(spans):
        for b, gb, b0, b1 in spans[i + 1:]:
            if a0 < b1 and b0 < a1:  # up at the same time
                assert not set(ga) & set(gb), f"{a} on {ga} and {b} on {gb} overlapped in time"


def most_at_once(spans) -> int:
    edges = sorted([(t0, 1) for _, _, t0, _ in spans] + [(t1, -1) for _, _, _, t1 in spans])
    now = best = 0
    for _, step in edges:
        now += step
        best = max(best, now)
    return best


def test_servers_side_by_side_on_disjoint_gpus_and_the_rest_queue(tmp_path, env_root, gpus_file):
    track = gpus_file(gpus=4)
    life = tmp_path / "life.txt"
    # GPUs 1, 2, 3 of four: one server needs two, three need one; each
    # benchmark keeps its server up 1 s, so the ones that fit overlap
    text = (COMMON + 'host "g" { gpus = [1, 2, 3] }\n' + workload(sleep=1.0, runs=1)
            + gpu_server("two", 20, life, track, 2) + gpu_server("one", 10, life, track, 1)
            + gpu_server("uno", 11, life, track, 1) + gpu_server("ein", 12, life, track, 1)
            + experiment("e2", "two") + experiment("e1", "one") + experiment("e3", "uno") + experiment("e4", "ein"))
    plan, result, state = apply_spec(tmp_path, text, env_root)
    assert result.exit_code() == 0, failures(result)
    assert "2 of 3 GPUs" in plan.change("launch.two").reason and "1 of 3 GPUs" in plan.change("launch.one").reason
    spans = placements(track)
    assert len(spans) == 4 and len(lives(life)) == 4
    sizes = sorted(len(g) for _, g, _, _ in spans)
    assert sizes == [1, 1, 1, 2]
    assert all(set(g) <= {1, 2, 3} for _, g, _, _ in spans)  # only the declared ids
    assert_never_shared(spans)
    at_once = most_at_once(spans)
    assert 2 <= at_once <= 3, spans  # side by side, never more than the GPUs hold
    # each launch's run record keeps the GPUs it was given; preflight the host facts
    by_speed = {name.split("@")[0]: g for name, g, _, _ in spans}
    for server, speed in (("two", "20"), ("one", "10"), ("uno", "11"), ("ein", "12")):
        (run,) = [r for r in state.runs if r.step == f"launch.{server}"]
        assert dict(run.effective)["CUDA_VISIBLE_DEVICES"] == ",".join(map(str, by_speed[speed]))
    (pre,) = [r for r in state.runs if r.step == "preflight.g"]
    facts = dict(pre.effective)
    assert facts["gpu_model"] == "NVIDIA H200" and facts["driver_version"] == "570.124.06" and facts["gpu_count"] == 4
    assert json.loads(facts["gpus"])[0]["clock_max_sm_mhz"] == 1980
    assert (tmp_path / ".specdsl" / pre.folder / "host.json").exists()


def test_a_failed_server_frees_its_gpu(tmp_path, env_root, gpus_file):
    track = gpus_file(gpus=1)
    life = tmp_path / "life.txt"
    text = (COMMON + 'host "g" { gpus = 1 }\n' + workload(runs=1)
            + gpu_server("broken", 1, life, track, 1, "--fail-start") + gpu_server("fine", 2, life, track, 1)
            + experiment("bad", "broken") + experiment("good", "fine"))
    _, result, state = apply_spec(tmp_path, text, env_root)
    assert result.exit_code() == 5
    assert outcome(result, "launch.broken").status is Status.FAILED
    assert outcome(result, "benchmark.good").status is Status.COMPLETED, failures(result)
    (run,) = [r for r in state.runs if r.step == "launch.fine"]
    assert dict(run.effective)["CUDA_VISIBLE_DEVICES"] == "0"


def test_a_paired_comparisons_arms_run_side_by_side_on_disjoint_gpus(tmp_path, env_root, gpus_file):
    track = gpus_file(gpus=2)
    life = tmp_path / "life.txt"
    text = (COMMON + 'host "g" { gpus = 2 }\n' + workload(sleep=0.3, runs=1)
            + gpu_server("b", 100, life, track, 1) + gpu_server("c", 130, life, track, 1)
            + gpu_server("other", 7, life, track, 1)
            + experiment("base", "b") + experiment("alone", "other")
            + experiment("cand", "c", extra="  baseline = experiment.base\n"))
    plan, result, state = apply_spec(tmp_path, text, env_root)
    assert result.exit_code() == 0, failures(result)
    assert "both arms on 2 of 2 GPUs, side by side (1 and 1)" in plan.change("benchmark.cand").reason
    spans = placements(track)
    assert_never_shared(spans)  # base's own server, the pair's arms and the other cell's
    (run,) = [r for r in state.runs if r.step == "benchmark.cand"]
    assert dict(run.effective)["CUDA_VISIBLE_DEVICES"] == "0,1"  # the pair's session held both
    doc = json.loads((tmp_path / ".specdsl" / run.folder / "result.json").read_text())
    assert doc["side_by_side"] is True
    # two pairs at least, each on two fresh launches (AB, then BA), each arm on its own GPU
    assert [(x["pair"], x["arm"]) for x in doc["launches"]][:4] == [(0, "A"), (0, "B"), (1, "B"), (1, "A")]
    assert {(x["arm"], x["CUDA_VISIBLE_DEVICES"]) for x in doc["launches"]} == {("A", "0"), ("B", "1")}
    # the arms' servers (named by the port in their argv) ran on those GPUs
    by_port = {x["argv"][2]: int(x["CUDA_VISIBLE_DEVICES"]) for x in doc["launches"]}
    arm_lives = [(g, by_port[name.split("@")[1]]) for name, g, _, _ in spans if name.split("@")[1] in by_port]
    assert len(arm_lives) == len(doc["launches"]) and all(g == (want,) for g, want in arm_lives), arm_lives
    # the pair's GPUs before its first arm (idle) and at its last run's end,
    # beside both arms' own servers, which are not another job: the end is
    # read before their teardown (on the H200 the driver still listed a
    # torn-down server's process, which read as another job)
    start, end = (json.loads(dict(run.effective)[k]) for k in ("gpus_start", "gpus_end"))
    assert [g["index"] for g in start] == [g["index"] for g in end] == [0, 1]
    assert all(g["processes"] == [] for g in start) and all(len(g["processes"]) == 1 for g in end)
    assert all(g["others"] == 0 for g in start + end)
    assert not [w for w in result.warnings if "GPU" in w], result.warnings


@pytest.mark.parametrize("smi, allow, expected", [
    ({"gpus": 2, "busy": {"1": 4096}}, False, "GPU 1: 1 process (pid 424242)"),
    ({"gpus": 2, "throttle": {"0": "0x40"}}, True, "GPU 0: hw_thermal_slowdown"),
])
def test_busy_or_throttled_gpus_stop_the_benchmark_unless_allowed(tmp_path, env_root, gpus_file, smi, allow, expected):
    track = gpus_file(**smi)
    life = tmp_path / "life.txt"
    host = 'host "g" {\n  gpus = 2\n' + ("  allow_busy_gpus = true\n" if allow else "") + "}\n"
    text = COMMON + host + workload(runs=1) + gpu_server("s", 3, life, track, 2) + experiment("e", "s")
    _, result, state = apply_spec(tmp_path, text, env_root)
    pre = outcome(result, "preflight.g")
    if expected is None:
        assert result.exit_code() == 0, failures(result)
        return
    assert result.exit_code() == 5 and pre.status is Status.FAILED
    assert expected in pre.detail, pre.detail
    assert not track.exists() or not track.read_text()  # no server was started
    assert outcome(result, "benchmark.e").root == "preflight.g"
    (run,) = [r for r in state.runs if r.step == "preflight.g"]
    assert run.status == "failed" and (tmp_path / ".specdsl" / run.folder / "host.json").exists()


def test_a_host_asking_no_gpus_goes_on_when_nvidia_smi_fails(tmp_path, env_root, gpus_file):
    track = gpus_file(broken=True)
    life = tmp_path / "life.txt"
    text = COMMON + 'host "g" {}\n' + workload(runs=1) + gpu_server("s", 3, life, track, 1).replace("  gpus = 1\n", "") \
        + experiment("e", "s")
    _, result, state = apply_spec(tmp_path, text, env_root)
    assert result.exit_code() == 0, failures(result)
    assert any("no GPU facts recorded" in w and "version mismatch" in w for w in result.warnings), result.warnings
    placed = placements(track)
    assert [g for _, g, _, _ in placed] == [()]  # a host without declared GPUs: CUDA_VISIBLE_DEVICES left alone
    # a host whose preflight had no GPU answer is asked nothing more: no snapshot of its runs
    calls = Path(str(tmp_path / "smi.json") + ".calls").read_text().splitlines()
    assert len(calls) == 1 and calls[0].startswith("--query-gpu"), calls
    (run,) = [r for r in state.runs if r.step == "benchmark.e"]
    assert "gpus_start" not in dict(run.effective) and "gpus_end" not in dict(run.effective)


def test_a_host_declaring_gpus_without_nvidia_smi_fails_clearly():
    from specdsl.apply.steps.preflight import check_host
    from specdsl.model import config

    problem, _ = check_host(None, config.Host(name="gpu8", gpus=8), None)
    assert problem == "host gpu8 declares gpus = 8 but nvidia-smi is not installed there"
    assert check_host(None, config.Host(name="cpu"), None) == (None, set())


def test_preflight_names_missing_gpus_memory_in_use_and_gpus_of_ours():
    from specdsl.apply.steps.preflight import check_host
    from specdsl.hosts import gpus as smi
    from specdsl.model import config

    def gpu(i, used=1.0, pids=()):
        return smi.Gpu(i, f"GPU-{i}", "NVIDIA H200", "570", used, 143771.0, 0.0, 345.0, 1980.0, 1,
                       processes=tuple(smi.GpuProcess(f"GPU-{i}", p, 4000.0) for p in pids))

    one = smi.GpuReport("nvidia-smi", (gpu(0),))
    problem, _ = check_host(None, config.Host(name="g", gpus=2), one)
    assert problem == "host g declares GPUs 0, 1 but nvidia-smi lists 1 (ids 0): GPU 1 not found"
    held = smi.GpuReport("nvidia-smi", (gpu(0, used=900.0), gpu(1, used=4000.0, pids=(77,))))
    problem, _ = check_host(None, config.Host(name="g", gpus=2), held)
    assert "GPU 0: 900 MiB of memory in use" in problem and "GPU 1: 1 process (pid 77)" in problem
    # a server of ours kept from an earlier apply: its GPU is held, not busy
    kept = smi.GpuReport("nvidia-smi", (gpu(0), gpu(1, used=4000.0, pids=(77,))))
    assert check_host(None, config.Host(name="g", gpus=2), kept, {77}) == (None, {1})


def test_servers_needing_no_gpu_or_the_whole_machine_run_alone(tmp_path, env_root, gpus_file):
    track = gpus_file(gpus=2)
    life = tmp_path / "life.txt"
    whole = gpu_server("all", 4, life, track, 1).replace("  gpus = 1\n", "")  # a command: the whole machine
    text = (COMMON + 'host "g" { gpus = 2 }\n' + workload(sleep=0.5, runs=1)
            + gpu_server("none", 3, life, track, 0) + whole + gpu_server("one", 5, life, track, 1)
            + gpu_server("uno", 6, life, track, 1)
            + experiment("a", "none") + experiment("b", "all") + experiment("c", "one") + experiment("d", "uno"))
    plan, result, _ = apply_spec(tmp_path, text, env_root)
    assert result.exit_code() == 0, failures(result)
    assert "all 2 GPUs" in plan.change("launch.all").reason and "no GPU" in plan.change("launch.none").reason
    spans = placements(track)
    devices = {name.split("@")[0]: g for name, g, _, _ in spans}
    assert devices["3"] == () and devices["4"] == (0, 1)  # none visible; all of them
    for alone in ("3", "4"):
        (me,) = [s for s in spans if s[0].startswith(alone + "@")]
        others = [s for s in spans if s is not me]
        assert all(me[3] <= o[2] or o[3] <= me[2] for o in others), spans
    assert_never_shared(spans)


GPU_TURNS_BAD = """import json, sys
path = sys.argv[1]
with open(path) as f:
    cfg = json.load(f)
cfg["throttle"] = {"0": "0x40"}
with open(path, "w") as f:
    json.dump(cfg, f)
print("tps: 1.0")
"""


def test_a_run_records_its_gpus_at_start_and_end_and_names_a_throttle_or_neighbour(tmp_path, env_root, gpus_file):
    """GPU 0 holds a foreign process (the host allows busy GPUs: the
    benchmark goes on) and the workload's own script makes it throttle
    while the benchmark runs: the run's snapshots (one query at its start,
    one at its end) keep both states, its own server's process is not
    counted as another's, apply warns naming the run, and diagnose reads
    the run's own snapshots."""
    from specdsl.diagnose.gpus import facts_of

    track = gpus_file(gpus=2, busy={"0": 2048})
    life = tmp_path / "life.txt"
    script = tmp_path / "turn_bad.py"
    script.write_text(GPU_TURNS_BAD)
    cfg = tmp_path / "smi.json"
    wl = (f'workload "w" {{\n  command = ["{sys.executable}", "{script}", "{cfg}"]\n  runs = 1\n'
          '  timeout = 60s\n  metric "tps" { regex = "tps: ([0-9.]+)" }\n}\n')
    host = 'host "g" {\n  gpus = [0]\n  allow_busy_gpus = true\n}\n'
    text = COMMON + host + wl + gpu_server("s", 3, life, track, 1) + experiment("e", "s")
    _, result, state = apply_spec(tmp_path, text, env_root)
    assert result.exit_code() == 0, failures(result)  # busy GPUs allowed: it goes on
    (run,) = [r for r in state.runs if r.step == "benchmark.e"]
    effective = dict(run.effective)
    [start], [end] = json.loads(effective["gpus_start"]), json.loads(effective["gpus_end"])
    assert start["index"] == end["index"] == 0 and start["name"] == "NVIDIA H200"
    assert len(start["processes"]) == 2 and start["others"] == 1  # the foreign one and its own server's
    assert start["throttle_mask"] != "0x40" and end["throttle_mask"] == "0x40"
    assert end["others"] == 1 and 424242 in [p["pid"] for p in end["processes"]]
    mine = [w for w in result.warnings if w.startswith("benchmark.e: GPU 0")]
    assert len(mine) == 3, result.warnings
    assert "GPU 0 had another process at the run's start (1 not of this run; pids on it: " in mine[0] and "424242" in mine[0]
    assert "GPU 0 was throttled at the run's end (hw_thermal_slowdown)" in mine[1]
    assert "GPU 0 had another process at the run's end" in mine[2]
    # one nvidia-smi query (gpus and their processes) at the run's start and one at its end
    calls = cfg.with_name("smi.json.calls").read_text().splitlines()
    assert len([c for c in calls if c.startswith("--query-gpu")]) == 3, calls  # preflight, the run's start and end
    (launch,) = [r for r in state.runs if r.step == "launch.s"]
    facts = facts_of(state, run, launch, "g")
    assert facts["gpu[0].throttle"] == "none" and facts["gpu[0].throttle_end"] == "hw_thermal_slowdown"
    assert facts["gpu[0].processes"] == "1" and facts["gpu[0].processes_end"] == "1"
    assert facts["gpu_count"] == "2" and facts["gpu_model"] == "NVIDIA H200"
