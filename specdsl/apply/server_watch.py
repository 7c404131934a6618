"""A server watched while its benchmark runs: one that dies, stops
answering, or whose host's connection drops, ends the benchmark and fails
its step (a broken run is never a measurement, specdsl.bench.validity).

`ServerWatch` polls, on a thread of its own, every `every_s`: the server's
process (through its `Host`), its health URL (within `answer_timeout_s`;
`misses` misses in a row are "stopped answering": a process frozen by
SIGSTOP accepts connections and never answers), and, for an SSH host, the
connection's master process. When one of them is lost it sets `stop` (the
event the load generator and a user's script watch) and `lost` says what,
when, and the server's exit status when known; `log` its last log lines.
`check()` asks once more at the end: a server killed between two polls
fails the requests after it at once, and the run can end first.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import requests

from specdsl.hosts import HostError
from specdsl.hosts.http import session
from specdsl.state import utc_now

LOG_LINES = 10
_TICK_S = 0.05


class ServerWatch:
    def __init__(self, name: str, handle, host, stop: threading.Event | None = None, *, every_s: float = 1.0,
                 answer_timeout_s: float = 3.0, misses: int = 2) -> None:
        self.name, self.handle, self.host, self.outer = name, handle, host, stop
        self.every_s, self.answer_timeout_s, self.misses = every_s, answer_timeout_s, misses
        self.stop = threading.Event()  # set when the server is lost or `stop` (the walk's) is set
        self.lost = ""  # what was lost and when, one line
        self.log = ""  # the server's last log lines, when it was lost (a paragraph)
        self._missed = 0
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._http = session(answer_timeout_s)
        conn = getattr(host, "conn", None)
        self._master = conn.master_process() if conn is not None and hasattr(conn, "master_process") else None

    def start(self) -> "ServerWatch":
        """Start polling (once: a started watch is left as it is)."""
        if self._thread is None and not self._done.is_set():
            self._thread = threading.Thread(target=self._loop, name=f"watch-{self.name}", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        """End the polling (idempotent); `check` still answers."""
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=self.answer_timeout_s + 15)
            self._thread = None

    def __enter__(self) -> "ServerWatch":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def _loop(self) -> None:
        last = time.monotonic()
        while not self._done.wait(_TICK_S):  # the walk's stop is passed on at once, the server asked every `every_s`
            if self.outer is not None and self.outer.is_set():
                self.stop.set()
            if time.monotonic() - last < self.every_s:
                continue
            if self.check(final=False):
                return
            last = time.monotonic()

    def check(self, final: bool = True) -> str:
        """Why the server (or its host's connection) is lost, '' while it
        serves. `final`: a single missed answer is enough (the run is over)."""
        if self.lost:
            return self.lost
        if self.outer is not None and self.outer.is_set():
            return ""  # the walk is stopping (Ctrl-C): its servers go because of it, not lost
        why = self._connection() or self._process() or self._answers(final)
        if why:
            self.lost = why
            self.stop.set()
        return self.lost

    def _connection(self) -> str:
        master = self._master
        if master is None or master.poll() is None:
            return ""
        conn = self.host.conn
        status = _status(master.returncode)
        return (f"the SSH connection to {conn.where()} dropped at {utc_now()} during the benchmark of server {self.name} "
                f"(its master, pid {master.pid}, {status}{_cause(conn)}); the requests through it failed")

    def _process(self) -> str:
        h = self.handle
        try:
            if self.host.alive(h.process()):
                return ""
            code = self.host.returncode(h.process())
        except HostError as exc:
            return f"server {self.name} could not be checked at {utc_now()}: {exc}"
        status = f", {_status(code)}" if code is not None else ""
        self.log = _tail(self.host, h.log_path)
        return f"server {self.name} (pid {h.pid}, process group {h.pgid}) died at {utc_now()} during the benchmark{status}"

    def _answers(self, final: bool) -> str:
        h = self.handle
        url = h.health_url or h.base_url + "/health"
        try:
            if self._http.get(url, timeout=self.answer_timeout_s).status_code == 200:
                self._missed = 0
                return ""
        except requests.RequestException:
            pass
        self._missed += 1
        if self._missed < (1 if final else self.misses):
            return ""
        self.log = _tail(self.host, h.log_path)
        return (f"server {self.name} (pid {h.pid}, process group {h.pgid}) stopped answering at {utc_now()} during the "
                f"benchmark: its process runs but {url} did not answer within {self.answer_timeout_s:g}s")


def _status(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    return f"killed by signal {-code}" if code < 0 else f"exit status {code}"


def _cause(conn) -> str:
    err = conn.master_error() if hasattr(conn, "master_error") else ""
    return f": {err}" if err else ""


def _tail(host, log_path: str) -> str:
    try:
        text = host.tail(Path(log_path), LOG_LINES).rstrip()
    except (HostError, OSError):
        return ""
    if not text:
        return f"its log ({log_path}) is empty"
    return f"the last lines of its log ({log_path}):\n" + "\n".join(f"    {line}" for line in text.splitlines())


def already_exited(handle, host) -> str:
    """`had already exited (killed by signal 9)` for a server whose process
    is gone, '' while it runs (or when its host cannot say)."""
    try:
        if host.alive(handle.process()):
            return ""
        code = host.returncode(handle.process())
    except HostError:
        return ""
    return f"had already exited ({_status(code)})"

