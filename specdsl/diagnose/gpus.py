"""The GPUs an arm ran on, as its run's own snapshots or its host's
preflight recorded them, and their differences (category "host").

Preflight records the host's facts in its run record's `effective`
(`gpu_model`, `driver_version`, `gpu_count`, `gpus`: each GPU's uuid,
memory, utilization, SM clock and its maximum, throttle mask, compute
processes; docs/gpus.md). An arm's facts are those of the last completed
preflight of its host before the server was launched (a run record that
carries the facts itself is read first), narrowed to the GPUs the arm ran on
(`CUDA_VISIBLE_DEVICES` of its launch, or of its paired benchmark; all
the host's GPUs when it declared none). The GPUs are keyed by their place
among the arm's (`gpu[0]`, the first it was given), so two arms on
different devices of one machine compare GPU for GPU.

The rank of each difference (docs/diagnose.md, "The ranking rule"): a
different GPU model or driver, an active slowdown (heat, the hardware,
the power brake) and another job on the arm's GPU (compute processes, or
more memory in use than an idle GPU holds) are risks on their own; a
different maximum SM clock or memory size is the hardware's class; the
GPU count of the machine, the device ids, and the SM clock and
utilization sampled at preflight (idle, so they say little) come last.
"""

from __future__ import annotations

import json
from typing import Any

from specdsl.hosts.gpus import IDLE_MEMORY_MIB, THROTTLE_BITS

VISIBLE = "CUDA_VISIBLE_DEVICES"
START, END = "gpus_start", "gpus_end"  # a run's own snapshots (apply.gpus)

# per-GPU fields compared, with their tier class: "risk", "class" or "rest"
_PER_GPU = (
    ("throttle", "risk", "an active slowdown (heat, the hardware, the power brake) lowers its clocks"),
    ("processes", "risk", "another job's processes on the arm's GPU share its compute and memory"),
    ("throttle_end", "risk", "a slowdown active when the run ended: its GPU throttled during the run"),
    ("processes_end", "risk", "another job's processes on the arm's GPU when the run ended: it joined during the run"),
    ("memory_used_mib", "risk", "memory in use before the server started: another job holds the GPU"),
    ("clock_max_sm_mhz", "class", "the highest SM clock sets the speed of every kernel"),
    ("memory_total_mib", "class", "the GPU's memory bounds the KV cache and the batch"),
    ("clock_sm_mhz", "rest", "the SM clock sampled at preflight (an idle GPU's: weak evidence)"),
    ("utilization_pct", "rest", "the utilization sampled at preflight"),
)
_HOST = (
    ("gpu_model", "risk", "a different GPU runs different kernels at a different speed (and servers choose their defaults by it)"),
    ("driver_version", "risk", "the driver carries the CUDA user-mode stack every kernel launch goes through"),
    ("gpu_count", "rest", "the machine's GPU count"),
    ("devices", "rest", "the device ids the arm was given"),
)
WHY = {k: why for k, _, why in _HOST} | {k: why for k, _, why in _PER_GPU}
CLASS = {k: c for k, c, _ in _HOST} | {k: c for k, c, _ in _PER_GPU}


