"""launch: the server, started on its host and ready, or the one already up."""

from __future__ import annotations

from specdsl import servers
from specdsl.apply import gpus
from specdsl.apply.context import StepContext, StepFailed, Walk
from specdsl.apply.outcome import Outcome
from specdsl.apply.steps.common import completed, localize, planned_reuse
from specdsl.hosts import host_key
from specdsl.state import ServerRecord, utc_now


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
            handle = handle_from_record(record, step.payload["server"])
            with walk.mutex:
                walk.handles[ctx.addr] = handle
            return planned_reuse(ctx, f"running at {record.base_url}")
        if not walk.starts_server(ctx.addr):
            return planned_reuse(ctx)
        env = walk.envs.get(step.deps[0])
        if env is None:
            raise StepFailed(f"the environment of {step.deps[0]} was not provisioned in this apply")
        host = ctx.host
        folder = ctx.new_run()
        there = host.run_folder(folder)
        server = localize(step.payload["server"], walk.spec_dir)
        server = gpus.pin(walk, ctx.addr, host, step.payload["host"], server, ctx.stop)  # its own GPUs, checked idle
        try:
            handle = servers.launch(server, env, there, host=host, progress=ctx.progress, stop=ctx.stop)
        except servers.LaunchError as exc:
            host.collect(there, folder)
            raise StepFailed(str(exc), str(folder / "server.log")) from None
        with walk.mutex:
            walk.handles[ctx.addr] = handle
            walk.result.launches += 1
        record = ServerRecord(
            identity=step.identity, addr=step.addr, host=host.key, pid=handle.pid, pgid=handle.pgid, port=handle.port,
            base_url=handle.base_url, log=handle.log_path, started=utc_now(),
        )
        run = ctx.writer.run_record(step, ctx.run_id, folder, ctx.started, "completed", argv=handle.argv,
                                    effective=gpus.visible(walk, ctx.addr, step.payload["host"]))
        ctx.writer.step_done(step, run, lambda s: s.with_server(record))
        return completed(ctx, f"ready at {handle.base_url}", handle.log_path)


def handle_from_record(record: ServerRecord, server) -> servers.ServerHandle:
    """The handle of a server a previous apply started and left running."""
    return servers.ServerHandle(
        pid=record.pid, pgid=record.pgid, port=record.port, bind="127.0.0.1", base_url=record.base_url,
        log_path=record.log, argv=(), engine=server.engine, model=server.model,
        health_url=servers.health_url(server, record.base_url),
    )


def stop_server(walk: Walk, launch: str, handle, host, *, quiet: bool = False) -> None:
    """Stop a server of this walk and forget it in state."""
    try:
        servers.teardown(handle, host)
    except Exception as exc:  # teardown must go on for the other servers
        if not quiet:
            walk.result.warn(f"{launch}: teardown: {exc}")
    with walk.mutex:
        walk.handles.pop(launch, None)
    identity = walk.graph.steps[launch].identity
    if walk.writer.state.server(identity) is not None:
        walk.writer.change(lambda s: s.without_server(identity))
