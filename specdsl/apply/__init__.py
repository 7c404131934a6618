"""apply: the walk. Runs a plan's steps on the hosts (preflight, provision,
launch, benchmark, check, promote, teardown), evaluates assertions on the
recorded results and writes what happened to state after every step.

It is where the two sides meet: it imports the planning side (graph, plan,
state, model) and the I/O side (hosts, bench, provision, servers). Only
cli imports it.
"""