def facts_of(state, run, launch=None, host_name: str | None = None) -> dict[str, str]:
    """The arm's GPU facts as text, keyed as compared ({} when none were
    recorded). `run` the benchmark run, `launch` the launch run that started
    its server (None for a paired run), `host_name` the host block when the
    spec is known. A run that took GPU snapshots (`gpus_start`, `gpus_end`:
    apply.gpus) is read from them: its GPUs as they were when it ran, the
    processes counted those not of its own server, and the end's throttle
    and processes besides (`gpu[0].throttle_end`)."""
    record = _facts_record(state, run, launch, host_name)
    own = dict(run.effective)
    if record is None and START not in own:
        return {}
    effective = dict(record.effective) if record is not None else {}
    gpus = _gpus(own[START]) if START in own else _gpus(effective.get("gpus"))
    used = dict((launch or run).effective).get(VISIBLE)
    ids = [int(x) for x in used.split(",") if x.strip().isdigit()] if used else [g.get("index") for g in gpus]
    by_index = {g.get("index"): g for g in gpus}
    mine = [by_index[i] for i in ids if i in by_index]
    before = {g.get("index"): g for g in _gpus(effective.get("gpus"))}  # the preflight's, before the server
    out: dict[str, str] = {}
    if mine:
        out["gpu_model"] = ", ".join(sorted({str(g.get("name")) for g in mine}))
        out["driver_version"] = ", ".join(sorted({str(g.get("driver")) for g in mine}))
    elif effective.get("gpu_model"):
        out["gpu_model"], out["driver_version"] = str(effective["gpu_model"]), str(effective.get("driver_version"))
    if effective.get("gpu_count") is not None:
        out["gpu_count"] = str(effective["gpu_count"])
    if used is not None:
        out["devices"] = used
    for place, g in enumerate(mine):
        out[f"gpu[{place}].throttle"] = _throttle(g.get("throttle_mask"))
        out[f"gpu[{place}].processes"] = str(g["others"] if "others" in g else len(g.get("processes") or ()))
        for key in ("memory_used_mib", "clock_max_sm_mhz", "memory_total_mib", "clock_sm_mhz", "utilization_pct"):
            source = g
            if key == "memory_used_mib" and "others" in g:  # a run's own server holds memory: the preflight's, before it
                source = before.get(g.get("index"), {})
            if source.get(key) is not None:
                out[f"gpu[{place}].{key}"] = _number(source[key])
    if END in own:
        ends = {g.get("index"): g for g in _gpus(own[END])}
        for place, g in enumerate(mine):
            end = ends.get(g.get("index"))
            if end is not None:
                out[f"gpu[{place}].throttle_end"] = _throttle(end.get("throttle_mask"))
                out[f"gpu[{place}].processes_end"] = str(end.get("others", len(end.get("processes") or ())))
    return out


def _gpus(text) -> list[dict]:
    try:
        gpus = json.loads(text or "[]")
    except (TypeError, ValueError):
        return []
    return [g for g in gpus if isinstance(g, dict)] if isinstance(gpus, list) else []


def _facts_record(state, run, launch, host_name):
    """The run record whose `effective` holds the arm's host facts: the run
    (or its launch) itself when it recorded them, else the last completed
    preflight of its host that began before the server was launched."""
    for r in (run, launch):
        if r is not None and "gpus" in dict(r.effective):
            return r
    mark = launch or run
    anchor = mark.started
    # state.runs keeps the order runs were recorded in: a preflight recorded
    # after the server's launch is a later apply's, also within the same
    # second (times are to the second: two quick applies tie)
    place = next((i for i, r in enumerate(state.runs) if r.id == mark.id), len(state.runs))
    found = [(i, r) for i, r in enumerate(state.runs[:place]) if r.step.startswith("preflight.")
             and r.status == "completed" and r.started <= anchor and "gpus" in dict(r.effective)]
    if host_name is not None:
        found = [(i, r) for i, r in found if r.step == f"preflight.{host_name}"] or found
    return max(found, key=lambda x: (x[1].started, x[0]))[1] if found else None


def _throttle(mask: Any) -> str:
    """The active slowdowns of a throttle mask ('0x40'), by name; "none"."""
    try:
        value = int(str(mask), 0)
    except ValueError:
        return "unknown"
    names = [name for bit, name in THROTTLE_BITS.items() if value & bit]
    return ", ".join(names) if names else "none"


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def tier_class(key: str, baseline: str | None, candidate: str | None) -> str | None:
    """"risk", "class" or "rest" for a difference of `key` (`gpu[0].throttle`,
    `driver_version`); None when it is not one (memory in use below what an
    idle GPU holds, on both sides)."""
    field = key.split("].", 1)[1] if key.startswith("gpu[") else key
    if field == "memory_used_mib":
        held = [v for v in (baseline, candidate) if v is not None and _float(v) > IDLE_MEMORY_MIB]
        if not held:
            return None
    return CLASS.get(field, "rest")


def why_of(key: str) -> str:
    field = key.split("].", 1)[1] if key.startswith("gpu[") else key
    return WHY.get(field, "a GPU fact of the host's preflight")


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0
