"""graph: resolved config -> the DAG of steps, each with its identity (the
hash of what it does) and address (its human name). Pure: no I/O.

Imports model and diag only; never plan, state, apply, cli or the I/O side
(hosts, bench, provision, servers). plan and apply import it.
"""
