"""launch: the server, started on its host and ready, or the one already up.

The server is recorded in state (`starting`: pid, process group, port,
argv, spec) the moment its process exists, before anything waits on it,
and `ready` once it answered; a server that fails to start is forgotten
only once its process group is confirmed gone. A record of this step left
by an earlier apply (killed, or its server frozen) is stopped first.
"""

from __future__ import annotations

import time

import attrs

from specdsl import secrets, servers
from specdsl.apply import gpus
from specdsl.apply.context import StepContext, StepFailed, Walk
from specdsl.apply.outcome import Outcome
from specdsl.apply.refresh import address_now
from specdsl.apply.steps.common import cache_facts, completed, localize, planned_reuse
from specdsl.hosts import HostError, ProcessHandle, host_key
from specdsl.servers import lifecycle
from specdsl.state import ServerRecord, utc_now

LAUNCH_S = "launch_s"  # a launch run's metric: seconds from the server's start to ready
STALE_GRACE_S = 3.0  # a recorded server not answering: TERM, this long, KILL (a frozen one ignores TERM)


class Launch:
    def session_key(self, walk: Walk, step) -> str | None:
        """A server in use holds its physical host's GPUs (not the host
        block's name: two blocks meaning one machine share its GPUs)."""
        return f"{host_key(step.payload['host'])}/gpus" if walk.serves(step.addr) else None

    def session_members(self, walk: Walk, addr: str) -> list[str]:
        teardown = walk.teardown_of(addr)
        return walk.benchmarks_of(addr) + ([teardown] if teardown else [])

    def run(self, ctx: StepContext) -> Outcome:
        walk, step = ctx.walk, ctx.step
        if walk.running(ctx.addr):
            record = ctx.writer.state.server(step.identity)
            try:
                url = address_now(ctx.host, record)  # over ssh: this apply's forward, not the recorded one
            except HostError as exc:
                raise StepFailed(f"the server recorded running (pid {record.pid}) cannot be reached: {exc}") from None
            handle = handle_from_record(record, step.payload["server"], url)
            lifecycle.track(handle, ctx.host)
            with walk.mutex:
                walk.handles[ctx.addr] = handle
            return planned_reuse(ctx, f"running at {url}")
        if not walk.starts_server(ctx.addr):
            return planned_reuse(ctx)
        env = walk.envs.get(step.deps[0])
        if env is None:
            raise StepFailed(f"the environment of {step.deps[0]} was not provisioned in this apply")
        host = ctx.host
        stale = ctx.writer.state.server(step.identity)
        if stale is not None:
            ctx.begin()
            ctx.progress(f"stopping the server an earlier apply left (pid {stale.pid}, {stale.status})")
            problem = stop_recorded(ctx.writer, stale, host, grace_s=STALE_GRACE_S)
            if problem:
                raise StepFailed(problem)
        folder = ctx.new_run()
        there = host.run_folder(folder)
        server = localize(step.payload["server"], walk.spec_dir)
        server = gpus.pin(walk, ctx.addr, host, step.payload["host"], server, ctx.stop)  # its own GPUs, checked idle
        recorded: list[ServerRecord] = []

        def on_started(handle) -> None:
            # before anything waits on the server: a kill of apply from here on leaves a record
            record = ServerRecord(
                identity=step.identity, addr=step.addr, host=host.key, pid=handle.pid, pgid=handle.pgid,
                port=handle.port, base_url=handle.base_url, log=handle.log_path, started=utc_now(),
                status="starting", argv=tuple(secrets.redact_argv(handle.argv, dict(server.env))),
                spec=walk.plan.spec,
            )
            ctx.writer.change(lambda s: s.with_server(record), f"{step.addr} (server starting, pid {handle.pid})")
            recorded.append(record)
            if ctx.writer.failed:  # a server state does not know of must not run: stop it now
                raise StepFailed(f"the server (pid {handle.pid}) could not be recorded: {ctx.writer.failure_summary()}; "
                                 "it was stopped")

        begun = time.monotonic()
        try:
            handle = servers.launch(server, env, there, host=host, progress=ctx.progress, stop=ctx.stop,
                                    on_started=on_started, warn=lambda w: walk.result.warn(f"{ctx.addr}: {w}"))
        except BaseException as exc:
            if recorded:
                _forget_if_gone(ctx.writer, recorded[-1], host)  # the last launch's (a port taken: two)
            if isinstance(exc, servers.LaunchError):
                host.collect(there, folder)
                raise StepFailed(str(exc), str(folder / "server.log")) from None
            raise
        with walk.mutex:
            walk.handles[ctx.addr] = handle
            walk.result.launches += 1
        # seconds from its start to ready: what a plan estimates this server's launches from (plan.cost)
        launch_s = time.monotonic() - begun
        record = attrs.evolve(recorded[-1], status="ready")
        run = ctx.writer.run_record(step, ctx.run_id, folder, ctx.started, "completed", argv=handle.argv,
                                    effective=gpus.visible(walk, ctx.addr, step.payload["host"]) | cache_facts(handle),
                                    metrics={LAUNCH_S: launch_s})
        ctx.writer.step_done(step, run, lambda s: s.with_server(record))
        return completed(ctx, f"ready at {handle.base_url}", handle.log_path)


