"""What differs between the arms of an experiment, as state recorded it:
their environments (Python, resolved packages, torch/CUDA/NCCL: what a stack
lock records), their server configurations (from the launch or paired
benchmark step records) and the effective configurations the servers
reported. `ix` is a specdsl.report.gather.Index."""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from specdsl.apply.results import effective_of
from specdsl.paired_result import PairedResult
from specdsl.state import Environment


@attrs.frozen
class Difference:
    section: str  # "stack", "server", "effective"
    key: str
    baseline: str
    candidate: str



def _flat(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out = {}  # field by field (SGLang's `internal_states`: one object per rank), never one blob
        for i, v in enumerate(value):
            out.update(_flat(v, prefix if i == 0 else f"{prefix}[{i}]"))
        return out
    if value is None:
        return {}
    return {prefix: value if isinstance(value, str) else json.dumps(value)}


def _diff(section: str, a: dict[str, str], b: dict[str, str]) -> list[Difference]:
    out = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            out.append(Difference(section, key, a.get(key, "(absent)"), b.get(key, "(absent)")))
    return out


def _arm_config(ix, experiment: str, content: dict | None = None) -> tuple[str, dict] | None:
    """(provision identity, server configuration) of an experiment's own
    benchmark (read from its recorded launch step)."""
    content = content if content is not None else ix.content(f"benchmark.{experiment}")
    launch = ix.launches.get(content.get("launch", ""))
    if launch is None:
        return None
    c = launch.content_dict()
    return str(c.get("provision", "")), dict(c.get("server", {}))


def _env_flat(env: Environment | None) -> dict[str, str]:
    if env is None:
        return {}
    out = {"python": env.python_version}
    out.update({f"packages.{k}": v for k, v in env.packages})
    out.update({f"torch.{k}": v for k, v in env.torch})
    if env.nvcc:
        out["nvcc"] = env.nvcc
    return out


def differences_of(ix, name: str, content: dict, doc: dict | None, run, base_run) -> list[Difference]:
    """Stack, server and effective differences of the baseline arm and
    the candidate (`content`: the candidate's benchmark step record)."""
    arms = content.get("arms") if isinstance(content.get("arms"), dict) else None
    if arms:
        a = (str(arms["baseline"].get("provision", "")), dict(arms["baseline"].get("server", {})))
        b = (str(arms["candidate"].get("provision", "")), dict(arms["candidate"].get("server", {})))
    else:
        b = _arm_config(ix, name, content)
        a = _arm_config(ix, base_run.experiment) if base_run is not None else None
    out: list[Difference] = []
    if a is not None and b is not None:
        env_a, env_b = ix.state.environment(a[0]), ix.state.environment(b[0])
        if a[0] != b[0] and (env_a is None or env_b is None):
            out.append(Difference("stack", "environment", a[0][:12] if env_a else "(not recorded)", b[0][:12] if env_b else "(not recorded)"))
        out += _diff("stack", _env_flat(env_a), _env_flat(env_b))
        out += _diff("server", _flat(a[1]), _flat(b[1]))
    noise = _noise(b[1].get("engine", "") if b is not None else "", doc)
    got = PairedResult.of(doc)
    if got and got.pairs:
        out += _effective_diff(_flat(got.effective_of("A")), _flat(got.effective_of("B")))
    elif base_run is not None and run is not None:
        out += _effective_diff(_flat(effective_of(base_run)), _flat(effective_of(run)))
    return [d for d in out if not (d.section == "effective" and d.key in noise)]


def _effective_diff(a: dict[str, str], b: dict[str, str]) -> list[Difference]:
    """The effective differences, each fact once: SGLang's per-rank record
    `internal_states.X` of a setting `X` with the same values on both sides
    is that setting's row (as `specdsl diagnose` says it)."""
    def again(key: str) -> bool:
        m = re.fullmatch(r"internal_states(?:\[\d+\])?\.(.+)", key)
        return bool(m) and m[1] in set(a) | set(b) and a.get(m[1]) == a.get(key) and b.get(m[1]) == b.get(key)

    return [d for d in _diff("effective", a, b) if not again(d.key)]


def _noise(engine: str, doc: dict | None) -> frozenset[str]:
    """Effective keys whose values differ between any two launches of one
    configuration (as `specdsl diagnose` hides them): the engine's declared
    ones (ports, seeds) and those that differ between one arm's launches."""
    from specdsl.servers import adapter_for

    keys = set(adapter_for(engine).volatile) if engine else set()
    got = PairedResult.of(doc)
    for letter in ("A", "B"):
        seen = [_flat(x.effective) for _k, x in (got.launches_of(letter) if got else ()) if x.effective]
        if len(seen) > 1:
            keys |= {k for k in set().union(*seen) if len({f.get(k) for f in seen}) > 1}
    return frozenset(keys)
