"""One handler per step kind. A handler has `run(ctx) -> Outcome` and may
declare what the scheduler must respect: `session_key`/`session_members`
(a launch holds its host's GPUs while its server is in use),
`max_parallel`, `soft_after` (ordering edges as a preference).
A handler raises `StepFailed` for a step that could not do its work and lets
`hosts.Cancelled` through when the stop event ended it."""

from specdsl.apply.steps import benchmark, check, launch, preflight, promote, provision, teardown

HANDLERS = {
    "preflight": preflight.Preflight(),
    "provision": provision.Provision(),
    "launch": launch.Launch(),
    "benchmark": benchmark.Benchmark(),
    "check": check.Check(),
    "promote": promote.Promote(),
    "teardown": teardown.Teardown(),
}

__all__ = ["HANDLERS"]
