"""What an experiment whose server is already running (`url`) cannot be,
said at validate (docs/language.md, "A server that is already running").

- its host drives nothing: the built-in client reaches the URL from this
  machine, so a host with `ssh` or `slurm` is an error (at `host = ...`);
- a `stack` is not used (nothing is provisioned): a warning at it;
- it cannot `promote`: a track's baseline is rebuilt from its stack lock,
  and such a server has none;
- a workload that runs its own `command` is not run against it (yet): an
  error at `workload = ...`;
- `prefix_cache = "off"` would need a flag at launch: an error;
- paired with its baseline, both arms must be servers already running
  (their runs alternate, ABBA): one launched and one running is an error.
"""

from __future__ import annotations

from typing import Callable, Sequence

from specdsl.diag import Diagnostic, Span
from specdsl.model import config


def check_existing(experiments: Sequence[config.Experiment], diags: list[Diagnostic],
                   span_of: Callable[[str, str], Span | None]) -> None:
    by_name = {e.name: e for e in experiments}
    seen: set[tuple[str, str]] = set()

    def once(exp, what: str) -> bool:
        key = (exp.group, what)
        if key in seen:
            return False
        seen.add(key)
        return True

    for exp in experiments:
        server = exp.server
        base = by_name.get(exp.baseline.name) if exp.baseline is not None and exp.baseline.kind == "experiment" else None
        if not server.existing:
            if base is not None and base.server.existing and config.measured_beside(exp, base) and once(exp, "mixed"):
                diags.append(_mixed(exp, base, span_of))
            continue
        where = f"server {server.name} is already running at its `url`"
        if (exp.host.ssh or exp.host.slurm is not None) and once(exp, "host"):
            diags.append(Diagnostic.error(
                "A server that is already running is not on a host specdsl drives", span_of(exp.group, "host"),
                f"{where}: the benchmark client reaches it from this machine, and host {exp.host.name} "
                f"({'slurm' if exp.host.slurm is not None else 'ssh'}) would start nothing; leave out `host`"))
        if exp.stack.name != "(none)" and once(exp, "stack"):
            diags.append(Diagnostic.warning(
                "The stack is not used", span_of(exp.group, "stack"),
                f"{where}: nothing is provisioned for it, so stack {exp.stack.name} is ignored; leave out `stack`"))
        if exp.promote and once(exp, "promote"):
            diags.append(Diagnostic.error(
                "A server that is already running cannot be promoted", span_of(exp.group, "promote"),
                f"{where}: a track's baseline is rebuilt from the stack lock of what passed, and specdsl did not "
                "build this server; leave out `promote`"))
        if exp.workload.command and once(exp, "command"):
            diags.append(Diagnostic.error(
                "A workload that runs its own `command` is not run against a server that is already running",
                span_of(exp.group, "workload"),
                f"{where}: use the built-in client (a workload without `command`), or launch the server from a spec"))
        if exp.workload.prefix_cache == "off" and once(exp, "cache"):
            diags.append(Diagnostic.error(
                '`prefix_cache = "off"` needs a launch', span_of(exp.group, "workload"),
                f'{where}: its cache is turned off by a flag at launch, which specdsl does not do here; say '
                '"warm" (the default for such a server) or "reset"'))
        if base is not None and not base.server.existing and config.measured_beside(exp, base) and once(exp, "mixed"):
            diags.append(_mixed(exp, base, span_of))


def _mixed(exp: config.Experiment, base: config.Experiment, span_of) -> Diagnostic:
    running = exp if exp.server.existing else base
    launched = base if running is exp else exp
    return Diagnostic.error(
        "A paired comparison needs both arms launched or both already running", span_of(exp.group, "baseline"),
        f"{running.name}'s server is already running (`url`) and {launched.name}'s is launched by specdsl: the "
        "launch is the unit of one comparison and the run of the other; give both a `url`, or launch both")
