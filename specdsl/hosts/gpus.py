"""What `nvidia-smi` says about a host's GPUs, asked through its `Host`
(so it works on this machine and over SSH alike).

Two queries in CSV (`--format=csv,noheader,nounits`):

    --query-gpu=index,uuid,name,driver_version,memory.used,memory.total,
                utilization.gpu,clocks.sm,clocks.max.sm,clocks_throttle_reasons.active
    --query-compute-apps=gpu_uuid,pid,used_memory

Memory is in MiB, clocks in MHz, utilization in %. The throttle reasons are
NVML's bit mask (`nvmlClocksThrottleReasons`, renamed
`nvmlClocksEventReasons` in newer drivers, whose nvidia-smi calls the field
`clocks_event_reasons.active`: asked when the old name is refused). A field a
GPU does not support reads `[N/A]` or `[Not Supported]`: None here.

Nothing here imports from the rest of specdsl but `hosts.base`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from specdsl.hosts.base import Host

TIMEOUT_S = 30
GPU_FIELDS = ("index", "uuid", "name", "driver_version", "memory.used", "memory.total", "utilization.gpu",
              "clocks.sm", "clocks.max.sm", "clocks_throttle_reasons.active")
NEW_THROTTLE_FIELD = "clocks_event_reasons.active"
APP_FIELDS = ("gpu_uuid", "pid", "used_memory")

# A GPU nobody uses holds a few MiB at most; a CUDA context alone takes a
# few hundred. Above this, something runs there (even when its processes
# are invisible, e.g. in another container).
IDLE_MEMORY_MIB = 256

# Reasons that slow the clocks of a GPU that works: slowdowns by heat, by
# the hardware or the power brake (NVML's bits 0x08, 0x20, 0x40, 0x80).
# Idle (0x01), application clocks (0x02), the software power cap (0x04),
# sync boost (0x10) and display clocks (0x100) are not faults of the machine.
THROTTLE_BITS = {0x08: "hw_slowdown", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
                 0x80: "hw_power_brake_slowdown"}


class GpuQueryError(Exception):
    """nvidia-smi did not answer, failed, or printed what cannot be read."""


@attrs.frozen
class GpuProcess:
    gpu_uuid: str
    pid: int
    used_mib: float | None


@attrs.frozen
class Gpu:
    index: int
    uuid: str
    name: str
    driver: str
    memory_used_mib: float | None
    memory_total_mib: float | None
    utilization_pct: float | None
    clock_sm_mhz: float | None
    clock_max_sm_mhz: float | None
    throttle_mask: int | None
    processes: tuple[GpuProcess, ...] = ()

    def throttled(self) -> list[str]:
        """The slowdowns active now (THROTTLE_BITS), by name."""
        if not self.throttle_mask:
            return []
        return [name for bit, name in THROTTLE_BITS.items() if self.throttle_mask & bit]

    def busy(self, ours: set[int] = frozenset()) -> str | None:
        """Why this GPU is in use by someone else (processes not in `ours`,
        or memory held), or None when it is idle."""
        others = [p for p in self.processes if p.pid not in ours]
        if others:
            pids = ", ".join(str(p.pid) for p in others[:5])
            return f"{len(others)} process{'es' if len(others) != 1 else ''} (pid {pids})"
        if not ours.intersection(p.pid for p in self.processes) and (self.memory_used_mib or 0) > IDLE_MEMORY_MIB:
            return f"{self.memory_used_mib:g} MiB of memory in use"
        return None

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in attrs.asdict(self, recurse=False).items() if k != "processes" and v is not None}
        if self.throttle_mask is not None:
            out["throttle_mask"] = f"{self.throttle_mask:#x}"
        out["processes"] = [attrs.asdict(p) for p in self.processes]
        return out


@attrs.frozen
class GpuReport:
    """Every GPU nvidia-smi lists on a host, with its compute processes."""

    smi: str
    gpus: tuple[Gpu, ...]

    def by_index(self) -> dict[int, Gpu]:
        return {g.index: g for g in self.gpus}

    def facts(self) -> dict[str, Any]:
        """The host facts a run record keeps for diagnosis: model, driver,
        count, and each GPU's clocks, memory and throttle state."""
        names = sorted({g.name for g in self.gpus})
        drivers = sorted({g.driver for g in self.gpus})
        return {"nvidia_smi": self.smi, "gpu_count": len(self.gpus), "gpu_model": ", ".join(names),
                "driver_version": ", ".join(drivers), "gpus": [g.to_json() for g in self.gpus]}


