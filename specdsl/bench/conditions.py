"""What went on around a run while it lasted, and whether that disturbed it.

A *run watch* is told when each measured run begins and ends (the load
generator calls it around the run's requests, after the cache reset and
the counters are read) and gives, at the end, a record kept with the run
(`RunResult.conditions[watch.key]`) and why the run is not a measurement
('' when it is one: specdsl.bench.validity's path, as failed requests).
Watches are independent: each says its own reason, the run's `invalid`
joins them. A further source of invalidity (say, the engine's log showing
a JIT compile inside the run) is one more watch with its own key.

`GpuWatch` samples the server's GPUs with nvidia-smi (specdsl.hosts.
gpu_samples) through the host the server runs on. A run during which a GPU
slowed its clocks for heat or a power brake (`SLOWDOWNS`, any sample), or
was held at its power limit for most of the run (`sw_power_cap` in more
than `POWER_CAP_SHARE` of the samples), is invalid: its numbers are the
slowed GPU's, not the configuration's. A power cap now and then is how a
GPU-bound GPU runs, not a disturbance: on the H200 every run of an 8B model
at full load had `sw_power_cap` in 4-6 of 41-47 samples (the SM clock
dipping to 1,500-1,620 MHz, its median at the 1,980 MHz maximum), runs one
launch within 1% of each other (docs/gpu-run.md); such a run stands, its
record keeps the count. Where there is no nvidia-smi the record says `not
sampled` (with why) and the run stands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from specdsl.hosts import Host
from specdsl.hosts import gpu_samples as gs

# every reason sampled: hardware slowdown (heat, power brake, fast power
# trigger), software and hardware thermal slowdown, the software power cap,
# the power brake. Idle, application clocks, sync boost are not slowdowns.
SLOWDOWNS = tuple(r for r in gs.REASONS if r != "sw_power_cap")
# the power cap disturbs a run only when it holds the clocks down for most of it
POWER_CAP_SHARE = 0.5
NOT_SAMPLED = "not sampled"


class RunWatch(Protocol):
    key: str

    def begin(self, index: int) -> None:
        """The run `index` starts now."""
        ...

    def end(self, index: int) -> tuple[dict[str, Any], str]:
        """The run `index` ended: (its record, why it is invalid or '')."""
        ...


def slowdown_reason(summary: dict[str, Any]) -> str:
    """`gpu-slowdown: GPU 0: sw_power_cap in 7 of 40 samples (...)` for
    each GPU of a summary (gpu_samples.summarize) that slowed, joined; ''
    when none did."""
    out = []
    for gpu in summary.get("gpus", ()):
        seen = {r: n for r, n in gpu.get("reasons", {}).items()
                if r in SLOWDOWNS or (r == "sw_power_cap" and n > POWER_CAP_SHARE * gpu["samples"])}
        if not seen:
            continue
        what = ", ".join(f"{r} in {n} of {gpu['samples']} samples" for r, n in seen.items())
        facts = []
        if "sm_mhz_min" in gpu:
            facts.append(f"SM clock {gpu['sm_mhz_min']:g}-{gpu['sm_mhz_median']:g} MHz min-median")
        if "power_w_max" in gpu:
            facts.append(f"power up to {gpu['power_w_max']:g} W")
        if "temp_c_max" in gpu:
            facts.append(f"{gpu['temp_c_max']:g} C at most")
        out.append(f"GPU {gpu['index']}: {what}" + (f" ({', '.join(facts)})" if facts else ""))
    if not out:
        return ""
    return "gpu-slowdown: " + "; ".join(out) + ": the GPU slowed its clocks during the run, its numbers are not the configuration's"


class GpuWatch:
    """Sample the GPUs `ids` of `host` (None: every GPU it lists) during
    each run with nvidia-smi at `smi`, asking `fields` (gpu_samples.probe),
    the samples of run N written to `folder/run-N.gpu.csv` on the host.
    With `smi` None nothing is sampled and every record says `why`."""

    key = "gpu"

    def __init__(self, host: Host | None, smi: str | None, fields: tuple[str, ...], folder: Path | None,
                 ids: tuple[int, ...] | None = None, why: str = ""):
        self.host, self.smi, self.fields, self.folder, self.ids, self.why = host, smi, fields, folder, ids, why
        self._sampler: gs.Sampler | None = None
        self._error = ""

    @classmethod
    def not_sampled(cls, why: str) -> "GpuWatch":
        return cls(None, None, (), None, why=why)

    def begin(self, index: int) -> None:
        self._sampler, self._error = None, ""
        if self.smi is None or self.host is None or self.folder is None:
            return
        sampler = gs.Sampler(self.host, self.smi, self.fields, Path(self.folder) / f"run-{index}.gpu.csv")
        try:
            sampler.start()
        except gs.SampleError as exc:
            self._error = str(exc)
            return
        self._sampler = sampler

    def end(self, index: int) -> tuple[dict[str, Any], str]:
        if self.smi is None:
            return {"sampled": f"{NOT_SAMPLED}: {self.why}" if self.why else NOT_SAMPLED}, ""
        sampler, self._sampler = self._sampler, None
        if sampler is None:
            return {"sampled": f"{NOT_SAMPLED}: {self._error}"}, ""
        try:
            samples = sampler.stop()
        except gs.SampleError as exc:  # the sampler broke: the run is not judged by it
            return {"sampled": f"{NOT_SAMPLED}: {exc}"}, ""
        summary = gs.summarize(samples, self.ids)
        record = {"sampled": "nvidia-smi", "file": str(sampler.log_path), **summary}
        return record, slowdown_reason(summary)
