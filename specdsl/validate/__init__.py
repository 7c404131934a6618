"""validate: the checks a resolved spec must pass. Attribute schemas and
typed builders of hosts, stacks, servers and workloads (`schema`), engine
arguments against the servers' flag tables (`engine_args`), assertions
(`asserts`), GPU needs (`gpus`) and a workload's `prefix_cache` against
its servers (`prefix_cache`). Pure functions on evaluated values
(`model.values.V`) that report diagnostics.

Imports model, facts and diag only. resolve calls it while it resolves;
validate never imports resolve (the values both use live in model), graph,
plan, state, apply, cli or the I/O side.
"""
