"""Start a server on its host, wait until it really serves, read what it
runs with, stop it. Every process and every file goes through the `Host`.

Readiness is the engine's health signal (the adapter's `health_url`), then
one real short completion, so "ready" means it answers.
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable

import requests

from specdsl.hosts import Cancelled, Host, HostError
from specdsl.hosts.http import session
from specdsl.model.config import Server
from specdsl.provision import EnvInfo
from specdsl.servers import caches
from specdsl.servers.args import asked_config
from specdsl.servers.base import LOG_TAIL_LINES, LaunchError, ServerHandle
from specdsl.servers.logscan import scan_log

_POLL_S = 0.5
_COMPLETION_TIMEOUT_S = 120.0
_MAX_LOG_BYTES = 64 * 1024 * 1024
_DEFAULT_BIND = "127.0.0.1"


def _adapter(engine: str):
    from specdsl.servers.adapters import adapter_for

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
    on_started: Callable[[ServerHandle], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> ServerHandle:
    """Start `server` from environment `env` on `host` and return once it is ready.

    The server runs in its own process group, logging to `run_dir/server.log`
    on the host (a previous one becomes `server.log.1`), on `server.port`
    (a `LaunchError` when that port is busy) or a free port. On any failure
    the group is stopped before the `LaunchError` (or `hosts.Cancelled`,
    when `stop` is set) is raised: no process is left behind.

    A server whose log says its port was taken while it started (`port_taken`)
    fails at once, quoting that line; on a port specdsl chose (nothing was
    measured yet) it is launched once more on a new one, which `progress`
    and `warn` say.

    `on_started(handle)` is called as soon as the process exists, before
    anything waits on it (apply records the server there, so a kill of
    apply while the server starts leaves a record, not an orphan); if it
    raises, the group is stopped and the error propagates. A launch made
    again calls it again, with the new process. From then until
    `teardown`, the server is among the `live()` ones."""
    say = progress or (lambda _msg: None)
    port = server.port
    if port is not None and not host.port_free(port, bind):
        raise LaunchError(
            f"{server.engine} server {server.name!r} cannot start: port {port} on {bind} is already in use "
            "(another server may still run there; stop it or choose another `port`)"
        )
    first = None  # the port of a first launch that found it taken
    while True:
        try:
            return _launch_once(server, env, run_dir, host=host, bind=bind, port=port, say=say, stop=stop,
                                on_started=on_started)
        except PortTaken as taken:
            if first is not None:
                raise _taken_again(taken, first) from None
            if server.port is not None or not taken.retry:
                raise
            first = taken.port
            port = host.free_port(bind)
            message = f"port {first} was taken while the server started; launched again on port {port}"
            say(message)
            if warn is not None:
                warn(message)


def _taken_again(taken: PortTaken, first: int) -> PortTaken:
    """The second launch's `PortTaken`, saying there was a first."""
    again = PortTaken(f"{taken.what} (a second launch, after port {first} was taken in the first)", port=taken.port,
                      line=taken.line, retry=False, argv=taken.argv, log_path=taken.log_path, pgid=taken.pgid,
                      tail=taken.tail)
    for note in getattr(taken, "__notes__", ()):
        again.add_note(note)
    return again


