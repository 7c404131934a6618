"""What every host gives the layers above it: values and the `Host` protocol.

A host runs commands and long-lived processes. `local` is this machine; an
ssh host implements the same protocol later. Nothing here imports from the
rest of specdsl.
"""

from __future__ import annotations

import threading
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

    def run(
        self,
        argv: Sequence[str],
        *,
        log_path: Path,
        timeout: float,
        env: Mapping[str, str | None] | None = None,
        cwd: Path | None = None,
        stop: threading.Event | None = None,
    ) -> CommandResult:
        """Run to completion (or `timeout` seconds, then the group is killed
        and `timed_out` is set). Output (stdout and stderr) is appended to
        `log_path` after a `$ argv` header line. Raises `Cancelled` when
        `stop` is set meanwhile."""
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
        """A TCP port nothing listens on right now."""
        ...

    def port_free(self, port: int, host: str = "127.0.0.1") -> bool:
        """True when `port` can be bound on `host`."""
        ...

    def tail(self, path: Path, lines: int = 30) -> str:
        """The last `lines` lines of a (log) file, "" when it does not exist."""
        ...
