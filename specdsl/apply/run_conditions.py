"""The run watches of a benchmark step (specdsl.bench.conditions): what
apply asks the load generator to watch around each measured run, on the
host the server runs on.

- `gpu`: the server's GPUs sampled with nvidia-smi while each run lasts,
  on a host whose preflight had an nvidia-smi answer (this machine, an SSH
  host, a Slurm job's node: whatever `Host` the server was started
  through). The GPUs are those the scheduler gave the server's session
  (a paired arm side by side: its own), every GPU the host lists when it
  declares none. The field names nvidia-smi knows are asked once per
  machine and apply (`Walk.gpu_samplers`). A host without nvidia-smi:
  every run's record says `not sampled`, and no run is invalid for it.

A further watch (a JIT event in the engine's log inside a run) goes in
`watches` beside the GPU's.
"""

from __future__ import annotations

from pathlib import Path

from specdsl.apply import gpus
from specdsl.bench.conditions import GpuWatch, RunWatch
from specdsl.hosts import gpu_samples, host_key
from specdsl.model.gpus import host_devices


def watches(walk, host, decl, opener: str, folder: Path, ids: tuple[int, ...] | None = None) -> list[RunWatch]:
    """The watches of the runs of a server on `host` (block `decl`) in the
    session `opener`, their files under the run folder `folder` (a local
    path; on the host, its run folder). `ids`: the server's own GPUs when
    it does not hold all of the session's (a paired arm side by side)."""
    return [gpu_watch(walk, host, decl, opener, folder, ids)]


def gpu_watch(walk, host, decl, opener: str, folder: Path, ids: tuple[int, ...] | None = None) -> GpuWatch:
    if not gpus.snapshots_wanted(walk, decl):
        return GpuWatch.not_sampled(f"no nvidia-smi answered on host {decl.name}")
    key = host_key(decl)
    with walk.mutex:
        found = walk.gpu_samplers.get(key)
    if found is None:
        try:
            with host.temp_dir() as tmp:
                probed = gpu_samples.probe(host, Path(tmp))
            found = probed if probed is not None else f"no nvidia-smi on host {decl.name}"
        except gpu_samples.SampleError as exc:
            found = f"host {decl.name}: {exc}"
            walk.result.warn(f"the GPUs of host {decl.name} are not sampled during runs: {exc}")
        with walk.mutex:
            walk.gpu_samplers[key] = found
    if isinstance(found, str):
        return GpuWatch.not_sampled(found)
    smi, fields = found
    if ids is None and host_devices(decl):
        ids = tuple(walk.gpus.get(opener, ()))
    return GpuWatch(host, smi, fields, host.run_folder(folder), ids)


DURING = "gpus_during"  # the key of a run record's `effective` (a JSON list, one entry per run)


def during(runs) -> dict[str, str]:
    """What a run record keeps of its runs' GPU samples: {DURING: JSON of
    [{"run", "sampled", "gpus": [{"index", "sm_mhz_min", "sm_mhz_median",
    "power_w_max", "reasons"}]}, ...]}, {} when no run has a GPU record."""
    import json

    out = []
    for r in runs:
        gpu = r.conditions.get(GpuWatch.key)
        if not gpu:
            continue
        entry = {"run": r.index, "sampled": gpu.get("sampled", "")}
        if "gpus" in gpu:
            entry["gpus"] = [{k: g[k] for k in ("index", "samples", "sm_mhz_min", "sm_mhz_median", "power_w_max", "reasons")
                              if k in g} for g in gpu["gpus"]]
        out.append(entry)
    return {DURING: json.dumps(out, sort_keys=True)} if out else {}
