"""The engines' own benchmark clients as a command workload reads them
(`metrics = "vllm-bench-serve"`): which options make each client write its
result file, and which field of that file gives which specdsl metric.

Pure data loading (bench-clients.tsv, bench-client-metrics.tsv, each
naming the source it was read from); specdsl.bench.command reads a run's
result file with `PRESETS[name]`, validation checks a preset's name and
its command with it.
"""

from __future__ import annotations

import functools
from pathlib import Path

import attrs

READS = ("required", "optional", "count_nonempty")


@attrs.frozen
class PresetField:
    """Where `metric` comes from: `field` of the result object, read as
    `read` (one of READS)."""

    metric: str
    field: str
    read: str


@attrs.frozen
class ClientPreset:
    """One client: `name` (the spec's `metrics = NAME`), `client` (how its
    users run it), `writes` (the options that make it write the result
    file, the last one taking `{result_file}`), `source` (the file of the
    engine's repository it was read from) and `fields` in the order tried."""

    name: str
    client: str
    writes: tuple[str, ...]
    source: str
    fields: tuple[PresetField, ...]

    @property
    def metrics(self) -> tuple[str, ...]:
        """The specdsl metrics this preset can give, in the order first named."""
        return tuple(dict.fromkeys(f.metric for f in self.fields))

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.metric for f in self.fields if f.read == "required"))


def _rows(name: str) -> list[list[str]]:
    text = (Path(__file__).parent / name).read_text()
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    return rows[1:]  # the header


@functools.cache
def presets() -> dict[str, ClientPreset]:
    """Every preset by name."""
    fields: dict[str, list[PresetField]] = {}
    for preset, metric, field, read in _rows("bench-client-metrics.tsv"):
        if read not in READS:
            raise ValueError(f"bench-client-metrics.tsv: {preset} {metric}: unknown read {read!r}")
        fields.setdefault(preset, []).append(PresetField(metric, field, read))
    out = {}
    for preset, client, writes, source in _rows("bench-clients.tsv"):
        out[preset] = ClientPreset(preset, client, tuple(writes.split()), source, tuple(fields.pop(preset, ())))
    if fields:
        raise ValueError(f"bench-client-metrics.tsv: presets without a client row: {', '.join(sorted(fields))}")
    return out


def preset_names() -> tuple[str, ...]:
    return tuple(sorted(presets()))
