"""What the commands that look at recorded servers (`plan`, `apply`,
`destroy`, `state list --servers`) tell `apply.orphans` about the spec.

A server record names its host by physical key (`local`, `ssh:NAME`);
reaching a remote one needs the spec's declaration of that host (its ssh
options, its workdir), and deciding whether a record is reused or stale
needs the launch identities the spec still has. Both come from the step
graph (`plan`, `apply`) or, for `destroy`, which plans nothing, from the
resolved spec alone.
"""

from __future__ import annotations

from pathlib import Path


def graph_hosts(graph) -> dict:
    """The host declarations of the graph's steps, by physical key."""
    from specdsl.hosts import host_key

    return {host_key(s.payload["host"]): s.payload["host"] for s in graph.steps.values() if s.payload.get("host")}


def launch_identities(graph) -> set[str]:
    """The identities of the graph's launch steps: the recorded servers the
    spec still has (reused, not stale)."""
    return {s.identity for s in graph.steps.values() if s.kind == "launch"}


def spec_hosts(file: str | None) -> dict:
    """The host declarations of the spec (by name and physical key), so a
    record on a remote host can be reached; {} without a readable spec."""
    if not file:
        return {}
    from specdsl.hosts import host_key
    from specdsl.resolve.resolver import resolve_file

    try:
        resolved = resolve_file(Path(file))
    except Exception:  # a broken spec does not stop a destroy of what runs here
        return {}
    if not resolved.ok:
        return {}
    cfg = resolved.config
    hosts = list(cfg.hosts) + [e.host for e in cfg.experiments if getattr(e, "host", None) is not None]
    return {h.name: h for h in hosts} | {host_key(h): h for h in hosts}
