"""plan: step graph + recorded state + refresh answers -> Plan (what apply
would do to each step, and why); its text and JSON views and saved plan
files. Deciding a plan is pure: no clock, no network, no state writes.

Imports graph (and what is below it) only. It reads the State it is given
without importing specdsl.state; never apply, cli or the I/O side (hosts,
bench, provision, servers).
"""
