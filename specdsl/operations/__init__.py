"""Plan and apply as library operations, what every command that plans or
walks is made of: parse (cli), confirm (cli), operation (here), view (cli).

An operation always takes the spec's path, so the step graph is built from
the spec's folder (track locks and relative dataset files are read there:
`spec_graph`), uses one host registry for all it asks of hosts
(`Session`) and one state writer for all it records (`walk`, and
`calibrate.record` through the walk's writer), and returns
what it found (a `Planned` with its `Problems`, an `ApplyResult`) instead
of printing it. Above `apply` and `diagnose`, below `cli`: imports nothing
of `cli` and prints nothing.
"""

from specdsl.operations.plan import Planned, Problems, Session, plan_config, plan_spec, spec_graph

__all__ = ["Planned", "Problems", "Session", "plan_config", "plan_spec", "spec_graph"]
