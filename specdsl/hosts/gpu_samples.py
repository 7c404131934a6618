"""What a host's GPUs did while a run lasted: `nvidia-smi` sampling every
200 ms, started through the run's `Host` (this machine or SSH alike) and
stopped when the run ends, then read back and summarised.

The query (`--format=csv,noheader,nounits`, `-lms 200`), one row per GPU
per sample:

    index, clocks.sm, clocks.mem, power.draw, temperature.gpu, utilization.gpu,
    clocks_event_reasons.active, clocks_event_reasons.hw_slowdown,
    clocks_event_reasons.sw_thermal_slowdown, clocks_event_reasons.hw_thermal_slowdown,
    clocks_event_reasons.sw_power_cap, clocks_event_reasons.hw_power_brake_slowdown

Clocks in MHz, power in W, temperature in C, utilization in %; the mask is
NVML's `nvmlClocksEventReasons` bits in hex, the named reasons read
`Active` or `Not Active`. A driver older than the `clocks_event_reasons`
names knows them as `clocks_throttle_reasons.*` (the same bits): asked
with those when the new names are refused. A value a GPU does not report
(`[N/A]`, `[Not Supported]`) is None.

Nothing here imports from the rest of specdsl but `hosts.base`, the
cell readers of `hosts.gpus` (and `stats` for the median).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from specdsl import stats
from specdsl.hosts.base import Host, HostError, ProcessHandle
from specdsl.hosts.gpus import smi_number, smi_value

INTERVAL_MS = 200
_PROBE_TIMEOUT_S = 30
_STOP_GRACE_S = 2.0
REASONS = ("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "sw_power_cap", "hw_power_brake_slowdown")
FIELDS = ("index", "clocks.sm", "clocks.mem", "power.draw", "temperature.gpu", "utilization.gpu",
          "clocks_event_reasons.active", *(f"clocks_event_reasons.{r}" for r in REASONS))
OLD_FIELDS = tuple(f.replace("clocks_event_reasons.", "clocks_throttle_reasons.") for f in FIELDS)
# NVML's bits of the reasons asked by name (nvmlClocksEventReasons): a row
# whose named columns are not reported still says them in its mask
REASON_BITS = {"sw_power_cap": 0x04, "hw_slowdown": 0x08, "sw_thermal_slowdown": 0x20,
               "hw_thermal_slowdown": 0x40, "hw_power_brake_slowdown": 0x80}


class SampleError(Exception):
    """nvidia-smi could not be asked, or printed what cannot be read."""


@attrs.frozen
class Sample:
    """One GPU at one moment; `reasons`: the slowdowns active (REASONS)."""

    index: int
    sm_mhz: float | None
    mem_mhz: float | None
    power_w: float | None
    temp_c: float | None
    util_pct: float | None
    mask: int | None
    reasons: tuple[str, ...] = ()


def parse_samples(text: str, strict: bool = True) -> list[Sample]:
    """The rows of the sampling query (FIELDS order), in order. A line that
    is not a row (a last line cut short when the sampler was stopped, a
    warning, the host's `$ argv` line) is skipped; `strict`: SampleError
    when no line is a row but some text is."""
    out: list[Sample] = []
    strays: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(FIELDS) or not cells[0].isdigit():
            strays.append(line.strip())
            continue
        try:
            mask = None if smi_value(cells[6]) is None else int(cells[6], 0)
        except ValueError:
            mask = None
        named = {r for r, cell in zip(REASONS, cells[7:]) if cell.strip().lower() == "active"}
        masked = {r for r, bit in REASON_BITS.items() if mask is not None and mask & bit}
        sm, mem, power, temp, util = (smi_number(c) for c in cells[1:6])
        out.append(Sample(int(cells[0]), sm, mem, power, temp, util, mask, tuple(r for r in REASONS if r in named | masked)))
    if strict and not out and strays:
        raise SampleError(f"nvidia-smi printed no GPU row: {strays[0][:200]!r}")
    return out


def summarize(samples: list[Sample], ids: tuple[int, ...] | None = None) -> dict[str, Any]:
    """Per GPU (of `ids`; None: every GPU sampled): how many samples, the
    SM clock's min and median, the memory clock's median, the most power
    and heat, the median utilization, and each slowdown reason with the
    number of samples it was active in (`reasons`, {} when none)."""
    by_gpu: dict[int, list[Sample]] = {}
    for s in samples:
        if ids is None or s.index in ids:
            by_gpu.setdefault(s.index, []).append(s)
    gpus = []
    for index in sorted(by_gpu):
        rows = by_gpu[index]

        def values(name: str) -> list[float]:
            return [getattr(r, name) for r in rows if getattr(r, name) is not None]

        sm, mem, power, temp, util = (values(n) for n in ("sm_mhz", "mem_mhz", "power_w", "temp_c", "util_pct"))
        gpu: dict[str, Any] = {"index": index, "samples": len(rows)}
        if sm:
            gpu.update(sm_mhz_min=min(sm), sm_mhz_median=stats.percentiles(sm, (50,))[0])
        if mem:
            gpu["mem_mhz_median"] = stats.percentiles(mem, (50,))[0]
        if power:
            gpu["power_w_max"] = max(power)
        if temp:
            gpu["temp_c_max"] = max(temp)
        if util:
            gpu["util_pct_median"] = stats.percentiles(util, (50,))[0]
        gpu["reasons"] = {r: n for r in REASONS if (n := sum(1 for x in rows if r in x.reasons))}
        gpus.append(gpu)
    return {"interval_ms": INTERVAL_MS, "gpus": gpus}


class Sampler:
    """nvidia-smi sampling on `host` while one run lasts: `start()` before
    it, `stop()` after it (its samples). `fields` are the names this host's
    nvidia-smi knows (`probe`)."""

    def __init__(self, host: Host, smi: str, fields: tuple[str, ...], log_path: Path):
        self.host, self.smi, self.fields, self.log_path = host, smi, fields, Path(log_path)
        self._handle: ProcessHandle | None = None

    def argv(self) -> list[str]:
        return [self.smi, "--query-gpu=" + ",".join(self.fields), "--format=csv,noheader,nounits", "-lms", str(INTERVAL_MS)]

    def start(self) -> None:
        try:
            self._handle = self.host.start(self.argv(), log_path=self.log_path)
        except HostError as exc:
            raise SampleError(f"nvidia-smi could not start: {exc}") from None

    def stop(self) -> list[Sample]:
        """Stop sampling; the samples taken. SampleError when nvidia-smi
        ended before it was stopped with nothing to read (it failed)."""
        handle, self._handle = self._handle, None
        if handle is None:
            return []
        ended = not self.host.alive(handle)
        try:
            self.host.stop(handle, grace_s=_STOP_GRACE_S)
        except HostError as exc:
            raise SampleError(f"nvidia-smi could not be stopped: {exc}") from None
        try:
            text = self.host.read_text(self.log_path)
        except FileNotFoundError:
            text = ""
        samples = parse_samples(text, strict=False)
        if ended and not samples:
            said = "\n".join(line for line in text.splitlines() if line.strip() and not line.startswith("$ "))
            raise SampleError(f"nvidia-smi ended at once: {said.strip()[-300:] or 'no output'}")
        return samples


def probe(host: Host, tmp: Path) -> tuple[str, tuple[str, ...]] | None:
    """(nvidia-smi's path, the field names it knows) on `host`, from one
    query of the sampling fields; None when the host has no nvidia-smi.
    SampleError when it is there and fails."""
    smi = host.which("nvidia-smi")
    if smi is None:
        return None
    said = ""
    for fields in (FIELDS, OLD_FIELDS):
        log = Path(tmp) / "nvidia-smi-probe.log"
        result = host.run([smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"],
                          log_path=log, timeout=_PROBE_TIMEOUT_S, framed=False)
        try:
            said = host.read_text(log)
        except FileNotFoundError:
            said = ""
        host.remove_tree(log)
        if result.timed_out:
            raise SampleError(f"nvidia-smi did not answer within {_PROBE_TIMEOUT_S}s")
        if result.returncode == 0:
            parse_samples(said)
            return smi, fields
        if "clocks_event_reasons" not in said:  # a failure that the old names will not mend
            break
    raise SampleError(f"nvidia-smi --query-gpu failed: {said.strip()[-300:] or 'no output'}")
