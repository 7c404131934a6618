"""Start a server on its host, wait until it really serves, read what it
runs with, stop it. Every process and every file goes through the `Host`.

Readiness is the engine's health signal (the adapter's `health_url`), then
one real short completion, so "ready" means it answers.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

import requests

from specdsl.hosts import Cancelled, Host, HostError
from specdsl.hosts.http import session
from specdsl.model.config import Server
from specdsl.provision import EnvInfo
from specdsl.servers.args import asked_config
from specdsl.servers.base import LOG_TAIL_LINES, LaunchError, ServerHandle
from specdsl.servers.logscan import scan_log

_POLL_S = 0.5
_COMPLETION_TIMEOUT_S = 120.0
_MAX_LOG_BYTES = 64 * 1024 * 1024
_DEFAULT_BIND = "127.0.0.1"


def _adapter(engine: str):
    from specdsl.servers import adapter_for

    return adapter_for(engine)


def health_url(server: Server, base_url: str) -> str:
    """The URL whose 200 means the server finished starting."""
    return _adapter(server.engine).health_url(server, base_url)


def launch(
    server: Server,
    env: EnvInfo,
    run_dir: Path,
    *,
    host: Host,
    bind: str = _DEFAULT_BIND,
    progress: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
) -> ServerHandle:
    """Start `server` from environment `env` on `host` and return once it is ready.

    The server runs in its own process group, logging to `run_dir/server.log`
    on the host (a previous one becomes `server.log.1`), on `server.port`
    (a `LaunchError` when that port is busy) or a free port. On any failure
    the group is stopped before the `LaunchError` (or `hosts.Cancelled`,
    when `stop` is set) is raised: no process is left behind."""
    adapter = _adapter(server.engine)
    say = progress or (lambda _msg: None)
    run_dir = Path(run_dir)
    host.mkdir(run_dir)
    log_path = run_dir / "server.log"
    if host.exists(log_path):
        # Effective config reads the whole log: a relaunch starts a fresh one.
        host.write_text(run_dir / "server.log.1", host.read_text(log_path))
        host.remove_tree(log_path)
    if server.port is not None:
        if not host.port_free(server.port, bind):
            raise LaunchError(
                f"{server.engine} server {server.name!r} cannot start: port {server.port} on {bind} is already in use "
                "(another server may still run there; stop it or choose another `port`)"
            )
        port = server.port
    else:
        port = host.free_port(bind)
    here, here_port = host.reach(port, bind)
    base_url = f"http://{_url_host(here)}:{here_port}"
    try:
        argv = adapter.argv(server, env, bind, port, host)
    except ValueError as exc:
        raise LaunchError(str(exc)) from None
    _, version = adapter.distribution(env)
    proc_env = {
        **env.env,
        **{k: str(v) for k, v in server.env},
        "VIRTUAL_ENV": env.path,
        "PATH": f"{Path(env.python).parent}:{host.getenv('PATH') or '/usr/bin:/bin'}",
        "PYTHONUNBUFFERED": "1",  # log lines arrive as they happen: readiness and log facts read them
    }
    say(f"starting {server.engine} server {server.name} on port {port}")
    try:
        proc = host.start(argv, log_path=log_path, env=proc_env)
    except HostError as exc:
        raise LaunchError(f"{server.engine} server {server.name!r} could not start: {exc}", argv=argv, log_path=str(log_path),
                          tail=host.tail(log_path, LOG_TAIL_LINES)) from None
    handle = ServerHandle(
        pid=proc.pid, pgid=proc.pgid, port=port, bind=bind, base_url=base_url, log_path=str(log_path),
        argv=tuple(argv), engine=server.engine, model=server.model, health_url=adapter.health_url(server, base_url),
        version=version,
    )
    try:
        _wait_ready(server, handle, host, say, stop)
    except BaseException as exc:
        try:
            host.stop(handle.process(), grace_s=5)
        except HostError as stuck:
            exc.add_note(f"and stopping it failed: {stuck}")  # the one case where processes are left
        raise
    say(f"{server.engine} server {server.name} ready at {base_url}")
    return handle


def _failure(what: str, handle: ServerHandle, host: Host) -> LaunchError:
    return LaunchError(what, argv=handle.argv, log_path=handle.log_path, pgid=handle.pgid,
                       tail=host.tail(Path(handle.log_path), LOG_TAIL_LINES))


def _wait_ready(server: Server, handle: ServerHandle, host: Host, say, stop) -> None:
    started = time.monotonic()
    deadline = started + server.ready_timeout
    http = session(5.0)
    proc = handle.process()
    what = f"{server.engine} server {server.name!r}"
    last_note = started
    while True:
        if not host.alive(proc):
            code = host.returncode(proc)
            status = f"with code {code}" if code is not None else ""
            raise _failure(f"{what} exited {status} during startup".replace("  ", " "), handle, host)
        try:
            if http.get(handle.health_url).status_code == 200:
                break
        except requests.RequestException:
            pass
        if stop is not None and stop.is_set():
            raise Cancelled(f"cancelled while {what} was starting")
        now = time.monotonic()
        if now >= deadline:
            raise _failure(f"{what} was not ready within {server.ready_timeout:g}s ({handle.health_url} never answered 200)",
                           handle, host)
        if now - last_note >= 15:
            say(f"waiting for {server.name} ({now - started:.0f}s)")
            last_note = now
        time.sleep(_POLL_S)
    remaining = max(5.0, min(_COMPLETION_TIMEOUT_S, deadline - time.monotonic()))
    body = {"model": server.model, "prompt": "Hello", "max_tokens": 4, "temperature": 0}
    try:
        resp = http.post(handle.base_url + "/v1/completions", json=body, timeout=remaining)
    except requests.RequestException as exc:
        raise _failure(f"{what} is up but a first completion failed: {exc}", handle, host) from None
    if resp.status_code != 200:
        raise _failure(f"{what} is up but a first completion failed: HTTP {resp.status_code} {resp.text[:300]}", handle, host)


def teardown(handle: ServerHandle, host: Host, grace_s: float = 10) -> None:
    """TERM the server's process group, wait `grace_s`, KILL what is left,
    and confirm nothing of the group remains (`hosts.HostError` if it does)."""
    host.stop(handle.process(), grace_s=grace_s)


def answers(handle: ServerHandle, host: Host) -> bool:
    """True while the server's leader runs and its health URL answers 200."""
    if not host.alive(handle.process()):
        return False
    try:
        return session(5.0).get(handle.health_url or handle.base_url + "/health").status_code == 200
    except requests.RequestException:
        return False


def effective_config(server: Server, handle: ServerHandle, host: Host) -> tuple[dict[str, Any], list[str]]:
    """(effective config, warnings) of a running (or just stopped) server.

    Layers, later ones winning: the spec's args under their dest names (what
    we asked for); facts read from the log with the engine's patterns (what
    the server resolved on its own); the engine's own report (SGLang's
    `/server_info`, vLLM's non-default args, transformers' `CB:` line: call
    it after traffic). Keys are argparse dest names, plus `version`."""
    adapter = _adapter(server.engine)
    try:
        log = host.read_text(Path(handle.log_path), max_bytes=_MAX_LOG_BYTES)
    except FileNotFoundError:
        log = ""
    config = asked_config(server.engine, server.args)
    facts, warnings = scan_log(adapter, log, asked=config, version=handle.version)
    config.update(facts)
    config.update(adapter.report(server, handle, log, config))
    config.setdefault("version", handle.version)
    if config["version"] is None:
        del config["version"]
    return config, warnings


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host
