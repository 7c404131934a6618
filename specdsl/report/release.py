"""What a page attached to a release must say beside the verdicts: the
workload, both arms' full stacks (declared and resolved) and server
arguments (declared and as the server reported them), the host and its
GPUs, the specdsl version that measured, the identity of what was
measured (and the spec's digest when the spec is given), the command that
reproduces the run, and whether it was promoted and why.

Read from state and the run folder only (`ix` is a
specdsl.report.gather.Index); nothing is run.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import attrs

from specdsl.apply.results import effective_of
from specdsl.paired_result import PairedResult


@attrs.frozen
class ArmFacts:
    """One arm as it ran: `stack` the declared stack, `resolved` the
    environment's resolved versions (Python, packages, torch/CUDA/NCCL),
    `server` the declared server block (engine, model, args, env), `argv` the
    command that started it, `effective` its configuration as the server
    reported it."""

    letter: str
    experiment: str
    stack: tuple[tuple[str, str], ...] = ()
    resolved: tuple[tuple[str, str], ...] = ()
    server: tuple[tuple[str, str], ...] = ()
    argv: tuple[str, ...] = ()
    effective: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class ReleaseFacts:
    workload: tuple[tuple[str, str], ...] = ()
    arms: tuple[ArmFacts, ...] = ()
    host: tuple[tuple[str, str], ...] = ()
    specdsl: str = ""  # the version that measured, as the result records it ("" when it does not)
    identity: str = ""  # the benchmark step's identity: a digest of both arms' stacks, servers and the workload
    seconds_per_pair: float | None = None
    promotion: tuple[str, str] = ("", "")  # (outcome, reason)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _flat(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A nested value as (dotted key, text) rows: field by field, never a blob
    (a list of objects, SGLang's `internal_states`, by index past the first)."""
    if isinstance(value, dict) and value:
        out: list[tuple[str, str]] = []
        for k in sorted(value):
            if k != "__kind__":  # the canonical form's type tag, not a setting
                out += _flat(value[k], f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out = []
        for i, v in enumerate(value):
            out += _flat(v, prefix if i == 0 else f"{prefix}[{i}]")
        return out
    if value is None or value == [] or value == {}:
        return []
    return [(prefix, _text(value))]


def _seconds(a: str, b: str) -> float | None:
    try:
        return (datetime.fromisoformat(b.replace("Z", "+00:00")) - datetime.fromisoformat(a.replace("Z", "+00:00"))).total_seconds()
    except (ValueError, AttributeError):
        return None


def release_facts(ix, name: str, run, doc: dict | None, base_run) -> ReleaseFacts:
    """The facts of experiment `name`'s page (its benchmark result `run`,
    whose document is `doc`; `base_run` the baseline measured apart)."""
    content = ix.content(f"benchmark.{name}")
    workload = _flat({k: v for k, v in (content.get("workload") or {}).items()})
    arms: list[ArmFacts] = []
    got = PairedResult.of(doc)
    paired = bool(got and got.pairs)
    planned = content.get("arms") if isinstance(content.get("arms"), dict) else None
    if paired and planned:
        for letter, side in (("A", "baseline"), ("B", "candidate")):
            launches = got.launches_of(letter)
            argv = tuple(launches[-1][1].argv or ()) if launches else ()
            arms.append(_arm(ix, letter, got.name(letter, side), planned[side], argv, got.effective_of(letter)))
    else:
        for letter, r, who in (("A", base_run, base_run.experiment if base_run is not None else ""), ("B", run, name)):
            if r is None:
                continue
            arm_content = ix.content(f"benchmark.{who}")
            launch = ix.launches.get(arm_content.get("launch", ""))
            planned_arm = launch.content_dict() if launch is not None else {}
            launch_run = next((x for x in reversed(ix.state.runs) if launch is not None and x.identity == launch.identity
                               and x.argv), None)
            argv = tuple(launch_run.argv) if launch_run is not None else tuple(r.argv)
            arms.append(_arm(ix, letter, who, planned_arm, argv, effective_of(r)))
    specdsl_version = str((doc or {}).get("specdsl", ""))
    per_pair = None
    if run is not None and paired:
        took = _seconds(run.started, run.finished)
        per_pair = took / len(got.pairs) if took is not None and took > 0 else None
    provision = str((planned or {}).get("candidate", {}).get("provision", "")) if planned else \
        str((ix.launches.get(content.get("launch", "")).content_dict() if content.get("launch") in ix.launches else {}).get("provision", ""))
    return ReleaseFacts(tuple(workload), tuple(arms), tuple(_host(ix, name, run, provision)), specdsl_version,
                        run.identity if run is not None else "", per_pair, _promotion(ix, name, run))


def _arm(ix, letter: str, experiment: str, planned: dict, argv, effective: dict) -> ArmFacts:
    prov = next((s for s in ix.state.steps if s.kind == "provision" and s.identity == planned.get("provision")), None)
    stack = (prov.content_dict().get("stack") or {}) if prov is not None else {}
    env = ix.state.environment(str(planned.get("provision", "")))
    resolved: list[tuple[str, str]] = []
    if env is not None:
        resolved.append(("python", env.python_version))
        resolved += [(f"torch.{k}", v) for k, v in env.torch if k != "version"]
        if env.nvcc:
            resolved.append(("cuda toolkit (nvcc)", env.nvcc))
        resolved += [(k, v) for k, v in env.packages]
    server = planned.get("server") or {}
    shown = {k: v for k, v in effective.items() if k not in ("gpus_start", "gpus_end", "CUDA_VISIBLE_DEVICES")}
    return ArmFacts(letter, experiment, tuple(_flat({k: v for k, v in stack.items() if k != "find_links_digest"})),
                    tuple(resolved), tuple(_flat(server)), tuple(argv), tuple(_flat(shown)))


def _host(ix, name: str, run, provision: str) -> list[tuple[str, str]]:
    """The machine (from the candidate's provision record), its host block
    (the preflight step of that machine), and the GPU facts of the latest
    preflight of it before the run."""
    out: list[tuple[str, str]] = []
    prov = next((s for s in ix.state.steps if s.kind == "provision" and s.identity == provision), None)
    machine = (prov.content_dict().get("host") or {}) if prov is not None else {}
    ssh = machine.get("ssh")
    blocks = [s.addr for s in ix.state.steps if s.kind == "preflight"
              and (s.content_dict().get("host") or {}).get("ssh") == ssh]
    if blocks:
        out.append(("host block", ", ".join(b.removeprefix("preflight.") for b in sorted(blocks))))
    out.append(("machine", f"{ssh} (ssh)" if ssh else "this machine (no ssh)"))
    if machine.get("workdir"):
        out.append(("workdir", str(machine["workdir"])))
    anchor = run.started if run is not None else "~"
    pre = None
    for r in ix.state.runs:
        if r.step in blocks and r.status == "completed" and r.started <= anchor:
            pre = r
    facts = dict(pre.effective) if pre is not None else {}
    if facts.get("gpu_model") or facts.get("gpus"):
        out.append(("GPU model", str(facts.get("gpu_model", "-"))))
        out.append(("GPU count", str(facts.get("gpu_count", "-"))))
        out.append(("driver", str(facts.get("driver_version", "-"))))
        if run is not None and dict(run.effective).get("CUDA_VISIBLE_DEVICES") is not None:
            out.append(("GPUs used (CUDA_VISIBLE_DEVICES)", str(dict(run.effective)["CUDA_VISIBLE_DEVICES"])))
    elif pre is not None:
        out.append(("GPUs, driver", f"none recorded: {pre.reason or 'the preflight recorded no GPU facts'}"))
    else:
        out.append(("GPUs, driver", "none recorded: no preflight of this machine recorded GPU facts "
                                    "(a host without nvidia-smi that asks for no GPU records none)"))
    return out


def _promotion(ix, name: str, run) -> tuple[str, str]:
    """(outcome, reason) of the experiment's promote step."""
    mine = [p for p in ix.state.promotions if p.experiment == name and run is not None and p.run == run.id]
    records = ix.by_step.get(f"promote.{name}", [])
    if mine:
        p = mine[-1]
        checks = ", ".join(c.split(".")[-1] for c in p.checks)
        return (f"promoted: run {p.run} became the baseline of track {p.track} ({p.time})",
                f"every check passed ({checks}), one of them gating; "
                + (f"it replaced run {p.previous}" if p.previous else "the track's first baseline"))
    if records:
        r = records[-1]
        return (f"not promoted ({r.status})", r.reason or "(no reason recorded)")
    if f"promote.{name}" in ix.steps:
        return ("not promoted", "its promote step has not run")
    return ("no promotion asked", "the experiment names no track (`promote = \"TRACK\"`)")
