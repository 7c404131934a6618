"""Queries on a State's runs and steps, indexed once: which runs a step or
an experiment has, its benchmark result, the verdict run of a check,
which checks an experiment has, the launch step of an identity, and each
run's position (whether a promotion saw it). A plan, the promote step and
the report ask these thousands of times of one state (a sweep of 1,000
cells); each is a dictionary look-up here, never a scan.

The one home for these questions: the report (specdsl.report.gather),
the plan and the promote step read them from here. Pure: no I/O.
"""

from __future__ import annotations

from typing import Iterable

from specdsl.state.model import Promotion, RunRecord, State, StepRecord


class Queries:
    """A State looked up by run id, step address, experiment, identity and
    position; `state` may be None (nothing recorded: every answer empty)."""

    def __init__(self, state: State | None) -> None:
        self.state = state
        runs = state.runs if state is not None else ()
        steps = state.steps if state is not None else ()
        self.runs: dict[str, RunRecord] = {}
        self.position: dict[str, int] = {}
        self.by_step: dict[str, list[RunRecord]] = {}  # address -> its runs, oldest first
        self.by_experiment: dict[str, list[RunRecord]] = {}  # experiment (cell) -> its runs, oldest first
        self.latest: dict[tuple[str, str], RunRecord] = {}  # (check address, identity) -> its current verdict run
        for i, run in enumerate(runs):
            self.runs[run.id] = run
            self.position[run.id] = i
            self.by_step.setdefault(run.step, []).append(run)
            self.by_experiment.setdefault(run.experiment, []).append(run)
            if run.status == "completed" and run.verdict is not None:
                self.latest[(run.step, run.identity)] = run
        self.steps: dict[str, StepRecord] = {s.addr: s for s in steps}
        self.launches: dict[str, StepRecord] = {s.identity: s for s in steps if s.kind == "launch"}
        self._checks: dict[str, list[str]] | None = None

    # -- runs ----------------------------------------------------------
    def runs_of(self, addr: str) -> tuple[RunRecord, ...]:
        """The runs of the step at `addr`, oldest first."""
        return tuple(self.by_step.get(addr, ()))

    def runs_of_experiment(self, experiment: str) -> tuple[RunRecord, ...]:
        """Every run recorded for `experiment` (a cell name), oldest first."""
        return tuple(self.by_experiment.get(experiment, ()))

    def experiments(self) -> list[str]:
        """Every experiment with a run, sorted."""
        return sorted(e for e in self.by_experiment if e)

    def result(self, experiment: str) -> RunRecord | None:
        """The benchmark result of `experiment`: the run its benchmark
        step's recorded identity holds as result, else the latest completed
        run of its benchmark step."""
        addr = f"benchmark.{experiment}"
        step = self.steps.get(addr)
        if step is not None and self.state is not None:
            run = self.state.result(step.identity)
            if run is not None and run.step == addr:
                return run
        return next((r for r in reversed(self.by_step.get(addr, ())) if r.status == "completed"), None)

    # -- checks and verdicts ---------------------------------------------
    def verdict(self, addr: str, identity: str) -> RunRecord | None:
        """The current verdict of the check at `addr` with `identity`."""
        return self.latest.get((addr, identity))

    def verdict_run(self, addr: str) -> RunRecord | None:
        """The current verdict run of the check at `addr`: the latest
        completed one of the identity its step records (of any identity
        when none is of it)."""
        step = self.steps.get(addr)
        runs = [r for r in self.by_step.get(addr, ()) if r.status == "completed" and r.verdict is not None]
        if step is not None:
            mine = [r for r in runs if r.identity == step.identity]
            runs = mine or runs
        return runs[-1] if runs else None

    def checks_of(self, experiment: str) -> tuple[str, ...]:
        """The addresses of `experiment`'s checks (recorded or run), sorted:
        a check's experiment is its latest run's, else its address minus
        the check's name."""
        if self._checks is None:
            self._checks = {}
            for addr in sorted(set(self.steps) | set(self.by_step)):
                if addr.startswith("check."):
                    self._checks.setdefault(self._experiment_of_check(addr), []).append(addr)
        return tuple(self._checks.get(experiment, ()))

    def _experiment_of_check(self, addr: str) -> str:
        runs = self.by_step.get(addr)
        if runs:
            return runs[-1].experiment
        return addr[len("check."):].rsplit(".", 1)[0]

    # -- promotions ------------------------------------------------------
    def new_to(self, run_ids: Iterable[str], promotion: Promotion | None) -> bool:
        """Whether any of `run_ids` was recorded after `promotion` (True when
        there is none; False for one that did not record what it saw)."""
        if promotion is None:
            return True
        if promotion.runs_seen is None:
            return False
        return any(self.position.get(r, -1) >= promotion.runs_seen for r in run_ids)
