"""teardown: stop a server once every benchmark that needs it has finished."""

from __future__ import annotations

from specdsl.apply.context import StepContext
from specdsl.apply.outcome import Outcome
from specdsl.apply.server_watch import already_exited
from specdsl.apply.steps.common import completed, planned_reuse
from specdsl.apply.steps.launch import handle_from_record, stop_server
from specdsl.plan.model import Action


class Teardown:
    def run(self, ctx: StepContext) -> Outcome:
        walk = ctx.walk
        launch = ctx.step.payload["launch"]
        if walk.action(ctx.addr) is not Action.DESTROY:
            return planned_reuse(ctx)
        handle = walk.handles.get(launch)
        if handle is None:
            record = walk.writer.state.server(walk.graph.steps[launch].identity)
            if record is None:
                return planned_reuse(ctx, "nothing running")
            handle = handle_from_record(record, walk.graph.steps[launch].payload["server"])
        ctx.begin()
        host = walk.host_of(walk.graph.steps[launch])
        gone = already_exited(handle, host)  # a server that died is not "stopped"
        stop_server(walk, launch, handle, host)
        return completed(ctx, gone or "server stopped")
