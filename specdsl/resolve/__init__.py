"""resolve: spec files -> a resolved `model.config.Config`, or diagnostics.
Reads the root file and its imports, evaluates expressions, applies
variables, `extends`, overrides and matrix expansion, and runs every
validation (`specdsl.validate`) on the way. `resolve_file` is the entry
point. Reads spec files; no other I/O.

Imports validate, model, syntax, facts and diag; never graph, plan, state,
apply, cli or the I/O side.
"""
