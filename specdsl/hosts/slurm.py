"""Slurm's own commands: `sbatch`, `squeue`, `scontrol`, `sinfo`,
`sacctmgr`, `sacct`, `scancel`, run on the submit host: this machine
(`LocalRunner`), or a login node reached over SSH (`SshRunner`: each
command one quoted script through the host's connection, docs/hosts.md).

Slurm is the scheduler here: specdsl submits one batch job per chain and
follows it; what runs inside the allocation is `specdsl.apply.slurm.job` on the
compute node's own `LocalHost`. Every command is an argv list with a
timeout; a command that cannot run or times out is a `SlurmError` naming
it. The cluster is the one the submit host's environment names
(`SLURM_CONF`, or Slurm's own default), or `slurm.conf`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

import attrs

from specdsl.hosts.base import HostError

COMMAND_TIMEOUT_S = 30
# Job states after which nothing more happens (squeue/scontrol/sacct words)
ENDED = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
                   "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"})
_FIELD_RE = re.compile(r"(\w+(?:/\w+)?)=(\S*)")


class SlurmError(HostError):
    """A Slurm command could not run, timed out or refused what it was asked."""


@attrs.frozen
class JobInfo:
    """What Slurm says of a job now. `reason` is why it waits (pending) or
    why it ended; `exit_code` "N:S" (status:signal) once ended."""

    id: str
    state: str
    reason: str = ""
    nodes: str = ""
    exit_code: str = ""
    time_limit: str = ""

    @property
    def ended(self) -> bool:
        return self.state in ENDED


@attrs.frozen
class NodeInfo:
    name: str
    state: str  # idle, mixed, allocated, down, drained, ... (sinfo's %T, lower case)
    gres: str   # "gpu:8", "gpu:h200:8(S:0-1)", "(null)"

    @property
    def usable(self) -> bool:
        bad = ("down", "drain", "fail", "maint", "unknown", "not_responding", "future", "inval", "power")
        return not any(self.state.startswith(b) or b in self.state for b in bad)


def parse_fields(text: str) -> dict[str, str]:
    """`Key=Value Key2=Value2` (scontrol -o) as a dict."""
    return {k: v for k, v in _FIELD_RE.findall(text)}


class LocalRunner:
    """Commands on this machine, each in its own process group."""

    where = "here"

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = dict(os.environ, **(env or {}))

    def which(self, program: str) -> str | None:
        return shutil.which(program, path=self.env.get("PATH"))

    def run(self, argv: Sequence[str], *, timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess:
        argv = [str(a) for a in argv]
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=self.env, cwd=cwd,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
        except FileNotFoundError:
            raise SlurmError(f"{argv[0]} is not installed here (not found in PATH)") from None
        except subprocess.TimeoutExpired:
            raise SlurmError(f"{argv[0]} did not answer within {timeout:.0f}s: is slurmctld up?") from None
        except OSError as exc:
            raise SlurmError(f"{argv[0]} could not run: {exc}") from None


_MISSING = 127  # sh's status for a command not found


def remote_script(argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | Path | None = None) -> str:
    """The sh script that runs `argv` on a login node: every value one
    quoted word (the script itself reaches the host as base64, so no shell
    there parses a value of ours); a missing program exits 127 with a
    marker, a missing `cwd` 126."""
    argv = [str(a) for a in argv]
    lines = []
    if cwd is not None:
        lines.append(f"cd {shlex.quote(str(cwd))} || {{ echo specdsl-nocwd >&2; exit 126; }}")
    lines.append(f"command -v {shlex.quote(argv[0])} >/dev/null 2>&1 || {{ echo specdsl-missing >&2; exit {_MISSING}; }}")
    assign = [f"{k}={v}" for k, v in sorted((env or {}).items())]
    lines.append("exec " + shlex.join(["env", "--", *assign, *argv] if assign else argv))
    return "\n".join(lines) + "\n"


class SshRunner:
    """Commands on a login node, through an `SshHost`'s one connection:
    short ones through its worker shell (no new ssh client, no login shell
    per command). `env` is added to what each command sees there."""

    def __init__(self, host, env: Mapping[str, str] | None = None) -> None:
        self.host = host
        self.env = dict(env or {})
        self.where = f"on the login node {host.target}"

    def which(self, program: str) -> str | None:
        try:
            return self.host.which(program)
        except HostError as exc:
            raise SlurmError(str(exc)) from None

    def run(self, argv: Sequence[str], *, timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess:
        argv = [str(a) for a in argv]
        script = remote_script(argv, env=self.env, cwd=cwd)
        try:
            done = self.host.conn.quick(script, step=f"running {argv[0]}", ok=range(0, 255), timeout=timeout)
        except HostError as exc:
            raise SlurmError(str(exc)) from None
        out = done.stdout.decode("utf-8", errors="replace")
        err = done.stderr.decode("utf-8", errors="replace")
        if done.returncode == _MISSING and "specdsl-missing" in err:
            raise SlurmError(f"{argv[0]} is not installed {self.where} (not in the PATH of a non-interactive ssh session)")
        if done.returncode == 126 and "specdsl-nocwd" in err:
            raise SlurmError(f"{argv[0]}: no folder {cwd} {self.where}")
        return subprocess.CompletedProcess(argv, done.returncode, out, err)


class SlurmClient:
    """The Slurm commands of the submit host: this machine, or a login node
    (`runner`, an `SshRunner`). `env` adds to the environment the commands
    see (`slurm.conf`; tests point `SLURM_CONF` at their cluster)."""

    def __init__(self, env: dict[str, str] | None = None, runner=None) -> None:
        self.runner = runner if runner is not None else LocalRunner(env)

    @property
    def where(self) -> str:
        return self.runner.where

    def which(self, program: str) -> str | None:
        return self.runner.which(program)

    def _run(self, argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT_S, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return self.runner.run(argv, timeout=timeout, cwd=cwd)

    def run_program(self, argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
        """Another program on the submit host (the preflight's check of
        the job's Python); its status, stdout and stderr as text."""
        return self._run(argv, timeout=timeout)

    @staticmethod
    def _message(proc: subprocess.CompletedProcess) -> str:
        text = (proc.stderr or proc.stdout or "").strip()
        lines = [line.removeprefix("sbatch: error: ").strip() for line in text.splitlines() if line.strip()]
        return "; ".join(lines) or f"exit {proc.returncode}"

    # -- the cluster ----------------------------------------------------------
    def ping(self) -> None:
        proc = self._run(["scontrol", "ping"])
        if proc.returncode != 0 or "UP" not in proc.stdout:
            raise SlurmError(f"slurmctld does not answer: {self._message(proc)}")

    def partitions(self) -> dict[str, dict[str, str]]:
        """Every partition by name (`scontrol show partition -o`)."""
        proc = self._run(["scontrol", "show", "partition", "-o"])
        if proc.returncode != 0:
            raise SlurmError(f"scontrol show partition: {self._message(proc)}")
        out = {}
        for line in proc.stdout.splitlines():
            fields = parse_fields(line)
            if "PartitionName" in fields:
                out[fields["PartitionName"]] = fields
        return out

    def nodes(self, partition: str) -> list[NodeInfo]:
        proc = self._run(["sinfo", "-h", "-N", "-p", partition, "-o", "%N|%T|%G"])
        if proc.returncode != 0:
            raise SlurmError(f"sinfo -p {partition}: {self._message(proc)}")
        out = []
        for line in proc.stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) == 3:
                out.append(NodeInfo(parts[0], parts[1].lower().rstrip("*~#!%$@^-"), parts[2]))
        return out

    def config(self) -> dict[str, str]:
        proc = self._run(["scontrol", "show", "config"])
        if proc.returncode != 0:
            raise SlurmError(f"scontrol show config: {self._message(proc)}")
        out = {}
        for line in proc.stdout.splitlines():
            if " = " in line:
                key, _, value = line.partition(" = ")
                out[key.strip()] = value.strip()
        return out

    def account_exists(self, account: str) -> bool | None:
        """Whether the accounting database knows `account`; None when there
        is no database to ask (Slurm then accepts any account)."""
        if self.which("sacctmgr") is None:
            return None
        proc = self._run(["sacctmgr", "-nP", "show", "account", account, "format=account"])
        if proc.returncode != 0:
            return None
        return account in proc.stdout.split()

    def test_only(self, options: Sequence[str], script: Path) -> str | None:
        """None when `sbatch --test-only` would accept the job, else Slurm's words."""
        proc = self._run(["sbatch", "--test-only", *options, str(script)])
        return None if proc.returncode == 0 else self._message(proc)

    # -- jobs -------------------------------------------------------------------
    def submit(self, options: Sequence[str], script: Path, cwd: Path) -> str:
        """Submit `script`; its job id."""
        proc = self._run(["sbatch", "--parsable", *options, str(script)], cwd=cwd)
        if proc.returncode != 0:
            raise SlurmError(f"sbatch refused the job: {self._message(proc)}")
        job = proc.stdout.strip().split(";")[0]
        if not job.isdigit():
            raise SlurmError(f"sbatch answered {proc.stdout.strip()!r}, not a job id")
        return job

    def job(self, job: str) -> JobInfo | None:
        """The job's state: squeue while Slurm keeps it, then scontrol, then
        sacct (the accounting database, when there is one). None: unknown."""
        proc = self._run(["scontrol", "show", "job", "-o", job])
        if proc.returncode == 0 and "JobState=" in proc.stdout:
            f = parse_fields(proc.stdout)
            return JobInfo(job, f.get("JobState", ""), f.get("Reason", "None"), f.get("NodeList", ""),
                           f.get("ExitCode", ""), f.get("TimeLimit", ""))
        if self.which("sacct") is None:
            return None
        proc = self._run(["sacct", "-nP", "-X", "-j", job, "-o", "JobID,State,ExitCode,NodeList,Timelimit"])
        for line in proc.stdout.splitlines() if proc.returncode == 0 else ():
            parts = line.split("|")
            if len(parts) == 5 and parts[0] == job:
                state = parts[1].split()[0]  # "CANCELLED by 0"
                return JobInfo(job, state, parts[1], parts[3], parts[2], parts[4])
        return None

    def cancel(self, job: str) -> None:
        proc = self._run(["scancel", job])
        if proc.returncode != 0:
            raise SlurmError(f"scancel {job}: {self._message(proc)}")
