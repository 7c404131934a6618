"""Why the plan chose each step's action, as a code (`Why`), and the prose
the plan shows for it rendered from the code and its facts (`render`), as
Terraform keeps a change's `ActionReason` apart from the words its views
print. `plan.diff.make_plan` decides the code; a `Change` carries both
(`Change.why` and `Change.reason`); what is added after the decision (a
benchmark's pair cost, the GPUs a server takes) is a note on the prose.

The plan file keeps the prose it showed (its format is unchanged); the
code is the plan's own record of its decision, for the views and tests
that ask which rule decided a step. Pure; imports nothing of specdsl.
"""

from __future__ import annotations

import enum
from collections.abc import Callable


class Why(enum.Enum):
    """The rule that decided a step's action (values are stable codes)."""

    # benchmark
    NO_RESULTS = "no_results"  # nothing recorded for its identity
    FIELDS_CHANGED = "fields_changed"  # its content changed since the recorded step: `changes`
    RERUN = "rerun"  # --rerun over results recorded in `run`
    MORE_RUNS = "more_runs"  # `have` runs recorded, `want` wanted (`within` a budget)
    CONTINUE = "continue"  # an undecided comparison goes on from its recorded pairs
    RESULTS_RECORDED = "results_recorded"  # recorded in `run`
    SERVER_CHANGED = "server_changed"  # a server already running reports another identity than `run` was recorded on
    # launch
    SERVER_RUNNING = "server_running"  # running and answering
    SERVER_NOT_NEEDED = "server_not_needed"  # every benchmark of it has results
    SERVER_NOT_RUNNING = "server_not_running"  # recorded, but not running: launched again
    NEW_SERVER = "new_server"
    # provision
    ENV_EXISTS = "env_exists"
    ENV_NOT_NEEDED = "env_not_needed"  # no server of its stack has to start
    ENV_MISSING = "env_missing"  # recorded, but gone: created again
    NEW_ENV = "new_env"  # `summary`: what the stack holds
    # preflight
    NOTHING_TO_START = "nothing_to_start"
    BEFORE_STARTS = "before_starts"  # `starts`: the steps on its host that start something
    # check
    READS = "reads"  # `reads`: what its verdict reads; `noise`: the note of its pairs' noise
    # promote
    PROMOTION = "promotion"  # `text`: the candidacy plan.diff decided (new, ready, held, stop)
    # teardown
    STOP_SERVER = "stop_server"
    NOTHING_RUNNING = "nothing_running"


def _more_runs(f: dict) -> str:
    have, want = f["have"], f["want"]
    n = want - have
    text = f"{n} more run{'s' if n != 1 else ''} needed ({have} recorded, {want} wanted"
    return text + (f" within {f['within']})" if f.get("within") else ")")


def _continue(f: dict) -> str:
    have, budget, more = f["have"], f["budget"], f.get("more", 0)
    return (f"continue: {', '.join(f['checks'])} undecided at {have} pairs (recorded in run {f['run']}, kept); "
            f"up to {budget - have} more pairs" + (f" (--more {more})" if more else "")
            + f", {f['launches']} launches at most")


def _before(f: dict) -> str:
    starts = f["starts"]
    return f"before {', '.join(starts[:3])}{' ...' if len(starts) > 3 else ''}"


_TEXT: dict[Why, Callable[[dict], str]] = {
    Why.NO_RESULTS: lambda f: "no results recorded yet",
    Why.FIELDS_CHANGED: lambda f: f["changes"],
    Why.RERUN: lambda f: f"rerun requested (results recorded in run {f['run']})",
    Why.MORE_RUNS: _more_runs,
    Why.CONTINUE: _continue,
    Why.RESULTS_RECORDED: lambda f: f"results recorded in run {f['run']}",
    Why.SERVER_CHANGED: lambda f: f"the recorded result (run {f['run']}) no longer matches: " + "; ".join(f["changed"]),
    Why.SERVER_RUNNING: lambda f: "running and answering",
    Why.SERVER_NOT_NEEDED: lambda f: "not needed: every benchmark of this server has results",
    Why.SERVER_NOT_RUNNING: lambda f: "recorded server is not running: will launch",
    Why.NEW_SERVER: lambda f: "new server",
    Why.ENV_EXISTS: lambda f: "environment exists",
    Why.ENV_NOT_NEEDED: lambda f: "not needed: no server of this stack has to start",
    Why.ENV_MISSING: lambda f: "recorded environment is missing: will re-create",
    Why.NEW_ENV: lambda f: f["summary"],
    Why.NOTHING_TO_START: lambda f: "nothing to start on this host",
    Why.BEFORE_STARTS: _before,
    Why.READS: lambda f: "reads " + ", ".join(f["reads"]) + f.get("noise", ""),
    Why.PROMOTION: lambda f: f["text"],
    Why.STOP_SERVER: lambda f: "stop the server after its benchmarks",
    Why.NOTHING_RUNNING: lambda f: "nothing running",
}


def render(why: Why, **facts) -> str:
    """The prose of decision `why` with its facts (see `Why`)."""
    return _TEXT[why](facts)
