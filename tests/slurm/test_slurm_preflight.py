"""Bad input against a real Slurm: each an error before anything is
submitted, naming the setting and where the spec set it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from apply_helpers import cli_env
from cluster import RESTRICTED_ACCOUNT
from slurm_helpers import job_folders, setup, spec_text


def apply(cluster, folder: Path, env_extra=None) -> subprocess.CompletedProcess:
    env = cli_env(**cluster.env(), **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "specdsl.cli.main", "apply", "m.spec", "--yes"], cwd=folder,
                          capture_output=True, text=True, timeout=120, env=env)


def assert_refused(cluster, folder: Path, *needles: str, env_extra=None) -> str:
    out = apply(cluster, folder, env_extra)
    text = out.stdout + out.stderr
    assert out.returncode == 5, text
    for needle in needles:
        assert needle in text, text
    assert "skipped because preflight.cluster failed" in text
    assert cluster.jobs() == [] and job_folders(folder) == []  # nothing submitted
    return text


def rewrite(folder: Path, old: str, new: str) -> None:
    spec = folder / "m.spec"
    text = spec.read_text()
    assert old in text
    spec.write_text(text.replace(old, new))


def test_unknown_partition(fresh, tmp_path):
    folder, _ = setup(tmp_path)
    rewrite(folder, 'partition = "debug"', 'partition = "debgu"')
    text = assert_refused(fresh, folder, 'slurm.partition: no partition "debgu" on this cluster', "did you mean `debug`?")
    assert "m.spec:3:" in text  # the line that set it


def test_account_the_partition_does_not_allow(fresh, tmp_path):
    folder, _ = setup(tmp_path)
    rewrite(folder, 'partition = "debug"', 'partition = "restricted", account = "nobody"')
    assert_refused(fresh, folder, 'slurm.account: account "nobody" may not use partition "restricted"',
                   f"(it allows {RESTRICTED_ACCOUNT})")


def test_gres_the_cluster_lacks(fresh, tmp_path):
    folder, _ = setup(tmp_path)
    rewrite(folder, 'gres = "gpu:1"', 'gres = "gpu:16"')
    assert_refused(fresh, folder, 'slurm.gres: no node of partition "debug" has "gpu:16"', "offer gpu:8")
    rewrite(folder, 'gres = "gpu:16"', 'gres = "tpu:1"')
    assert_refused(fresh, folder, 'slurm.gres: no node of partition "debug" has "tpu:1"')


def test_sbatch_missing_from_path(fresh, tmp_path):
    folder, _ = setup(tmp_path)
    bare = tmp_path / "bin"
    bare.mkdir()
    for program in ("squeue", "scontrol", "sinfo", "scancel"):  # everything but sbatch
        os.symlink(shutil.which(program), bare / program)
    path = os.pathsep.join([str(bare), str(Path(sys.executable).parent), "/usr/bin/env-only-missing"])
    assert_refused(fresh, folder, "sbatch is not in PATH here", env_extra={"PATH": path})


def test_partition_with_its_node_down(fresh, tmp_path):
    folder, _ = setup(tmp_path)
    fresh.scontrol("update", "nodename=localhost", "state=down", "reason=specdsl-test")
    assert_refused(fresh, folder, 'slurm.partition: no node of partition "debug" can run a job now (localhost down)')
    fresh.resume()
    out = apply(fresh, folder)
    assert out.returncode == 0, out.stdout + out.stderr  # back up: the same spec applies


@pytest.mark.parametrize("setting, message", [
    ('partiton = "debug"', "Unknown slurm setting `partiton`"),
    ('time = 30', "`slurm.time` needs a unit"),
    ('gres = "gpu::8"', '`slurm.gres` "gpu::8" is not a gres specification'),
    ('mem = 64', "`slurm.mem` needs a unit"),
    ('max_parallel = 0', "`slurm.max_parallel` must be >= 1, not 0"),
    ('workdir = "jobs"', "`slurm.workdir` must be an absolute path"),
    ('conf = "etc/slurm.conf"', "`slurm.conf` must be an absolute path"),
    ('python = "venv/bin/python"', '`slurm.python` "venv/bin/python" is neither a program name nor an absolute path'),
])
def test_settings_the_language_rejects(tmp_path, setting, message):
    spec = tmp_path / "m.spec"
    spec.write_text(spec_text(tmp_path).replace('partition = "debug", gres = "gpu:1", time = 5m, max_parallel = 3', setting))
    out = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "validate", str(spec)], capture_output=True, text=True,
                         timeout=60, env=cli_env())
    assert out.returncode == 1
    assert f"m.spec:3:" in out.stderr and message in out.stderr, out.stderr


def test_keep_running_on_a_slurm_host_is_refused_by_validate_and_plan(tmp_path):
    """The language's check, not the preflight's: validate and plan refuse
    a kept server on a Slurm host at the experiment's `server`, once for the
    three cells, and plan prints no plan."""
    text = spec_text(tmp_path).replace("ready_timeout = 10m\n", "ready_timeout = 10m\n  keep_running  = true\n")
    assert "keep_running  = true" in text
    (tmp_path / "m.spec").write_text(text)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.strip().startswith("server   = server.s"))
    for command in ("validate", "plan"):
        out = subprocess.run([sys.executable, "-m", "specdsl.cli.main", command, "m.spec"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60, env=cli_env())
        assert out.returncode == 1, out.stdout + out.stderr
        assert f"m.spec:{line}:" in out.stderr and "`keep_running` cannot hold on a Slurm host" in out.stderr, out.stderr
        assert out.stderr.count("cannot hold") == 1, out.stderr
        assert "server s keeps running, but host cluster runs each chain as one Slurm job" in out.stderr, out.stderr
        assert "Plan for" not in out.stdout


# -- the same checks at plan ------------------------------------------------------------
def plan(cluster, folder: Path, *extra: str, env_extra=None) -> subprocess.CompletedProcess:
    env = cli_env(**{**(cluster.env() if cluster is not None else {}), **(env_extra or {})})
    return subprocess.run([sys.executable, "-m", "specdsl.cli.main", "plan", "m.spec", *extra], cwd=folder,
                          capture_output=True, text=True, timeout=120, env=env)


def assert_plan_refused(cluster, folder: Path, *needles: str, env_extra=None) -> str:
    """`specdsl plan` exits 1 with each needle said at the host block (line 2
    of the spec), prints and saves no plan, and nothing reached Slurm's queue
    or the state folder (without a `cluster`: nothing to ask)."""
    out = plan(cluster, folder, "-o", "m.plan", env_extra=env_extra)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    assert "m.spec:2:1: error: Host `cluster`" in out.stderr, out.stderr
    for needle in needles:
        assert needle in out.stderr, out.stderr
    assert "Plan for" not in out.stdout and not (folder / "m.plan").exists()
    assert not (folder / ".specdsl" / "slurm").exists()
    assert cluster is None or cluster.jobs() == []
    return out.stderr


def test_plan_reports_an_unknown_partition_at_the_host_and_offline_asks_nothing(fresh, tmp_path):
    folder, _ = setup(tmp_path)
    good = plan(fresh, folder)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Slurm jobs" in good.stdout and good.stderr == "" and fresh.jobs() == []
    rewrite(folder, 'partition = "debug"', 'partition = "debgu"')
    text = assert_plan_refused(fresh, folder, 'slurm.partition: no partition "debgu" on this cluster (did you mean `debug`?)',
                               "`slurm.partition` is set at m.spec:3:")
    assert "nothing was submitted" in text and "1 error" in text
    offline = plan(fresh, folder, "--no-refresh")  # plans from recorded state: asks no cluster
    assert offline.returncode == 0 and "Slurm jobs" in offline.stdout, offline.stdout + offline.stderr


@pytest.mark.parametrize("old, new, needles", [
    ('partition = "debug"', 'partition = "restricted", account = "nobody"',
     ['slurm.account: account "nobody" may not use partition "restricted" (it allows ops)',
      "`slurm.account` is set at m.spec:3:"]),
    ('gres = "gpu:1"', 'gres = "gpu:16"',
     ['slurm.gres: no node of partition "debug" has "gpu:16" (its nodes offer gpu:8)', "`slurm.gres` is set at m.spec:3:"]),
    ('max_parallel = 3', 'max_parallel = 3, sbatch_args = ["--nodes=5"]',
     ["Host `cluster`: Slurm would refuse the job (--partition=debug --gres=gpu:1 --time=00:05:00 --nodes=5): "]),
    ('max_parallel = 3', 'max_parallel = 3, python = "/nonexistent/python3"',
     ["slurm.python: /nonexistent/python3 here cannot run specdsl", "`slurm.python` is set at m.spec:3:"]),
])
def test_plan_reports_what_the_cluster_refuses(fresh, tmp_path, old, new, needles):
    folder, _ = setup(tmp_path)
    rewrite(folder, old, new)
    assert_plan_refused(fresh, folder, *needles)


def test_plan_reports_a_partition_with_its_node_down(fresh, tmp_path):
    folder, _ = setup(tmp_path)
    fresh.scontrol("update", "nodename=localhost", "state=down", "reason=specdsl-test")
    assert_plan_refused(fresh, folder, 'slurm.partition: no node of partition "debug" can run a job now (localhost down)')
    fresh.resume()
    assert plan(fresh, folder).returncode == 0


def test_plan_says_a_cluster_that_does_not_answer(fresh, tmp_path):
    """slurmctld not answering (here: slurm.conf names a port nothing
    listens on) is said as refresh says a host it cannot reach: on an empty
    state the plan stands with a warning and a refresh error (`--json`
    valid); where state records an environment on that host, an error at
    the host, with the hint to plan offline; no traceback either way."""
    import json

    from specdsl.state import Environment, State, write_state

    folder, _ = setup(tmp_path)
    etc = tmp_path / "etc-dead"
    etc.mkdir()
    shutil.copy(Path(fresh.conf).parent / "gres.conf", etc / "gres.conf")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # closed when the block ends: nothing listens there
    conf = "".join(f"SlurmctldPort={dead}\n" if line.startswith("SlurmctldPort=") else line
                   for line in Path(fresh.conf).read_text().splitlines(keepends=True))
    (etc / "slurm.conf").write_text(conf)
    dead_env = {"SLURM_CONF": str(etc / "slurm.conf")}
    out = plan(fresh, folder, "--json", env_extra=dead_env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stdout + out.stderr
    doc = json.loads(out.stdout)
    [e] = doc["refresh_errors"]
    assert doc["valid"] is True and e["kind"] == "unreachable" and "slurmctld does not answer" in e["detail"], e
    assert "warning: cannot refresh: host cluster: slurmctld does not answer" in out.stderr, out.stderr
    assert "nothing is recorded there, so its environments are planned as new" in out.stderr
    assert fresh.jobs() == []
    write_state(folder / ".specdsl", State.new().with_environment(Environment("e1", e["host"], "/x", "/x/bin/python", "3.11")))
    text = assert_plan_refused(fresh, folder, "Host `cluster`: slurmctld does not answer",
                               "the cluster did not answer plan", "--no-refresh", env_extra=dead_env)
    assert "is set at" not in text


def test_plan_says_slurm_commands_missing_here(tmp_path):
    """Needs no cluster (it runs where Slurm is not installed): Slurm's
    commands are not on this machine's PATH."""
    folder, _ = setup(tmp_path)
    bare = tmp_path / "bin"
    bare.mkdir()
    assert_plan_refused(None, folder, "Host `cluster` runs on Slurm but sbatch, squeue, scontrol, sinfo, scancel are "
                        "not in PATH here", env_extra={"PATH": str(bare)})