def smi_value(text: str) -> str | None:
    """One cell of nvidia-smi's CSV, or None where the GPU does not report it (`[N/A]`, `[Not Supported]`)."""
    text = text.strip()
    if not text or text.startswith("[") or text in ("N/A", "Not Supported"):
        return None
    return text


def smi_number(text: str) -> float | None:
    """A cell's number (its unit, if any, left out), or None."""
    v = smi_value(text)
    if v is None:
        return None
    try:
        return float(v.split()[0])
    except ValueError:
        return None


def _mask(text: str) -> int | None:
    v = smi_value(text)
    if v is None:
        return None
    try:
        return int(v, 0)
    except ValueError:
        return None


def parse_gpus(text: str) -> list[Gpu]:
    """Rows of the `--query-gpu` CSV (fields in GPU_FIELDS order)."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(GPU_FIELDS) or not cells[0].isdigit():
            raise GpuQueryError(f"nvidia-smi printed a line that is not a GPU row: {line.strip()[:200]!r}")
        out.append(Gpu(index=int(cells[0]), uuid=cells[1], name=cells[2], driver=cells[3],
                       memory_used_mib=smi_number(cells[4]), memory_total_mib=smi_number(cells[5]),
                       utilization_pct=smi_number(cells[6]), clock_sm_mhz=smi_number(cells[7]),
                       clock_max_sm_mhz=smi_number(cells[8]), throttle_mask=_mask(cells[9])))
    return out


def parse_apps(text: str) -> list[GpuProcess]:
    """Rows of the `--query-compute-apps` CSV (gpu_uuid, pid, used_memory)."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 2 or not cells[1].isdigit():
            continue  # "No running processes found" and the like
        out.append(GpuProcess(cells[0], int(cells[1]), smi_number(cells[2]) if len(cells) > 2 else None))
    return out


def _ask(host: Host, smi: str, args: list[str], tmp: Path, name: str) -> tuple[bool, str]:
    log = tmp / f"{name}.log"
    result = host.run([smi, *args, "--format=csv,noheader,nounits"], log_path=log, timeout=TIMEOUT_S, framed=False)
    if result.timed_out:
        raise GpuQueryError(f"nvidia-smi did not answer within {TIMEOUT_S}s")
    try:
        text = host.read_text(log)
    except FileNotFoundError:
        text = ""
    return result.returncode == 0, text


def query(host: Host, smi: str | None = None) -> GpuReport | None:
    """The GPUs of `host` and their processes, or None when the host has no
    nvidia-smi (a CPU host). Raises GpuQueryError when it fails."""
    smi = smi or host.which("nvidia-smi")
    if smi is None:
        return None
    with host.temp_dir() as tmp:
        tmp = Path(tmp)
        fields = list(GPU_FIELDS)
        ok, text = _ask(host, smi, ["--query-gpu=" + ",".join(fields)], tmp, "gpus")
        if not ok and "clocks_throttle_reasons" in text:  # a driver that knows only the new name
            fields[-1] = NEW_THROTTLE_FIELD
            ok, text = _ask(host, smi, ["--query-gpu=" + ",".join(fields)], tmp, "gpus-new")
        if not ok:
            raise GpuQueryError(f"nvidia-smi --query-gpu failed: {text.strip()[-500:] or 'no output'}")
        gpus = parse_gpus(text)
        ok, apps_text = _ask(host, smi, ["--query-compute-apps=" + ",".join(APP_FIELDS)], tmp, "apps")
        if not ok:
            raise GpuQueryError(f"nvidia-smi --query-compute-apps failed: {apps_text.strip()[-500:] or 'no output'}")
    apps = parse_apps(apps_text)
    by_uuid: dict[str, list[GpuProcess]] = {}
    for p in apps:
        by_uuid.setdefault(p.gpu_uuid, []).append(p)
    return GpuReport(smi, tuple(attrs.evolve(g, processes=tuple(by_uuid.get(g.uuid, ()))) for g in gpus))
