"""Every writer of specdsl makes its files 0600 and its folders 0700, under
umask 0 (the most permissive: nothing may come from it). Each writer is
called for real, on real files; the whole apply is checked in
test_secrets.py, provisioning in tests/provision/test_private_records.py."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specdsl import private, secrets
from specdsl.apply.state_writer import StateWriter, write_stack_lock
from specdsl.bench import run_benchmark, run_command_workload
from specdsl.bench.timings import RequestTiming, write_records
from specdsl.hosts import LocalHost
from specdsl.model.config import Experiment, Host, MetricRule, Server, Stack, Workload
from specdsl.plan.model import Plan
from specdsl.plan.planfile import write_plan
from specdsl.state import RunRecord, State, locked, write_state

INSTANT = Path(__file__).resolve().parents[1] / "bench" / "instant_server.py"


@pytest.fixture(autouse=True)
def open_umask():
    previous = os.umask(0)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def assert_private(*paths: Path) -> None:
    for path in paths:
        want = 0o700 if path.is_dir() else 0o600
        assert oct(mode(path)) == oct(want), path


def test_state_file_backup_and_folder(tmp_path):
    state_dir = tmp_path / "a" / "b" / ".specdsl"
    state = write_state(state_dir, State.new())
    write_state(state_dir, state)  # the second write keeps a backup
    assert_private(tmp_path / "a", tmp_path / "a" / "b", state_dir, state_dir / "state.toml", state_dir / "state.toml.backup")


def test_state_lock(tmp_path):
    state_dir = tmp_path / ".specdsl"
    with locked(state_dir, "apply"):
        assert_private(state_dir, state_dir / "state.lock")


def test_existing_folder_keeps_its_mode(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    write_state(shared, State.new())  # `--state shared`: the user's folder stays as it is
    assert mode(shared) == 0o755 and mode(shared / "state.toml") == 0o600


def test_saved_plan(tmp_path):
    path = tmp_path / "plans" / "nested" / "x.plan.toml"
    write_plan(path, Plan(spec="s.spec", spec_digest="0" * 64, variables=(), lineage=None, serial=0, changes=()))
    write_plan(path, Plan(spec="s.spec", spec_digest="1" * 64, variables=(), lineage=None, serial=0, changes=()))
    assert_private(tmp_path / "plans", path.parent, path)


def experiment() -> Experiment:
    return Experiment(name="e", host=Host(name="local"), stack=Stack(name="s", env=(("HF_TOKEN", "hf_x" * 5),)),
                      server=Server(name="v", engine="command", model="m", command=("srv", "{port}")),
                      workload=Workload(name="w"))


def test_run_folders_and_what_steps_write_there(tmp_path):
    state_dir = tmp_path / ".specdsl"
    writer = StateWriter(state_dir, write_state(state_dir, State.new()), None)
    run_id, folder = writer.new_run()
    assert_private(state_dir / "runs", folder)
    # a step (or a server, a script) writes with the umask's mode...
    (folder / "effective.json").write_text("{}")
    (folder / "sub").mkdir()
    (folder / "sub" / "x.log").write_text("x")
    assert mode(folder / "effective.json") == 0o666
    step = type("Step", (), {"addr": "benchmark.e", "identity": "i", "experiments": ("e",)})()
    record = writer.run_record(step, run_id, folder, "2026-01-01T00:00:00Z", "completed")
    assert isinstance(record, RunRecord)
    # ...and recording the run makes it the owner's only
    assert_private(folder / "effective.json", folder / "sub", folder / "sub" / "x.log")


def test_stack_lock(tmp_path):
    path = write_stack_lock(tmp_path / "spec", "prod", experiment(), None, ["srv", "1"], "run-1", {"x": 1.0})
    assert_private(tmp_path / "spec" / "stacks", path)
    assert "hf_x" not in path.read_text()


def test_bench_records_and_results(tmp_path):
    records = tmp_path / "r1" / "records.jsonl"
    write_records(records, {"run": 0}, [RequestTiming(i=0, ok=True, chunks_s=[0.1])])
    assert_private(tmp_path / "r1", records)
    workload = Workload(name="own", command=(sys.executable, "-c", "print('t: 1')"), metrics=(MetricRule(name="t", regex="t: (1)"),))
    out = tmp_path / "runs" / "cmd"
    run_command_workload(workload, host=LocalHost(env_root=tmp_path / "envs"), server_host="127.0.0.1", port=1, model="m",
                         out_dir=out)
    assert_private(tmp_path / "runs", out, out / "result.json", out / "command-run-0.log")


def test_load_generator_results(tmp_path):
    proc = subprocess.Popen([sys.executable, str(INSTANT), "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, start_new_session=True)
    try:
        deadline, line = time.monotonic() + 20, ""
        while time.monotonic() < deadline and not line.startswith("PORT "):
            line = proc.stdout.readline()
        port = int(line.split()[1])
        out = tmp_path / "runs" / "lg"
        result = run_benchmark(Workload(name="t", input_len=4, output_len=4, requests=4, concurrency=2, warmup=0, timeout=10.0),
                               f"http://127.0.0.1:{port}", "instant", out)
        assert_private(tmp_path / "runs", out, out / "result.json", Path(result.runs[0].records_file))
    finally:
        os.killpg(proc.pid, 9)
        proc.wait(timeout=10)


def test_key_file(tmp_path, monkeypatch):
    path = tmp_path / "config" / "specdsl" / "identity.key"
    monkeypatch.setenv(secrets.KEY_ENV, str(path))
    assert len(secrets.key()) == 32
    assert_private(tmp_path / "config", path.parent, path)


def test_tighten_leaves_links_alone(tmp_path):
    target = tmp_path / "outside.txt"
    target.write_text("x")
    target.chmod(0o644)
    folder = private.make_dirs(tmp_path / "run")
    (folder / "link").symlink_to(target)
    private.tighten(folder)
    assert mode(target) == 0o644  # not ours to change
