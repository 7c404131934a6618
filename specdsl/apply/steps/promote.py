"""promote: move a track's baseline to this experiment's result and write
the stack lock, once, when its verdicts are new.

A candidate promotes when every check of the experiment passed, at least
one of them gating (decided from measurements with an interval), and its evidence (the
benchmark result and the verdict runs) is new to the track's latest
promotion. Several experiments may name one track (an upgrade that failed
and its fix): the promote steps of a track come after the checks of every
other one (`order_rivals`), so each knows what the others' checks said.
When more than one of them passes with new evidence, none is promoted:
each is skipped (`several_passed`) and a warning names them, so the choice
stays with the user (`specdsl apply SPEC --target NAME`). When exactly one
passes it is promoted.
"""

from __future__ import annotations

import os
import threading

import attrs

from specdsl.apply.context import StepContext
from specdsl.apply.outcome import Outcome, Reason, Status
from specdsl.apply.state_writer import write_stack_lock
from specdsl.apply.steps.common import completed, planned_reuse
from specdsl.graph.build import Graph
from specdsl.plan.diff import HELD
from specdsl.plan.model import Action
from specdsl.state.promotions import Index, latest_verdict
from specdsl.verdict.decision import Status as VerdictStatus

# Promotions are decided one at a time: a candidate reads what its rivals'
# checks said and whether one of them was promoted.
_DECIDING = threading.Lock()


@attrs.frozen
class Candidate:
    """What one promote step would do in this walk."""

    addr: str
    experiment: str
    track: str
    ok: bool  # every check passed, one of them gating, and the evidence is recorded
    why: str = ""  # why not (ok False), or why nothing is new (seen True)
    seen: bool = False  # the track's latest promotion saw this evidence: nothing to do
    run: object = None  # the benchmark's result (RunRecord)
    verdicts: tuple = ()  # the verdict runs, in check order
    names: tuple[str, ...] = ()  # the assertions' names, in check order

    @property
    def promotes(self) -> bool:
        return self.ok and not self.seen


def candidate(walk, state, addr: str) -> Candidate:
    """Judge promote step `addr` on this walk's verdicts and the state now."""
    graph = walk.graph
    step = graph.steps[addr]
    exp = step.payload["experiment"]
    track = step.content["track"]
    me = Candidate(addr, exp.name, track, False)
    check_addrs = [d for d in step.deps if graph.steps[d].kind == "check"]
    if not check_addrs:
        return attrs.evolve(me, why=f"not promoted: {exp.name} has no gating assertion")
    bad = [d for d in check_addrs if walk.verdicts.get(d) is None or walk.verdicts[d].status is not VerdictStatus.PASS]
    if bad:
        return attrs.evolve(me, why=f"not promoted: {', '.join(bad)} did not pass")
    if not any(walk.verdicts[d].gating for d in check_addrs):
        return attrs.evolve(me, why="not promoted: no gating assertion passed (every check was decided exactly)")
    run = state.result(graph.steps[graph.by_experiment[exp.name]["benchmark"]].identity)
    verdicts = tuple(latest_verdict(state, d, graph.steps[d].identity) for d in check_addrs)
    if run is None or any(v is None for v in verdicts):
        return attrs.evolve(me, why="not promoted: its result or a verdict is not recorded")
    names = tuple(graph.steps[d].payload["assertion"].name for d in check_addrs)
    me = attrs.evolve(me, ok=True, run=run, verdicts=verdicts, names=names)
    latest = state.latest_promotion(track)
    if latest is not None and latest.run == run.id and latest.experiment == exp.name:
        return attrs.evolve(me, seen=True, why=f"track {track} already has this result (promoted {latest.time})")
    if not Index(state).new_to([run.id, *(v.id for v in verdicts)], latest):
        return attrs.evolve(me, seen=True, why=f"track {track}'s latest promotion saw these verdicts")
    return me


def rivals(walk, addr: str, actions=tuple(Action)) -> list[str]:
    """The other promote steps of `addr`'s track in this plan (whose action
    is one of `actions`). Whatever the plan said of a rival, its checks ran
    in this walk: one whose verdicts passed anew competes."""
    graph = walk.graph
    track = graph.steps[addr].content["track"]
    return sorted(a for a in walk.plan_addrs
                  if a != addr and graph.steps[a].kind == "promote" and graph.steps[a].content["track"] == track
                  and walk.action(a) in actions)


def held_warning(track: str, experiments: list[str], spec: str) -> str:
    names = ", ".join(sorted(experiments))
    return (f"track {track}: {names} passed; none was promoted, the choice is yours: "
            f"promote one with `specdsl apply {spec} --target NAME` (or drop `promote` from the others)")


