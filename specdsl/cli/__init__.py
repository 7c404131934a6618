"""cli: the `specdsl` command line, the top layer.

Parses arguments, runs a subcommand (validate, fmt, plan, show, graph,
apply, state, force-unlock) through the layers below and turns what they
return into output and an exit code. The CLI is the only layer that prints.

It may import every layer; nothing in specdsl imports it. The plan commands
import apply's modules lazily (only `apply` and a refreshing `plan` need
them), so planning stays fast.
"""
