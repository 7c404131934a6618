"""What every host gives the layers above it: values and the `Host` protocol.

A host runs commands and long-lived processes, reads and writes its own
files, finds its programs and tells how to reach its ports from here.
`local` is this machine and `ssh` a machine reached over OpenSSH; both
implement the same protocol, so the layers above never know which one they
drive. A Slurm host is not a `Host`: its steps run as batch jobs through
the Slurm executor (`apply/slurm/`), on the compute node's `LocalHost`.
Paths given to a host are paths *on that host*. Nothing here imports from the rest of specdsl.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Mapping, Protocol, Sequence, runtime_checkable

import attrs


class HostError(Exception):
    """A host could not do what was asked (start, stop, confirm a process is gone)."""


class Cancelled(Exception):
    """The caller's stop event was set while a command was running; the
    command's process group was stopped."""


@attrs.frozen
class ProcessHandle:
    """A long-lived process started in its own process group.

    Plain values only, so a handle can be recorded in state and used again
    by another specdsl process (`alive`, `stop` work from the numbers)."""

    pid: int
    pgid: int
    argv: tuple[str, ...]
    log_path: str
    cwd: str | None = None


@attrs.frozen
class CommandResult:
    """A finished command: exit status, how long it took, its log's last lines."""

    argv: tuple[str, ...]
    returncode: int
    log_path: str
    duration_s: float
    timed_out: bool = False
    tail: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


@runtime_checkable
class Host(Protocol):
    """Where commands run. Every subprocess gets an argv list, its own
    process group, a log file and a bounded wait."""

    name: str
    # The physical machine: hosts with one key are one machine (its GPUs
    # hold one server at a time), whatever the spec's blocks call them.
    key: str
    # Where environments live on this host.
    env_root: Path
    # The interpreter a stack with `python = "system"` builds on.
    default_python: str

    def run(
        self,
        argv: Sequence[str],
        *,
        log_path: Path,
        timeout: float,
        env: Mapping[str, str | None] | None = None,
        cwd: Path | None = None,
        stop: threading.Event | None = None,
        framed: bool = True,
    ) -> CommandResult:
        """Run to completion (or `timeout` seconds, then the group is killed
        and `timed_out` is set). Output (stdout and stderr) is appended to
        `log_path`; `framed` adds a `$ argv` header line and an exit-status
        footer (left out for output that is parsed, such as a benchmark
        script's). Raises `Cancelled` when `stop` is set meanwhile, and
        `HostError` when the program cannot start."""
        ...

    def start(
        self,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: Mapping[str, str | None] | None = None,
        cwd: Path | None = None,
    ) -> ProcessHandle:
        """Start in a new process group (its own session), output to
        `log_path`; return at once."""
        ...

    def alive(self, handle: ProcessHandle) -> bool:
        """True while the group's leader runs (a zombie counts as gone)."""
        ...

    def stop(self, handle: ProcessHandle, grace_s: float = 10.0) -> None:
        """TERM the group, wait up to `grace_s`, KILL what is left, and
        confirm no process of the group remains (else `HostError`)."""
        ...

    def returncode(self, handle: ProcessHandle) -> int | None:
        """The exit status of a process this host started and saw end, else None."""
        ...

    def group_pids(self, pgid: int) -> list[int]:
        """Live (non-zombie) processes of a process group."""
        ...

    def free_port(self, host: str = "127.0.0.1") -> int:
        """A TCP port nothing uses right now, outside the host's ephemeral
        range where it can be read (`hosts.ports`: no outgoing connection
        takes it while a server starts)."""
        ...

    def port_free(self, port: int, host: str = "127.0.0.1") -> bool:
        """True when `port` can be bound on `host`."""
        ...

    def tail(self, path: Path, lines: int = 30) -> str:
        """The last `lines` lines of a (log) file, "" when it does not exist."""
        ...

    # -- files on the host ----------------------------------------------------
    def read_text(self, path: Path, max_bytes: int | None = None) -> str:
        """The file's text (undecodable bytes replaced); with `max_bytes`,
        only its last `max_bytes`. `FileNotFoundError` when it is missing."""
        ...

    def read_from(self, path: Path, offset: int) -> bytes:
        """The bytes of `path` after its first `offset` (b"" when it does not
        exist, or is no longer than that; a host may return them in pieces:
        call again from the new offset until b"")."""
        ...

    def write_text(self, path: Path, text: str, *, mode: int = 0o600) -> None:
        """Write atomically (a temporary file renamed over `path`), parents
        made as needed (0700); the file is the owner's only by default."""
        ...

    def exists(self, path: Path) -> bool:
        ...

    def mkdir(self, path: Path) -> None:
        """Make a folder and its parents (0700); an existing one is fine."""
        ...

    def remove_tree(self, path: Path) -> None:
        """Remove a file or folder tree; a missing one is fine."""
        ...

    def temp_dir(self, prefix: str = "specdsl-") -> AbstractContextManager[Path]:
        """A fresh private folder on the host, removed on exit."""
        ...

    def lock(self, path: Path) -> AbstractContextManager[None]:
        """Hold an exclusive lock named by `path` on the host (blocks)."""
        ...

    def fetch(self, path: Path, dest: Path) -> Path:
        """Copy the host's file `path` to `dest` on this machine; returns `dest`."""
        ...

    def run_folder(self, local: Path) -> Path:
        """Where on the host the files of the run kept here in `local` go
        (logs, records). `collect` brings them back."""
        ...

    def collect(self, folder: Path, local: Path) -> None:
        """Copy what a run left in the host's `folder` into `local`."""
        ...

    # -- programs and ports ---------------------------------------------------
    def getenv(self, name: str) -> str | None:
        """An environment variable of the host's own environment."""
        ...

    def which(self, program: str) -> str | None:
        """The absolute path of an executable on the host (a name looked up
        on its PATH, or a path checked), None when there is none."""
        ...

    def reach(self, port: int, host: str = "127.0.0.1") -> tuple[str, int]:
        """An address on *this* machine that reaches `host:port` on the host
        (the same address for this machine; a forwarded port for a remote
        one)."""
        ...

    def close(self) -> None:
        """Release what the host holds (connections, forwards)."""
        ...