class Promote:
    def run(self, ctx: StepContext) -> Outcome:
        walk, step = ctx.walk, ctx.step
        if walk.action(ctx.addr) is not Action.PROMOTE:
            change = ctx.change
            if change is not None and change.reason.startswith(HELD):  # held on recorded verdicts: say so again
                held = [a for a in rivals(walk, ctx.addr, (Action.REUSE,)) if walk.change(a).reason == change.reason]
                exps = [walk.graph.steps[a].payload["experiment"].name for a in [ctx.addr, *held]]
                walk.result.warn(held_warning(step.content["track"], exps, walk.plan.spec))
            return planned_reuse(ctx)
        with _DECIDING:
            return self._decide(ctx)

    def _decide(self, ctx: StepContext) -> Outcome:
        walk, step = ctx.walk, ctx.step
        state = ctx.writer.state
        me = candidate(walk, state, ctx.addr)
        if not me.ok:
            return Outcome(ctx.addr, step.kind, Status.SKIPPED, Reason.CHECK_NOT_PASSED, me.why)
        if me.seen:
            return Outcome(ctx.addr, step.kind, Status.REUSED, Reason.NOT_NEEDED, me.why)
        others = [c for c in (candidate(walk, state, a) for a in rivals(walk, ctx.addr)) if c.promotes]
        if others:
            exps = [me.experiment, *(c.experiment for c in others)]
            walk.result.warn(held_warning(me.track, exps, walk.plan.spec))
            return Outcome(ctx.addr, step.kind, Status.SKIPPED, Reason.SEVERAL_PASSED,
                           f"not promoted: {', '.join(sorted(exps))} passed for track {me.track}")
        exp = step.payload["experiment"]
        cells = walk.graph.by_experiment[exp.name]
        run = me.run
        prov = cells["provision"]
        # the argv of the candidate's server: its launch's run, or the paired benchmark's own run
        launch_identity = walk.graph.steps[cells["launch"]].identity if "launch" in cells else None
        argv = run.argv or next((r.argv for r in reversed(state.runs) if r.identity == launch_identity and r.argv), ())
        lock = write_stack_lock(walk.spec_dir, me.track, exp,
                                env_summary(walk.envs.get(prov), state, walk.graph.steps[prov].identity),
                                list(argv), run.id, dict(run.metrics))
        lock_text = os.path.relpath(os.path.abspath(lock), os.path.abspath(ctx.writer.state_dir))
        ctx.writer.change(lambda s: s.with_promotion(me.track, run.id, me.names, experiment=exp.name,
                                                     verdicts=[v.id for v in me.verdicts], lock=lock_text))
        return completed(ctx, f"track {me.track} -> run {run.id}; lock {os.path.relpath(lock)}")


def order_rivals(graph: Graph) -> Graph:
    """`graph`, or a copy in which each promote step of a track with
    several also runs after the checks of the others (ordering edges: a
    rival's failed check skips nothing), so it decides knowing their
    verdicts. Promote steps have no dependants, so this makes no cycle."""
    by_track: dict[str, list[str]] = {}
    for addr, st in graph.steps.items():
        if st.kind == "promote":
            by_track.setdefault(st.content["track"], []).append(addr)
    extra: dict[str, set[str]] = {}
    for addrs in by_track.values():
        for a in addrs:
            more = {d for b in addrs if b != a for d in graph.steps[b].deps if graph.steps[d].kind == "check"}
            more -= set(graph.steps[a].after) | set(graph.steps[a].deps)
            if more:
                extra[a] = more
    if not extra:
        return graph
    steps = dict(graph.steps)
    succ = {k: set(v) for k, v in graph.succ.items()}
    pred = {k: set(v) for k, v in graph.pred.items()}
    for a, more in extra.items():
        steps[a] = attrs.evolve(steps[a], after=tuple(sorted(set(steps[a].after) | more)))
        for d in more:
            succ.setdefault(d, set()).add(a)
            pred.setdefault(a, set()).add(d)
    return Graph(steps=steps, diags=list(graph.diags), by_experiment=graph.by_experiment,
                 succ={k: tuple(sorted(v)) for k, v in succ.items()}, pred={k: tuple(sorted(v)) for k, v in pred.items()})


def env_summary(info, state, identity: str) -> dict | None:
    """What the lock records of the environment: from this walk's build, or
    from state when the environment was reused (nvcc included either way)."""
    if info is not None:
        return {"python_version": info.python_version, "packages": dict(info.packages),
                "torch": {k: v for k, v in (info.torch or {}).items() if v is not None}, "nvcc": info.nvcc}
    env = state.environment(identity)
    if env is None:
        return None
    return {"python_version": env.python_version, "packages": dict(env.packages), "torch": dict(env.torch), "nvcc": env.nvcc or None}
