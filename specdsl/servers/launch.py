"""Start a server, wait until it really serves, stop it.

Readiness is the engine's health signal (SGLang: /health 200, which comes
only after its warmup; vLLM and transformers: /health 200; `command`: its
`ready_url`), then one real short completion, so "ready" means it answers.
"""

from __future__ import annotations

import os
import shlex
import threading
import time
from pathlib import Path
from typing import Callable
from urllib.parse import urljoin

import attrs
import requests

from specdsl.servers.argv import build_argv, engine_distribution
from specdsl.hosts import Cancelled, HostError, LocalHost, ProcessHandle
from specdsl.hosts.http import session
from specdsl.hosts.local import tail_text
from specdsl.model.config import Server
from specdsl.provision import EnvInfo

LOG_TAIL_LINES = 30
_POLL_S = 0.5
_COMPLETION_TIMEOUT_S = 120.0

# One host object for the process: it keeps the Popen of each server it
# started, so exit codes are known and finished servers are reaped.
_HOST = LocalHost()


@attrs.frozen
class ServerHandle:
    """A running server. Plain values, so it can be recorded in state.
    `health_url` is what `answers` polls; `version` the engine's version
    (the server's own report where it gives one, else the env's freeze)."""

    pid: int
    pgid: int
    port: int
    host: str
    base_url: str
    log_path: str
    argv: tuple[str, ...]
    engine: str = ""
    model: str = ""
    health_url: str = ""
    version: str | None = None

    def process(self) -> ProcessHandle:
        return ProcessHandle(self.pid, self.pgid, self.argv, self.log_path)


class LaunchError(Exception):
    """A server did not start or did not become ready. `str()` names what
    failed, the command, the log path and the log's last 30 lines."""

    def __init__(self, what: str, *, argv=(), log_path: str | None = None, pgid: int | None = None):
        self.what = what
        self.pgid = pgid  # the stopped server's process group, when one was started
        self.argv = tuple(argv)
        self.log_path = log_path
        self.tail = tail_text(log_path, LOG_TAIL_LINES) if log_path else ""
        parts = [what]
        if self.argv:
            parts.append(f"  command: {shlex.join(self.argv)}")
        if log_path:
            parts.append(f"  log: {log_path}")
            parts.append(f"  last {LOG_TAIL_LINES} lines of the log:")
            parts += [f"    {line}" for line in self.tail.splitlines()] or ["    (empty)"]
        super().__init__("\n".join(parts))


def health_url(server: Server, base_url: str) -> str:
    """The URL whose 200 means the server finished starting."""
    if server.engine == "command":
        if not server.ready_url:
            return urljoin(base_url, "/health")
        return urljoin(base_url + "/", server.ready_url.lstrip("/")) if "://" not in server.ready_url else server.ready_url
    return base_url + "/health"


