"""The executor seam (specdsl/apply/executor.py): one scheduler over the
local executor and the batch executors, one failure propagation.

The Slurm executor's own proof is tests/slurm/ (a real cluster). Here a
batch executor written for the test, `Refusing`, stands where a cluster
cannot run: it claims the launch, benchmark and teardown of one experiment
and ends them as a cluster that refuses a job would; the local executor
runs everything else with real processes and real state. What is checked
is the contract every batch executor (Slurm's, a Kubernetes one) relies
on: what it claims the local executor never runs, a step it fails skips
its dependants in both executors by the scheduler's one rule (and those
show in `report.finished` at once), a step it leaves without an outcome
fails rather than being lost, and its steps end before a local one starts.
"""

from __future__ import annotations

from specdsl.apply import Reason, Status, api
from specdsl.apply.outcome import Outcome
from test_walk import COMMON, Recording, apply_spec, outcome, server, workload
from test_walk import env_root  # noqa: F401 (the module's environment root fixture)

SPEC = '''
experiment "here" {
  host     = host.a
  stack    = stack.sys
  server   = server.fine
  workload = workload.w
}
experiment "there" {
  host     = host.b
  stack    = stack.sys
  server   = server.far
  workload = workload.w
  assert "ok" { tps > 0 }
}
'''

def spec_text(folder) -> str:
    """Two servers of different content (one launch each), one per experiment."""
    life = folder / "life.txt"
    return COMMON + server("fine", 2, life) + server("far", 3, life) + workload(runs=1) + SPEC


CLAIMED = ("launch.far", "benchmark.there", "teardown.far")


class Refusing:
    """A batch executor that fails the first step it claims (`report`:
    False: it reports nothing at all) and notes what it saw finished."""

    name = "refusing"

    def __init__(self, report: bool = True) -> None:
        self.report = report
        self.given: frozenset[str] = frozenset()
        self.seen_finished: dict[str, Status] = {}

    def claims(self, walk) -> set[str]:
        return {a for a in CLAIMED if a in walk.plan_addrs}

    def run(self, walk, steps, report) -> None:
        self.given = steps
        if not self.report:
            return
        walk.hooks.start("launch.far", "launch")
        report.finish(Outcome("launch.far", "launch", Status.FAILED, Reason.ERROR, "the cluster refused the job"))
        self.seen_finished = {a: o.status for a, o in report.finished.items()}


def test_a_batch_executors_failure_skips_its_dependants_in_both_executors(tmp_path, env_root, monkeypatch):  # noqa: F811
    batch = Refusing()
    monkeypatch.setattr(api, "EXECUTORS", (batch,))
    hooks = Recording()
    _, result, state = apply_spec(tmp_path, spec_text(tmp_path), env_root, hooks=hooks)
    assert batch.given == frozenset(CLAIMED)
    failed = outcome(result, "launch.far")
    assert (failed.status, failed.detail) == (Status.FAILED, "the cluster refused the job")
    # its dependants, its own benchmark and the local check among them, skipped at once, naming the cause
    assert batch.seen_finished == {"launch.far": Status.FAILED, "benchmark.there": Status.SKIPPED,
                                   "teardown.far": Status.SKIPPED, "check.there.ok": Status.SKIPPED}
    for addr in ("benchmark.there", "teardown.far", "check.there.ok"):
        o = outcome(result, addr)
        assert (o.status, o.reason, o.root, o.detail) == (
            Status.SKIPPED, Reason.UPSTREAM_FAILED, "launch.far", "skipped because launch.far failed"), o
    # the local executor ran the rest, and none of what the batch claimed
    assert outcome(result, "benchmark.here").status is Status.COMPLETED
    started = [addr for what, addr in hooks.events if what == "start"]
    assert started[0] == "launch.far" and started.count("launch.far") == 1
    assert "benchmark.there" not in started
    assert not [r for r in state.runs if r.step in CLAIMED]
    assert result.exit_code() == 5


def test_a_step_a_batch_executor_leaves_without_an_outcome_fails(tmp_path, env_root, monkeypatch):  # noqa: F811
    monkeypatch.setattr(api, "EXECUTORS", (Refusing(report=False),))
    _, result, _ = apply_spec(tmp_path, spec_text(tmp_path), env_root)
    o = outcome(result, "launch.far")
    assert o.status is Status.FAILED
    assert o.detail == "the refusing executor ended without saying how this step ended"
    assert outcome(result, "check.there.ok").root == "launch.far"
    assert outcome(result, "benchmark.here").status is Status.COMPLETED
    assert len([x for x in result.outcomes if x.addr in CLAIMED]) == len(CLAIMED)