def _launch_once(server: Server, env: EnvInfo, run_dir: Path, *, host: Host, bind: str, port: int | None,
                 say: Callable[[str], None], stop: threading.Event | None,
                 on_started: Callable[[ServerHandle], None] | None) -> ServerHandle:
    """One start of `server` (on `port`, else a free port), up to ready."""
    adapter = _adapter(server.engine)
    run_dir = Path(run_dir)
    host.mkdir(run_dir)
    log_path = run_dir / "server.log"
    if host.exists(log_path):
        # Effective config reads the whole log: a relaunch starts a fresh one.
        host.write_text(run_dir / "server.log.1", host.read_text(log_path))
        host.remove_tree(log_path)
    if port is None:
        port = host.free_port(bind)
    here, here_port = host.reach(port, bind)
    base_url = f"http://{_url_host(here)}:{here_port}"
    try:
        argv = adapter.argv(server, env, bind, port, host)
    except ValueError as exc:
        raise LaunchError(str(exc)) from None
    _, version = adapter.distribution(env)
    cold = caches.prepare(host, env)
    proc_env = {
        # the JIT caches of this host and stack, unless the stack or the server points them elsewhere
        **caches.cache_env(env, set(env.env) | {k for k, _ in server.env}),
        **env.env,
        **{k: str(v) for k, v in server.env},
        "VIRTUAL_ENV": env.path,
        "PATH": f"{Path(env.python).parent}:{host.getenv('PATH') or '/usr/bin:/bin'}",
        "PYTHONUNBUFFERED": "1",  # log lines arrive as they happen: readiness and log facts read them
    }
    say(f"starting {server.engine} server {server.name} on port {port}")
    go = run_dir / ".go"
    started = argv
    if on_started is not None:
        # The server is held at a gate until `on_started` (apply recording
        # it) returns: one that nothing has recorded never runs. The gate
        # (a script in the run folder, so the log's first line stays one
        # line ending in the server's own argv) execs the server in place
        # (same pid, same group) once `.go` exists, and exits if apply dies
        # first (its parent changes) or never opens it.
        host.remove_tree(go)
        gate = run_dir / "gate.py"
        host.write_text(gate, _GATE)
        parent = os.getpid() if host.key == "local" else 0  # elsewhere: whoever started it there
        started = [env.python, str(gate), str(go), str(parent), str(_GATE_TIMEOUT_S), *argv]
    try:
        proc = host.start(started, log_path=log_path, env=proc_env)
    except HostError as exc:
        raise LaunchError(f"{server.engine} server {server.name!r} could not start: {exc}", argv=argv, log_path=str(log_path),
                          tail=host.tail(log_path, LOG_TAIL_LINES)) from None
    handle = ServerHandle(
        pid=proc.pid, pgid=proc.pgid, port=port, bind=bind, base_url=base_url, log_path=str(log_path),
        argv=tuple(argv), engine=server.engine, model=server.model, health_url=adapter.health_url(server, base_url),
        version=version, jit_cache=caches.cache_key(host, env), cache_cold=cold,
    )
    track(handle, host)
    try:
        if on_started is not None:
            on_started(handle)
            host.write_text(go, "")
        _wait_ready(server, handle, host, say, stop)
    except BaseException as exc:
        try:
            host.stop(handle.process(), grace_s=0 if hurrying() else 5)
            untrack(handle, host)
        except HostError as stuck:
            exc.add_note(f"and stopping it failed: {stuck}")  # the one case where processes are left
            if isinstance(exc, PortTaken):
                exc.retry = False  # not while its processes may still run
        raise
    caches.mark(host, env)  # its kernels are in the folder now: the next launch of this stack here is warm
    say(f"{server.engine} server {server.name} ready at {base_url}")
    return handle


_GATE_TIMEOUT_S = 120
_GATE = (
    "import os, sys, time\n"
    "go, parent, limit, argv = sys.argv[1], int(sys.argv[2]) or os.getppid(), float(sys.argv[3]), sys.argv[4:]\n"
    "deadline = time.monotonic() + limit\n"
    "while not os.path.exists(go):\n"
    "    if os.getppid() != parent or time.monotonic() > deadline:\n"
    "        sys.exit(75)  # apply is gone (or never recorded it): the server never runs\n"
    "    time.sleep(0.01)\n"
    "os.execvp(argv[0], argv)\n"
)


def _failure(what: str, handle: ServerHandle, host: Host, *, cause: bool = False) -> LaunchError:
    """`cause`: the server died; its log's last exception line (read from
    the last `_CAUSE_LINES` lines) is quoted in the summary, since the 30
    lines of the tail are often the shutdown that followed it (SGLang: a
    scheduler's `ImportError: Can not import FA3 in sgl_kernel. ...`, then
    the parent's sigquit and cleanup lines)."""
    tail = host.tail(Path(handle.log_path), LOG_TAIL_LINES)
    if cause:
        found = log_cause(host.tail(Path(handle.log_path), _CAUSE_LINES))
        if found:
            what = f"{what}: {found}"
    return LaunchError(what, argv=handle.argv, log_path=handle.log_path, pgid=handle.pgid, tail=tail)


_CAUSE_LINES = 400
# a log line's prefix: SGLang's `[2026-12-02 10:00:00 TP0] `, vLLM's process
# tag `(APIServer pid=4712) ` or `(EngineCore_DP0 pid=4830) `, or an indent
_LOG_PREFIX = re.compile(r"^(?:\[[^\]]*\]|\([\w.-]+ pid=\d+\))?\s*")
# `ImportError: ...`, `torch.OutOfMemoryError: ...`, `RuntimeError: ...`
_EXCEPTION_LINE = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt)):(?:\s+(.*))?$")
# a last exception that only points at an earlier one (vLLM's API server:
# `RuntimeError: Engine core initialization failed. See root cause above.`)
_POINTS_UP = re.compile(r"root cause above|see above", re.IGNORECASE)


