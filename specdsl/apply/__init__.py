"""apply: walks a plan on its hosts and records what happened.

`apply_plan(plan, graph, ...)` (api.py) runs the `Scheduler`
(scheduler.py), which starts each step when its dependencies and
constraints allow and hands it to the handler of its kind (steps/). A
handler gets a `StepContext`: its step, the `Host` it runs on (from the
`HostRegistry`, by physical host), a run folder on demand, the
`StateWriter`, the stop event and progress. Outcomes carry a `Status` and a
`Reason` (enums with stable codes). Assertions are evaluated by `checks` on
results loaded by `results`; `refresh` asks the hosts what still exists
before a plan.

It is where the two sides meet: it imports the planning side (graph, plan,
state, model) and the I/O side (hosts, bench, provision, servers). Only
cli imports it. It prints nothing: it reports through hooks.
"""

# Loaded on first use: `plan` imports `apply.refresh` alone and must not pay
# for the handlers (servers, the load generator, aiohttp).
_EXPORTS = {"apply_plan": "specdsl.apply.api", "ApplyResult": "specdsl.apply.outcome", "Outcome": "specdsl.apply.outcome",
            "Reason": "specdsl.apply.outcome", "Status": "specdsl.apply.outcome"}


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(name)


__all__ = sorted(_EXPORTS)