def launch(
    server: Server,
    env: EnvInfo,
    run_dir: Path,
    *,
    host: str = "127.0.0.1",
    progress: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
) -> ServerHandle:
    """Start `server` from environment `env` and return once it is ready.

    The server runs in its own process group, logging to
    `run_dir/server.log` (a previous one becomes `server.log.1`), on `server.port` (a `LaunchError` when that port is
    busy) or a free port. On any failure the group is stopped before the
    `LaunchError` (or `hosts.Cancelled`, when `stop` is set) is raised: no
    process is left behind."""
    say = progress or (lambda _msg: None)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    log_path = run_dir / "server.log"
    if log_path.exists():
        # Effective config reads the whole log: a relaunch starts a fresh one.
        log_path.replace(run_dir / "server.log.1")
    if server.port is not None:
        if not _HOST.port_free(server.port, host):
            raise LaunchError(
                f"{server.engine} server {server.name!r} cannot start: port {server.port} on {host} is already in use "
                "(another server may still run there; stop it or choose another `port`)"
            )
        port = server.port
    else:
        port = _HOST.free_port(host)
    base_url = f"http://{_url_host(host)}:{port}"
    try:
        argv = build_argv(server, env, host, port)
    except ValueError as exc:
        raise LaunchError(str(exc)) from None
    _, version = engine_distribution(server.engine, env)
    proc_env = {
        **env.env,
        **{k: str(v) for k, v in server.env},
        "VIRTUAL_ENV": env.path,
        "PATH": f"{Path(env.python).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "PYTHONUNBUFFERED": "1",  # log lines arrive as they happen: readiness and log facts read them
    }
    say(f"starting {server.engine} server {server.name} on port {port}")
    try:
        proc = _HOST.start(argv, log_path=log_path, env=proc_env)
    except HostError as exc:
        raise LaunchError(f"{server.engine} server {server.name!r} could not start: {exc}", argv=argv, log_path=str(log_path)) from None
    handle = ServerHandle(
        pid=proc.pid, pgid=proc.pgid, port=port, host=host, base_url=base_url, log_path=str(log_path),
        argv=tuple(argv), engine=server.engine, model=server.model, health_url=health_url(server, base_url),
        version=version,
    )
    try:
        _wait_ready(server, handle, say, stop)
    except BaseException as exc:
        try:
            _HOST.stop(handle.process(), grace_s=5)
        except HostError as stuck:
            exc.add_note(f"and stopping it failed: {stuck}")  # the one case where processes are left
        raise
    say(f"{server.engine} server {server.name} ready at {base_url}")
    return handle


def _wait_ready(server: Server, handle: ServerHandle, say, stop) -> None:
    started = time.monotonic()
    deadline = started + server.ready_timeout
    http = session(5.0)
    proc = handle.process()
    what = f"{server.engine} server {server.name!r}"
    last_note = started
    while True:
        if not _HOST.alive(proc):
            code = _HOST.returncode(proc)
            status = f"with code {code}" if code is not None else ""
            raise LaunchError(f"{what} exited {status} during startup".replace("  ", " "), argv=handle.argv, log_path=handle.log_path, pgid=handle.pgid)
        try:
            if http.get(handle.health_url).status_code == 200:
                break
        except requests.RequestException:
            pass
        if stop is not None and stop.is_set():
            raise Cancelled(f"cancelled while {what} was starting")
        now = time.monotonic()
        if now >= deadline:
            raise LaunchError(
                f"{what} was not ready within {server.ready_timeout:g}s ({handle.health_url} never answered 200)",
                argv=handle.argv, log_path=handle.log_path, pgid=handle.pgid,
            )
        if now - last_note >= 15:
            say(f"waiting for {server.name} ({now - started:.0f}s)")
            last_note = now
        time.sleep(_POLL_S)
    remaining = max(5.0, min(_COMPLETION_TIMEOUT_S, deadline - time.monotonic()))
    body = {"model": server.model, "prompt": "Hello", "max_tokens": 4, "temperature": 0}
    try:
        resp = http.post(handle.base_url + "/v1/completions", json=body, timeout=remaining)
    except requests.RequestException as exc:
        raise LaunchError(f"{what} is up but a first completion failed: {exc}", argv=handle.argv, log_path=handle.log_path, pgid=handle.pgid) from None
    if resp.status_code != 200:
        raise LaunchError(
            f"{what} is up but a first completion failed: HTTP {resp.status_code} {resp.text[:300]}",
            argv=handle.argv, log_path=handle.log_path, pgid=handle.pgid,
        )


def teardown(handle: ServerHandle, grace_s: float = 10) -> None:
    """TERM the server's process group, wait `grace_s`, KILL what is left,
    and confirm nothing of the group remains (`hosts.HostError` if it does)."""
    _HOST.stop(handle.process(), grace_s=grace_s)


def answers(handle: ServerHandle) -> bool:
    """True while the server's leader runs and its health URL answers 200."""
    if not _HOST.alive(handle.process()):
        return False
    try:
        return session(5.0).get(handle.health_url or handle.base_url + "/health").status_code == 200
    except requests.RequestException:
        return False


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host