def _forget_if_gone(writer, record: ServerRecord, host) -> None:
    """Drop the record of a server that failed to start, only once nothing
    of its process group is left (else it stays, for a re-apply or
    `specdsl destroy` to stop)."""
    try:
        left = host.group_pids(record.pgid)
    except HostError:
        return
    if not left and writer.state.server(record.identity) == record:
        writer.change(lambda s: s.without_server(record.identity), f"{record.addr} (server gone)")


def record_process(record: ServerRecord) -> ProcessHandle:
    return ProcessHandle(record.pid, record.pgid, record.argv, record.log)


def stop_recorded(writer, record: ServerRecord, host, *, grace_s: float = 10.0) -> str:
    """Stop the recorded server `record` on `host` (TERM its group, `grace_s`,
    KILL) and drop its record once its group is gone. Returns "" when done,
    else what is wrong (the record is then kept: never dropped while its
    process lives)."""
    try:
        host.stop(record_process(record), grace_s=0 if lifecycle.hurrying() else grace_s)
    except HostError as exc:
        return (f"{record.addr}: the server recorded running (pid {record.pid}, process group {record.pgid}) "
                f"could not be stopped: {exc}; its record is kept: stop it by hand "
                f"(`kill -KILL -{record.pgid}` on {record.host}), then re-run")
    if writer.state.server(record.identity) is not None:
        writer.change(lambda s: s.without_server(record.identity), f"{record.addr} (stopped)")
    return ""


def handle_from_record(record: ServerRecord, server, base_url: str | None = None) -> servers.ServerHandle:
    """The handle of a server a previous apply started and left running,
    reached at `base_url` (default: the recorded address; on a remote host
    the caller passes this apply's forward, `refresh.address_now`)."""
    url = base_url or record.base_url
    return servers.ServerHandle(
        pid=record.pid, pgid=record.pgid, port=record.port, bind="127.0.0.1", base_url=url,
        log_path=record.log, argv=record.argv, engine=server.engine, model=server.model,
        health_url=servers.health_url(server, url),
    )


def stop_server(walk: Walk, launch: str, handle, host, *, quiet: bool = False) -> None:
    """Stop a server of this walk and forget it in state, once it is gone.
    A server that could not be stopped keeps its record and a warning says
    so (`quiet` is kept for callers; nothing it hid may be hidden now)."""
    try:
        servers.teardown(handle, host)
    except Exception as exc:  # teardown must go on for the other servers
        walk.result.warn(f"{launch}: the server (pid {handle.pid}, process group {handle.pgid}) could not be "
                         f"stopped: {exc}; it stays recorded: stop it with `specdsl destroy`")
        return
    with walk.mutex:
        walk.handles.pop(launch, None)
    identity = walk.graph.steps[launch].identity
    if walk.writer.state.server(identity) is not None:
        walk.writer.change(lambda s: s.without_server(identity), f"{launch} (server stopped)")
