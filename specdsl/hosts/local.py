"""This machine as a `Host`: subprocesses in their own process groups.

Every process is started with `start_new_session=True`, so its process group
id is its pid and everything it forks (vLLM's engine core, SGLang's
schedulers, tokenizer workers) shares that group unless it makes a session of
its own. Stopping is by group: TERM, wait, KILL, then confirm from /proc that
no process of the group is left.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from specdsl import secrets
from specdsl.hosts import ports
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
    key = "local"

    def __init__(self, env_root: Path | None = None) -> None:
        self.env_root = Path(env_root) if env_root is not None else default_env_root()
        self.default_python = sys.executable
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
        framed: bool = True,
    ) -> CommandResult:
        """See `Host.run`."""
        argv = tuple(str(a) for a in argv)
        started = time.monotonic()
        proc = self._spawn(argv, log_path=log_path, env=env, cwd=cwd, framed=framed)
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
        if framed:
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

    def _spawn(self, argv, *, log_path, env, cwd, framed: bool = True) -> subprocess.Popen:
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with open(fd, "a", encoding="utf-8") as log:
            if framed:
                # the command as the log may show it: no secret of its argv or env
                log.write(f"$ {shlex.join(secrets.redact_argv(argv, env))}\n")
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
                if framed:
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
        self._signal(pgid, signal.SIGCONT)  # a frozen (SIGSTOPped) group acts on its TERM only once it runs
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
        """See `Host.free_port`: outside the ephemeral range (`ports`)."""
        return ports.pick_port(host)

    def port_free(self, port: int, host: str = "127.0.0.1") -> bool:
        """See `Host.port_free`."""
        return ports.port_free(port, host)

    def tail(self, path: Path, lines: int = 30) -> str:
        """See `Host.tail`."""
        return tail_text(path, lines)

    def read_text(self, path: Path, max_bytes: int | None = None) -> str:
        """See `Host.read_text`."""
        with open(path, "rb") as f:
            if max_bytes is not None:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - max_bytes))
            return f.read().decode("utf-8", errors="replace")

    def read_from(self, path: Path, offset: int) -> bytes:
        """See `Host.read_from`."""
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                return f.read()
        except OSError:
            return b""

    def write_text(self, path: Path, text: str, *, mode: int = 0o600) -> None:
        """See `Host.write_text`."""
        path = Path(path)
        self.mkdir(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def exists(self, path: Path) -> bool:
        """See `Host.exists`."""
        return Path(path).exists()

    def mkdir(self, path: Path) -> None:
        """See `Host.mkdir`."""
        path = Path(path)
        missing = []
        while not path.exists() and path != path.parent:
            missing.append(path)
            path = path.parent
        for folder in reversed(missing):
            folder.mkdir(mode=0o700, exist_ok=True)

    def remove_tree(self, path: Path) -> None:
        """See `Host.remove_tree`."""
        path = Path(path)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)

    @contextmanager
    def temp_dir(self, prefix: str = "specdsl-") -> Iterator[Path]:
        """See `Host.temp_dir`."""
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            yield Path(tmp)

    @contextmanager
    def lock(self, path: Path) -> Iterator[None]:
        """See `Host.lock`."""
        self.mkdir(Path(path).parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        with open(fd, "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def fetch(self, path: Path, dest: Path) -> Path:
        """See `Host.fetch`."""
        if Path(path).resolve() != Path(dest).resolve():
            Path(dest).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
        return Path(dest)

    def run_folder(self, local: Path) -> Path:
        """See `Host.run_folder`: on this machine, the local folder itself."""
        return Path(local)

    def collect(self, folder: Path, local: Path) -> None:
        """See `Host.collect`: nothing to copy when they are one folder."""
        if Path(folder).resolve() != Path(local).resolve():
            shutil.copytree(folder, local, dirs_exist_ok=True)

    def getenv(self, name: str) -> str | None:
        """See `Host.getenv`."""
        return os.environ.get(name)

    def which(self, program: str) -> str | None:
        """See `Host.which`. `uv` is also found inside the uv wheel
        specdsl depends on, so a fresh install needs no separate uv."""
        if "/" in program:
            return program if os.path.isfile(program) and os.access(program, os.X_OK) else None
        found = shutil.which(program)
        if found is None and program == "uv":
            try:
                import uv

                found = uv.find_uv_bin()
            except (ImportError, FileNotFoundError):
                found = None
        return found

    def reach(self, port: int, host: str = "127.0.0.1") -> tuple[str, int]:
        """See `Host.reach`: this machine's ports are reached directly."""
        return ("127.0.0.1" if host in ("0.0.0.0", "") else host), port

    def close(self) -> None:
        """See `Host.close`: nothing held."""


def default_env_root() -> Path:
    """Where environments live on this machine: $SPECDSL_ENV_ROOT, else the
    user cache (environments are large and shared by every spec)."""
    if os.environ.get("SPECDSL_ENV_ROOT"):
        return Path(os.environ["SPECDSL_ENV_ROOT"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "specdsl" / "envs"