def log_cause(text: str) -> str | None:
    """What killed a server, from its log: the last `SomethingError: message`
    line (or a line saying a bind failed: `_BIND_FAILED`) without its log
    prefix (the message read from the lines below when it starts there, as
    multiprocessing's errors do), or the one before it when the last only
    says the cause is above; None when there is none."""
    lines = [_LOG_PREFIX.sub("", line.rstrip(), count=1) for line in text.splitlines()]
    causes = []
    for i, line in enumerate(lines):
        m = _EXCEPTION_LINE.match(line)
        if not m:
            if _BIND_FAILED.search(line):
                causes.append(line.strip())
            continue
        message = (m[2] or "").strip()
        if not message:
            below = []
            for after in lines[i + 1:i + 8]:
                if not after.strip():
                    if below:
                        break
                    continue
                below.append(after.strip())
            message = " ".join(below)
        if message:
            causes.append(f"{m[1]}: {message}")
    while len(causes) > 1 and _POINTS_UP.search(causes[-1]):
        causes.pop()
    found = causes[-1] if causes else None
    if found and len(found) > 300:
        found = found[:297] + "..."
    return found


# A server that cannot listen where it must, in the words of every engine
# (they all bind through Python, so one list serves them all): asyncio's
# bind error as uvicorn logs it (SGLang, transformers serve, vLLM):
# `ERROR:    [Errno 98] error while attempting to bind on address
# ('127.0.0.1', 35069): address already in use` (SGLang 0.5.17 then hangs
# in its shutdown: waiting for its ready timeout would learn nothing more);
# Python's own `OSError: [Errno 98] Address already in use` (a socket bound
# by hand, as vLLM's API server does); and any exception saying `address
# already in use` (ZMQ, torch.distributed's store: those name another
# port, see `_port_failure`). Errno 98 on Linux, 48 on macOS.
_BIND_FAILED = re.compile(r"\[Errno (?:98|48)\] error while attempting to bind on address "
                          r"\((?:'[^']*'|[^,()]*), (\d+)(?:, \d+, \d+)?\): address already in use", re.IGNORECASE)
_IN_USE = re.compile(r"\[Errno (?:98|48)\] Address already in use"
                     r"|^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception):.*\baddress already in use\b", re.IGNORECASE)
# the port such a line names: `port: 29500` (torch), `tcp://127.0.0.1:5555` (ZMQ), `('::1', 8000` (asyncio)
_NAMED_PORT = re.compile(r"\bport[\s:=]+(\d+)|://[^\s/'\"]*:(\d+)|\(\s*'[^']*',\s*(\d+)", re.IGNORECASE)
_LOG_CHECK_S = 1.0  # how often a starting server's log is read for a fatal line


def port_taken(text: str) -> tuple[str, int | None] | None:
    """The last line of a server log saying an address it binds was in use
    (without its log prefix), and the port that line names (None: it names
    none, as Python's bare `OSError: [Errno 98] Address already in use`);
    None when no line says so. The log's `$ command` lines are not the
    server's words (its argv may hold anything)."""
    found = None
    for raw in text.splitlines():
        if raw.startswith("$ "):
            continue
        line = _LOG_PREFIX.sub("", raw.rstrip(), count=1).strip()
        bound = _BIND_FAILED.search(line)
        if bound:
            found = (line, int(bound[1]))
        elif _IN_USE.search(line):
            named = _NAMED_PORT.search(line)
            found = (line, int(next(g for g in named.groups() if g)) if named else None)
    return found


class PortTaken(LaunchError):
    """A server's log says an address it binds was in use (`line`, quoted
    in the message). `port`: the port of the line, the server's own when it
    names none; `retry`: whether a launch on a new port may follow (the line
    is about the server's own port and its process group is gone)."""

    def __init__(self, what: str, *, port: int, line: str, retry: bool, **kw) -> None:
        super().__init__(what, **kw)
        self.port = port
        self.line = line
        self.retry = retry


