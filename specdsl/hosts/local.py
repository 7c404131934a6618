"""This machine as a `Host`: subprocesses in their own process groups.

Every process is started with `start_new_session=True`, so its process group
id is its pid and everything it forks (vLLM's engine core, SGLang's
schedulers, tokenizer workers) shares that group unless it makes a session of
its own. Stopping is by group: TERM, wait, KILL, then confirm from /proc that
no process of the group is left.
"""

from __future__ import annotations

import errno
import os
import shlex
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Mapping, Sequence

from specdsl.hosts.base import Cancelled, CommandResult, HostError, ProcessHandle

_POLL_S = 0.1
_KILL_CONFIRM_S = 5.0


def merged_env(env: Mapping[str, str | None] | None) -> dict[str, str]:
    """os.environ with `env` applied on top; a None value removes the key."""
    out = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = str(value)
    return out


def tail_text(path: Path | str, lines: int = 30, max_bytes: int = 256 * 1024) -> str:
    """The last `lines` lines of a file ("" when it does not exist)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read()
    except FileNotFoundError:
        return ""
    text = data.decode("utf-8", errors="replace").replace("\r", "\n")
    return "\n".join(text.rstrip("\n").split("\n")[-lines:])


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, pgrp) of a pid from /proc, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name may hold spaces and parentheses: split after the last ')'.
    fields = raw[raw.rfind(")") + 2 :].split()
    return fields[0], int(fields[2])


class LocalHost:
    """This machine. Keeps the `Popen` of each process it started so that
    finished children are reaped (a zombie leader would look alive)."""

    name = "local"

    def __init__(self) -> None:
        self._children: dict[int, subprocess.Popen] = {}
        self._exited: dict[int, int] = {}
        self._lock = threading.Lock()

    # -- commands -----------------------------------------------------------
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
        """See `Host.run`."""
        argv = tuple(str(a) for a in argv)
        started = time.monotonic()
        proc = self._spawn(argv, log_path=log_path, env=env, cwd=cwd)
        handle = ProcessHandle(proc.pid, proc.pid, argv, str(log_path), str(cwd) if cwd else None)
        timed_out = False
        try:
            while True:
                try:
                    proc.wait(timeout=_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if stop is not None and stop.is_set():
                    self.stop(handle, grace_s=5)
                    raise Cancelled(f"cancelled: {shlex.join(argv)}")
                if time.monotonic() - started > timeout:
                    timed_out = True
                    self.stop(handle, grace_s=5)
                    proc.wait(timeout=5)  # reap it: the group is gone, the leader is a zombie
                    break
        except BaseException:
            if proc.poll() is None:
                self.stop(handle, grace_s=5)
            raise
        finally:
            with self._lock:
                self._children.pop(proc.pid, None)
        # A command may leave children behind in its group (a daemonizing
        # step): they are not ours to keep.
        if self.group_pids(proc.pid):
            self.stop(handle, grace_s=2)
        with open(log_path, "a", encoding="utf-8") as log:
            status = "timed out" if timed_out else f"exit {proc.returncode}"
            log.write(f"[specdsl] {status} after {time.monotonic() - started:.1f}s\n")
        return CommandResult(
            argv=argv,
            returncode=proc.returncode if proc.returncode is not None else -9,
            log_path=str(log_path),
            duration_s=time.monotonic() - started,
            timed_out=timed_out,
            tail=tail_text(log_path, 30),
        )

    # -- long-lived processes -----------------------------------------------
    def start(
        self,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: Mapping[str, str | None] | None = None,
        cwd: Path | None = None,
    ) -> ProcessHandle:
        """See `Host.start`."""
        argv = tuple(str(a) for a in argv)
        proc = self._spawn(argv, log_path=log_path, env=env, cwd=cwd)
        return ProcessHandle(proc.pid, os.getpgid(proc.pid), argv, str(log_path), str(cwd) if cwd else None)

    def _spawn(self, argv, *, log_path, env, cwd) -> subprocess.Popen:
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"$ {shlex.join(argv)}\n")
            log.flush()
            try:
                proc = subprocess.Popen(
                    list(argv),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=merged_env(env),
                    cwd=str(cwd) if cwd else None,
                    start_new_session=True,
                )
            except OSError as exc:
                log.write(f"[specdsl] could not start: {exc}\n")
                raise HostError(f"could not start {argv[0]!r}: {exc.strerror or exc}") from exc
        with self._lock:
            self._children[proc.pid] = proc
        return proc

    def alive(self, handle: ProcessHandle) -> bool:
        """See `Host.alive`."""
        self._reap()
        stat = _proc_stat(handle.pid)
        return stat is not None and stat[0] != "Z" and stat[1] == handle.pgid

    def returncode(self, handle: ProcessHandle) -> int | None:
        """See `Host.returncode`."""
        with self._lock:
            proc = self._children.get(handle.pid)
        if proc is None:
            return self._exited.get(handle.pid)
        code = proc.poll()
        if code is not None:
            self._remember_exit(handle.pid, code)
        return code

    def _remember_exit(self, pid: int, code: int) -> None:
        self._exited[pid] = code

    def group_pids(self, pgid: int) -> list[int]:
        """See `Host.group_pids`."""
        self._reap()
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            stat = _proc_stat(int(entry))
            if stat is not None and stat[1] == pgid and stat[0] != "Z":
                pids.append(int(entry))
        return sorted(pids)

    def stop(self, handle: ProcessHandle, grace_s: float = 10.0) -> None:
        """See `Host.stop`."""
        pgid = handle.pgid
        if pgid <= 1 or pgid == os.getpgid(0):
            raise HostError(f"refusing to signal process group {pgid} (ours or init's)")
        if not self.group_pids(pgid):
            return
        self._signal(pgid, signal.SIGTERM)
        if self._wait_gone(pgid, grace_s):
            return
        self._signal(pgid, signal.SIGKILL)
        if not self._wait_gone(pgid, _KILL_CONFIRM_S):
            left = self.group_pids(pgid)
            raise HostError(f"process group {pgid} still has processes {left} after SIGKILL")

    def _signal(self, pgid: int, sig: int) -> None:
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass

    def _wait_gone(self, pgid: int, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while True:
            if not self.group_pids(pgid):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)

    def _reap(self) -> None:
        with self._lock:
            for pid, proc in list(self._children.items()):
                code = proc.poll()
                if code is not None:
                    self._remember_exit(pid, code)
                    del self._children[pid]

    # -- ports and files ----------------------------------------------------
    def free_port(self, host: str = "127.0.0.1") -> int:
        """See `Host.free_port`."""
        with socket.socket(_family(host), socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            return sock.getsockname()[1]

    def port_free(self, port: int, host: str = "127.0.0.1") -> bool:
        """See `Host.port_free`."""
        with socket.socket(_family(host), socket.SOCK_STREAM) as sock:
            # SO_REUSEADDR: a port in TIME_WAIT is free for a server; a listener is not.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError as exc:
                if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                    return False
                raise
            return True

    def tail(self, path: Path, lines: int = 30) -> str:
        """See `Host.tail`."""
        return tail_text(path, lines)


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET
