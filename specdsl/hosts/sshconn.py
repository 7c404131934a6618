"""One multiplexed OpenSSH connection to a host: the master and its clients.

Everything goes through the system `ssh` client, so the user's
`~/.ssh/config` (or `$SPECDSL_SSH_CONFIG`, passed as `-F`), agent,
`ProxyJump` and `known_hosts` apply. The master (`ssh -M -N`) is a process
of ours in its own process group; its control socket lives in a private
(0700) folder of this machine. Clients (`ssh -S socket`) share its one
authenticated connection; when the master is gone (killed, the network
dropped) the next client starts a new one, so a later step (a teardown)
can still reach the host.

Connections are bounded: `BatchMode=yes` (never a password prompt),
`ConnectTimeout`, `ServerAliveInterval` (a dead link is noticed within
seconds). A failure to connect is a `HostError` naming the host, the step
and the cause in words (unknown host, refused key, changed host key).

A remote command is a POSIX `sh` script. It reaches the host as base64 in
one word, so the user's login shell (bash, zsh, fish) never parses a value
of ours; inside the script every value is one `shlex.quote`d word.
"""

from __future__ import annotations

import atexit
import base64
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from typing import Sequence

from specdsl.hosts.base import HostError

CONNECT_TIMEOUT_S = 10
ALIVE_INTERVAL_S = 5
ALIVE_COUNT = 3
# How long a file operation may take before the link is taken as dead.
OP_TIMEOUT_S = 120.0
LOST = 255  # ssh's own exit status: the connection failed or dropped

# Only a constant reaches the login shell: the script arrives as base64.
_DECODE = "eval \"$(printf %s \"$0\" | base64 -d)\""

# The worker: one long-lived shell on the host that runs short scripts sent
# one a line (base64), each in a fresh `sh`, and answers one line:
# `specdsl-done RC xSTDOUT xSTDERR` (base64, each after an `x`). It spares
# every short operation the host's login shell (a .bashrc that runs
# `pyenv init` costs half a second a call).
_WORKER = """
read -r s < /proc/$$/stat; r=${s##*) }; set -- $r; echo "specdsl-worker $3"
while IFS= read -r req; do
  d=$(mktemp -d) || exit 1
  ( printf %s "$req" | base64 -d > "$d/s" && sh "$d/s" ) </dev/null >"$d/o" 2>"$d/e"
  rc=$?
  printf 'specdsl-done %s x%s x%s\\n' "$rc" "$(base64 < "$d/o" | tr -d '\\n')" "$(base64 < "$d/e" | tr -d '\\n')"
  rm -rf "$d"
done
"""


def encode_script(script: str) -> list[str]:
    """The words of a remote command that runs `script` with `sh`."""
    word = base64.b64encode(script.encode("utf-8")).decode("ascii")
    return ["sh", "-c", f"'{_DECODE}'", word]


def classify(stderr: str) -> str:
    """What an ssh failure means, in words a user acts on."""
    text = stderr.lower()
    if "could not resolve hostname" in text or "name or service not known" in text:
        return "unknown host (the name does not resolve; check `ssh` in the spec and your ssh config)"
    if "remote host identification has changed" in text or "host key verification failed" in text:
        return ("host key verification failed (the host's key is not the one known_hosts records, or it is not "
                "recorded: connect once with `ssh` yourself and check the fingerprint)")
    if "permission denied" in text:
        return "the host refused the key (permission denied; load the key into your agent or name it in your ssh config)"
    if "connection refused" in text:
        return "connection refused (no ssh server on that port)"
    if "timed out" in text:
        return "connection timed out"
    if "no route to host" in text or "network is unreachable" in text:
        return "no route to host"
    last = [line for line in stderr.strip().splitlines() if line.strip()]
    return last[-1].strip() if last else "the ssh client failed without a message"


class SshConnection:
    """The master connection to `target` and the way to run clients on it."""

    def __init__(self, target: str, *, name: str, config: str | None = None, port: int | None = None,
                 connect_timeout: float = CONNECT_TIMEOUT_S) -> None:
        self.target = target
        self.name = name
        self.config = config
        self.port = port
        self.connect_timeout = connect_timeout
        self._dir = tempfile.mkdtemp(prefix="specdsl-ssh-")  # 0700: mkdtemp's own mode
        self.socket = os.path.join(self._dir, "master")
        self._master: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._worker: subprocess.Popen | None = None
        self._worker_pgid: int | None = None
        self._worker_lock = threading.Lock()
        self.on_connect: list = []  # called after each new master (re-adds forwards)
        # A master is a process of its own session: never leave one behind us.
        atexit.register(self.close)

    def where(self) -> str:
        return f"host {self.name} ({self.target})"

    def options(self) -> list[str]:
        opts = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={int(self.connect_timeout)}",
                "-o", f"ServerAliveInterval={ALIVE_INTERVAL_S}", "-o", f"ServerAliveCountMax={ALIVE_COUNT}",
                "-o", "LogLevel=ERROR"]
        if self.config:
            opts = ["-F", self.config, *opts]
        if self.port:
            opts += ["-p", str(self.port)]
        return opts

    # -- the master -----------------------------------------------------------
    def master_alive(self) -> bool:
        return self._master is not None and self._master.poll() is None

    def ensure(self, step: str = "connecting") -> None:
        """A live master, started when there is none (`HostError` when the
        host cannot be reached, within about `connect_timeout`)."""
        with self._lock:
            if self.master_alive() and os.path.exists(self.socket):
                return
            self._stop_master()
            if not os.path.isdir(self._dir):  # closed before: a fresh private folder
                self._dir = tempfile.mkdtemp(prefix="specdsl-ssh-")
                self.socket = os.path.join(self._dir, "master")
            errlog = os.path.join(self._dir, "master.err")
            with open(errlog, "wb") as err:
                self._master = subprocess.Popen(
                    ["ssh", *self.options(), "-M", "-N", "-S", self.socket, "-o", "ControlPersist=no", self.target],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                )
            deadline = time.monotonic() + self.connect_timeout + 10
            while True:
                if self._master.poll() is not None:
                    with open(errlog, encoding="utf-8", errors="replace") as f:
                        cause = classify(f.read())
                    self._master = None
                    raise HostError(f"{self.where()}: {step}: {cause}")
                if os.path.exists(self.socket) and self._check():
                    break
                if time.monotonic() >= deadline:
                    self._stop_master()
                    raise HostError(f"{self.where()}: {step}: no connection within {self.connect_timeout + 10:.0f}s")
                time.sleep(0.05)
        for hook in list(self.on_connect):
            hook()

    def _check(self) -> bool:
        done = subprocess.run(["ssh", *self.options(), "-S", self.socket, "-O", "check", self.target],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
        return done.returncode == 0

    def control(self, *args: str) -> subprocess.CompletedProcess:
        """`ssh -O ...` on the master (forward, cancel, exit)."""
        return subprocess.run(["ssh", *self.options(), "-S", self.socket, *args, self.target],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=15)

    def master_process(self) -> subprocess.Popen | None:
        """The master's process now (None: none yet): a watch that holds it
        sees it end even when a later client starts a new one."""
        return self._master

    def master_error(self) -> str:
        """What the master said when it failed, in words ('' when nothing)."""
        try:
            with open(os.path.join(self._dir, "master.err"), encoding="utf-8", errors="replace") as f:
                text = f.read().strip()
        except OSError:
            return ""
        return classify(text) if text else ""

    def master_pid(self) -> int | None:
        return self._master.pid if self.master_alive() else None

    def _stop_master(self) -> None:
        proc, self._master = self._master, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=5)
        try:
            os.unlink(self.socket)
        except FileNotFoundError:
            pass

    def close(self) -> None:
        """End the worker and the master (`-O exit`, then by its group) and
        remove the socket folder."""
        with self._worker_lock:
            self._end_worker()
        with self._lock:
            if self.master_alive():
                try:
                    self.control("-O", "exit")
                except subprocess.TimeoutExpired:
                    pass
            self._stop_master()
            shutil.rmtree(self._dir, ignore_errors=True)

    # -- clients --------------------------------------------------------------
    def argv(self, script: str) -> list[str]:
        """The client argv that runs `script` on the host through the master."""
        return ["ssh", *self.options(), "-S", self.socket, "-o", "ControlMaster=no", "-T", self.target,
                "--", *encode_script(script)]

    def popen(self, script: str, *, step: str, stdin=subprocess.DEVNULL) -> subprocess.Popen:
        self.ensure(step)
        return subprocess.Popen(self.argv(script), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)

    def call(self, script: str, *, step: str, data: bytes | None = None, timeout: float = OP_TIMEOUT_S,
             ok: Sequence[int] = (0,)) -> subprocess.CompletedProcess:
        """Run `script` to completion and return it (stdout bytes); a lost
        connection, a timeout or an exit status outside `ok` is a
        `HostError` naming the host, the step and what the host said."""
        proc = self.popen(script, step=step, stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL)
        try:
            out, err = proc.communicate(data, timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            raise HostError(f"{self.where()}: {step}: no answer within {timeout:.0f}s (the host or the link hangs)") from None
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        if proc.returncode not in ok:
            raise self.failure(step, done)
        return done

    def quick(self, script: str, *, step: str, ok: Sequence[int] = (0,), timeout: float = OP_TIMEOUT_S,
              retry: bool = True) -> subprocess.CompletedProcess:
        """`call` for a short script whose output is small, through the
        worker. A worker found dead (the master went) is started again once."""
        with self._worker_lock:
            worker = self._worker
            if worker is None or worker.poll() is not None or not self.master_alive():
                self._end_worker()
                worker = self._worker = self.popen(_WORKER, step=step, stdin=subprocess.PIPE)
                # its session's process group on the host: what a hung operation is stopped by
                first = worker.stdout.readline().split() if select.select([worker.stdout], [], [], timeout)[0] else []
                self._worker_pgid = int(first[1]) if len(first) == 2 and first[1].isdigit() else None
            line = b""
            try:
                worker.stdin.write(base64.b64encode(script.encode("utf-8")) + b"\n")
                worker.stdin.flush()
                ready, _, _ = select.select([worker.stdout], [], [], timeout)
                if not ready:
                    self._end_worker(hung=True)
                    raise HostError(f"{self.where()}: {step}: no answer within {timeout:.0f}s (the host or the link hangs)")
                line = worker.stdout.readline()
            except (BrokenPipeError, OSError, ValueError):
                line = b""
            fields = line.split()
            if len(fields) != 4 or fields[0] != b"specdsl-done":
                err = b""
                if worker.poll() is not None and worker.stderr is not None:
                    err = worker.stderr.read() or b""
                self._end_worker()
                if retry:
                    return self.quick(script, step=step, ok=ok, timeout=timeout, retry=False)
                raise self.failure(step, subprocess.CompletedProcess(worker.args, LOST, b"", err))
        done = subprocess.CompletedProcess(worker.args, int(fields[1]), base64.b64decode(fields[2][1:]),
                                           base64.b64decode(fields[3][1:]))
        if done.returncode not in ok:
            raise self.failure(step, done)
        return done

    def _end_worker(self, hung: bool = False) -> None:
        worker, self._worker = self._worker, None
        if worker is None:
            return
        pgid = getattr(self, "_worker_pgid", None)
        if hung and pgid and pgid > 1:
            try:  # what hangs there is stopped with its worker's session
                self.call(f"kill -KILL -{pgid} 2>/dev/null; exit 0", step="stopping a hung operation", timeout=30)
            except HostError:
                pass
        try:
            worker.stdin.close()
            worker.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            pass
        kill_group(worker)

    def failure(self, step: str, done: subprocess.CompletedProcess) -> HostError:
        err = done.stderr.decode("utf-8", errors="replace") if isinstance(done.stderr, bytes) else (done.stderr or "")
        if done.returncode == LOST:
            return HostError(f"{self.where()}: {step}: the ssh connection failed or was lost: {classify(err)}")
        said = " ".join(err.strip().split())[-400:] or f"exit status {done.returncode}"
        return HostError(f"{self.where()}: {step}: {said}")


def kill_group(proc: subprocess.Popen) -> None:
    """Stop a local ssh client of ours (its own process group) and reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError):
        pass
