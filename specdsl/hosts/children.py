"""Helper processes of this specdsl process: children that belong to it,
unlike the programs a `Host` starts (which get their own process group and
outlive the call that started them).

A child started here stays in its parent's process group, so a Ctrl-C at
the terminal (SIGINT to the foreground group) and a kill of that group
reach it too; it is sent SIGKILL by the kernel when the thread that started
it ends (Linux `PR_SET_PDEATHSIG`), so a parent killed without a chance to
clean up leaves no orphan. It talks to its parent over pipes (stdin,
stdout) and writes its stderr to a log file. The benchmark client's worker
processes are such children (specdsl.bench.workers).
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from specdsl.hosts.base import HostError
from specdsl.hosts.local import merged_env

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # no prctl: the child still ends when its stdin closes


async def start_child(argv: Sequence[str], *, log_path: Path,
                      env: Mapping[str, str | None] | None = None) -> asyncio.subprocess.Process:
    """Start `argv` as a child of this process (see the module doc) on the
    running event loop, with pipes for stdin and stdout and stderr appended
    to `log_path` (0600). Raises HostError when it cannot start."""
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        return await asyncio.create_subprocess_exec(
            *[str(a) for a in argv],
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=fd,
            env=merged_env(env),
            preexec_fn=_die_with_parent,
            limit=1 << 26,  # a run's records come back as one line
        )
    except OSError as exc:
        raise HostError(f"could not start {argv[0]!r}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


async def end_child(proc: asyncio.subprocess.Process, grace_s: float = 2.0) -> int:
    """Close the child's stdin (its signal to finish), wait up to `grace_s`,
    then TERM it, then KILL it; returns its exit status."""
    if proc.returncode is None and proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    for step, wait_s in (("close", grace_s), (signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        if step != "close" and proc.returncode is None:
            try:
                proc.send_signal(step)
            except ProcessLookupError:
                pass
        try:
            return await asyncio.wait_for(proc.wait(), wait_s)
        except asyncio.TimeoutError:
            continue
    raise HostError(f"child process {proc.pid} did not end after SIGKILL")


def start_helper(argv: Sequence[str]):
    """Start `argv` as a child of this process (see the module doc) from
    plain threaded code: a `subprocess.Popen` with text pipes for stdin
    and stdout, its stderr discarded (a small helper that says what it has
    on stdout, such as the host-load sampler of specdsl.bench.hostload).
    End it with `end_helper`. Raises HostError when it cannot start."""
    import subprocess

    try:
        return subprocess.Popen([str(a) for a in argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, preexec_fn=_die_with_parent)
    except OSError as exc:
        raise HostError(f"could not start {argv[0]!r}: {exc.strerror or exc}") from exc


def end_helper(proc, timeout_s: float = 5.0) -> str | None:
    """Close a helper's stdin (its signal to finish) and return what it
    wrote on stdout; None when it did not end within `timeout_s` (then it
    is killed)."""
    import subprocess

    try:
        out, _ = proc.communicate("", timeout=timeout_s)
        return out
    except (subprocess.TimeoutExpired, OSError, ValueError):
        proc.kill()
        proc.wait()
        return None