def _port_failure(what: str, handle: ServerHandle, host: Host, *, exited: bool = False) -> PortTaken | None:
    """The `PortTaken` of a server whose log says a bind failed, else None.
    `what` names the server; `exited`: it is gone (said before the cause).
    While it runs, only a line about its own port counts: one naming
    another (a store, a side channel) may be a failure it survives."""
    taken = port_taken(host.tail(Path(handle.log_path), _CAUSE_LINES))
    if taken is None:
        return None
    line, named = taken
    ours = named in (None, handle.port)
    if not ours and not exited:
        return None
    if exited:
        code = host.returncode(handle.process())
        what = f"{what} exited{f' with code {code}' if code is not None else ''} during startup"
    elif ours:
        what = f"{what} could not listen on port {handle.port} (taken while it started)"
    else:
        what = f"{what} could not bind an address it needs"
    return PortTaken(f"{what}: {line}", port=handle.port if ours else named, line=line, retry=ours,
                     argv=handle.argv, log_path=handle.log_path, pgid=handle.pgid,
                     tail=host.tail(Path(handle.log_path), LOG_TAIL_LINES))


def _wait_ready(server: Server, handle: ServerHandle, host: Host, say, stop) -> None:
    started = time.monotonic()
    deadline = started + server.ready_timeout
    http = session(5.0)
    proc = handle.process()
    what = f"{server.engine} server {server.name!r}"
    last_note = last_check = started
    while True:
        if not host.alive(proc):
            code = host.returncode(proc)
            status = f"with code {code}" if code is not None else ""
            raise (_port_failure(what, handle, host, exited=True)
                   or _failure(f"{what} exited {status} during startup".replace("  ", " "), handle, host, cause=True))
        try:
            if http.get(handle.health_url).status_code == 200:
                break
        except requests.RequestException:
            pass
        if time.monotonic() - last_check >= _LOG_CHECK_S:
            last_check = time.monotonic()
            fatal = _port_failure(what, handle, host)
            if fatal is not None:
                raise fatal
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
    fatal = _port_failure(what, handle, host)
    if fatal is not None:  # what answered is another process, on the port this one could not take
        raise fatal
    remaining = max(5.0, min(_COMPLETION_TIMEOUT_S, deadline - time.monotonic()))
    body = {"model": server.model, "prompt": "Hello", "max_tokens": 4, "temperature": 0}
    try:
        resp = http.post(handle.base_url + "/v1/completions", json=body, timeout=remaining)
    except requests.RequestException as exc:
        raise _failure(f"{what} is up but a first completion failed: {exc}", handle, host) from None
    if resp.status_code != 200:
        raise _failure(f"{what} is up but a first completion failed: HTTP {resp.status_code} {resp.text[:300]}", handle, host)


def teardown(handle: ServerHandle, host: Host, grace_s: float = 10) -> None:
    """TERM the server's process group, wait `grace_s` (none once `hurry`
    was called), KILL what is left, and confirm nothing of the group remains
    (`hosts.HostError` if it does)."""
    host.stop(handle.process(), grace_s=0 if hurrying() else grace_s)
    untrack(handle, host)


# -- the servers this process started and has not stopped -------------------
# What a second signal kills at once (`hurry`). Guarded by a lock that only
# ordinary threads take, never a signal handler: `hurry` is called from a
# thread the handler starts.
_live: dict[tuple[int, int], tuple[Host, ServerHandle]] = {}
_live_lock = threading.Lock()
_hurry = threading.Event()


def track(handle: ServerHandle, host: Host) -> None:
    """Count `handle` (started on `host`) among the servers to stop."""
    with _live_lock:
        _live[(id(host), handle.pgid)] = (host, handle)


def untrack(handle: ServerHandle, host: Host) -> None:
    with _live_lock:
        _live.pop((id(host), handle.pgid), None)


def live() -> list[tuple[Host, ServerHandle]]:
    """The servers started (or reused) by this process and not yet stopped."""
    with _live_lock:
        return list(_live.values())


def hurrying() -> bool:
    return _hurry.is_set()


def hurry() -> list[str]:
    """Stop waiting: KILL the process group of every live server now (and
    every later teardown kills without a grace period). Returns what could
    not be stopped, one line each. Call it from a thread, not a signal
    handler (it takes locks)."""
    _hurry.set()
    stuck = []
    for host, handle in live():
        try:
            host.stop(handle.process(), grace_s=0)
            untrack(handle, host)
        except HostError as exc:
            stuck.append(f"pid {handle.pid} (process group {handle.pgid}): {exc}")
    return stuck


def reset_hurry() -> None:
    """Back to graceful stops (a new apply in the same process)."""
    _hurry.clear()


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
