"""What a step handler is given: the step, the host it runs on, a run folder
on demand, the state writer, the stop event and progress; and the `Walk`,
what the steps of one apply share (environments built, servers up, verdicts).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Protocol

import attrs

from specdsl.apply.outcome import ApplyResult, Outcome, StepFailed  # StepFailed: what handlers import from here
from specdsl.apply.state_writer import StateWriter
from specdsl.graph.steps import Step
from specdsl.hosts import Host, HostRegistry
from specdsl.plan.model import Action, Change, Plan
from specdsl.state import utc_now


class Hooks(Protocol):
    """How a walk reports as it goes (the CLI draws these; tests collect them)."""

    def start(self, addr: str, kind: str) -> None: ...
    def progress(self, addr: str, message: str) -> None: ...
    def finish(self, outcome: Outcome) -> None: ...


class QuietHooks:
    """Hooks that report nothing (apply called from code)."""

    def start(self, addr: str, kind: str) -> None:
        pass

    def progress(self, addr: str, message: str) -> None:
        pass

    def finish(self, outcome: Outcome) -> None:
        pass


@attrs.define
class Walk:
    """One apply: the plan and graph it follows and what its steps share.
    Handlers read and add to it under `mutex`."""

    plan: Plan
    graph: Any
    writer: StateWriter
    registry: HostRegistry
    spec_dir: Path
    hooks: Hooks
    stop: threading.Event
    variables: dict[str, Any] = attrs.Factory(dict)
    result: ApplyResult = attrs.Factory(ApplyResult)
    envs: dict[str, Any] = attrs.Factory(dict)  # provision addr -> provision.EnvInfo
    handles: dict[str, Any] = attrs.Factory(dict)  # launch addr -> servers.ServerHandle (up now)
    verdicts: dict[str, Any] = attrs.Factory(dict)  # check addr -> specdsl.verdict.Verdict
    # GPUs (specdsl.apply.gpus): session opener addr -> the device ids the
    # scheduler gave it; machine key -> ids that servers of earlier applies hold
    gpus: dict[str, tuple[int, ...]] = attrs.Factory(dict)
    gpus_held: dict[str, frozenset] = attrs.Factory(dict)
    # machine key -> (nvidia-smi, the sampling fields it knows), or why its
    # GPUs are not sampled during runs (specdsl.apply.run_conditions)
    gpu_samplers: dict[str, Any] = attrs.Factory(dict)
    mutex: threading.Lock = attrs.Factory(threading.Lock)
    # paired benchmarks measured in shared blocks (apply/steps/paired.py):
    # the addresses a walk has started or claimed, and what a block leader
    # measured for a benchmark whose own step records it
    paired_started: set = attrs.Factory(set)
    shared_pairs: dict[str, dict] = attrs.Factory(dict)
    budget: Any = None  # what paired comparisons spent against the apply's budget (apply.budget.Ledger)
    _changes: dict[str, Change] = attrs.Factory(dict)
    _benchmarks: dict[str, list[str]] = attrs.Factory(dict)
    _teardowns: dict[str, str] = attrs.Factory(dict)

    def __attrs_post_init__(self) -> None:
        self._changes = {c.addr: c for c in self.plan.changes}
        order = {c.addr: i for i, c in enumerate(self.plan.changes)}
        for addr, step in self.graph.steps.items():
            if step.kind == "benchmark" and step.deps:  # a server already running has no launch before it
                self._benchmarks.setdefault(step.deps[0], []).append(addr)
            elif step.kind == "teardown":
                self._teardowns[step.payload["launch"]] = addr
        for benches in self._benchmarks.values():
            benches.sort(key=lambda a: order.get(a, len(order)))

    # -- what the plan says
    def change(self, addr: str) -> Change | None:
        return self._changes.get(addr)

    def action(self, addr: str) -> Action | None:
        change = self._changes.get(addr)
        return change.action if change else None

    @property
    def plan_addrs(self):
        """The addresses the plan covers (a targeted plan covers a part)."""
        return self._changes.keys()

    def benchmarks_of(self, launch: str) -> list[str]:
        return self._benchmarks.get(launch, [])

    def teardown_of(self, launch: str) -> str | None:
        return self._teardowns.get(launch)

    def starts_server(self, launch: str) -> bool:
        """Whether this walk starts the server of `launch` (a new or
        replaced server, or one whose benchmarks run and that is not up)."""
        if self.action(launch) in (Action.CREATE, Action.REPLACE):
            return True
        return self.serves(launch) and not self.running(launch)

    def serves(self, launch: str) -> bool:
        """Whether a server of `launch` is in use during this walk."""
        if self.action(launch) in (Action.CREATE, Action.REPLACE):
            return True
        return any(self.action(b) is Action.RUN for b in self.benchmarks_of(launch))

    def running(self, launch: str) -> bool:
        """A server the plan reuses as it is (recorded running and answering)."""
        step = self.graph.steps[launch]
        return self.action(launch) is Action.REUSE and self.writer.state.server(step.identity) is not None

    def provision_needed(self, addr: str) -> bool:
        users = [a for a in self.graph.succ.get(addr, ()) if addr in self.graph.steps[a].deps]
        return any(self.starts_server(a) for a in users if self.graph.steps[a].kind == "launch") or any(
            self.action(a) is Action.RUN for a in users if "paired" in self.graph.steps[a].payload)

    def host_of(self, step: Step) -> Host:
        return self.registry.get(step.payload["host"])


@attrs.define
class StepContext:
    """A handler's view of its step."""

    step: Step
    walk: Walk
    run_id: str | None = None
    folder: Path | None = None
    started: str = ""
    begun: bool = False

    @property
    def addr(self) -> str:
        return self.step.addr

    @property
    def host(self) -> Host:
        return self.walk.host_of(self.step)

    @property
    def stop(self) -> threading.Event:
        return self.walk.stop

    @property
    def writer(self) -> StateWriter:
        return self.walk.writer

    @property
    def change(self) -> Change | None:
        return self.walk.change(self.step.addr)

    def progress(self, message: str) -> None:
        self.walk.hooks.progress(self.step.addr, message)

    def begin(self) -> None:
        """Say the step starts real work (a step that only reuses says nothing)."""
        if not self.begun:
            self.begun = True
            self.walk.hooks.start(self.step.addr, self.step.kind)

    def new_run(self) -> Path:
        """This step's run folder in the state folder, made on first use."""
        self.begin()
        if self.folder is None:
            self.run_id, self.folder = self.writer.new_run()
            self.started = utc_now()
        return self.folder
