"""What a benchmark produces: per-run metrics and samples, and the error
raised when a benchmark yields no data.

`METRICS` (from `specdsl.model.metrics`) is the vocabulary the spec
language validates metric names against. Metric definitions follow `vllm bench serve`
(vllm/benchmarks/serve.py); see `specdsl.bench.stats`.
"""

from __future__ import annotations

from typing import Any

import attrs

# One vocabulary for the language, the checks and the client.
from specdsl.model.metrics import DISTRIBUTIONS as _DISTRIBUTION_UNITS
from specdsl.model.metrics import METRICS, STATS  # noqa: F401  (re-exported)

FORMAT_VERSION = 1
DISTRIBUTIONS = tuple(_DISTRIBUTION_UNITS)


class BenchError(Exception):
    """A benchmark that produced no usable data: every request failed, the
    server could not be reached, the user's script failed or a metric was
    missing from its output. The message says what failed and why, with
    failure reasons and their counts. `runs`: the runs that ended before it
    (set by the load generator; nothing measured is lost)."""

    runs: tuple = ()


class Unsettled(BenchError):
    """A warm-up that did not leave a steady launch by `warmup_time`
    (specdsl.bench.steady): the launch is dropped, never measured. `reason`
    says why; `log_lines` the compile lines the log gained during the
    warm-up; `warmup` what it sent (as `warm_up` returns)."""

    def __init__(self, reason: str, log_lines: tuple[str, ...] = (), warmup: dict | None = None) -> None:
        super().__init__(reason)
        self.reason, self.log_lines, self.warmup = reason, log_lines, dict(warmup or {})


def _tuple_of_floats(values: Any) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


def _samples(value: Any) -> dict[str, tuple[float, ...]]:
    return {str(k): _tuple_of_floats(v) for k, v in dict(value).items()}


def _plain_dict(value: Any) -> dict:
    return dict(value or {})


@attrs.frozen
class RunResult:
    """One repetition of a workload.

    `metrics`: scalar metrics (names in `METRICS`). `samples`: per-request
    values in ms for "ttft", "tpot", "e2el" and per-chunk values for "itl"
    (empty for a user's script). `failures`: reason -> count of failed
    requests. `records_file`: the JSONL file with every request's chunk
    timestamps ("" when there is none).

    What the run was made of, for the built-in load generator (empty for a
    user's script and in results written before they were recorded):
    `prompts` how its prompts were made (`fresh`, `seed`, `run`,
    `prompt_seed`; see specdsl.bench.datasets); `cache_reset` what became
    of the server's prefix cache before it ("done", "not offered: ...",
    "failed: ..."; see specdsl.bench.serverside); `server` what was read from
    the server's /metrics (`metrics`: "read" or why not; `counters`: each
    counter's increase over the run; `gauges`: values after it); `client`
    the client's own load (specdsl.bench.monitor); `conditions` what each
    run watch saw while it lasted, by its key (`gpu`: the GPUs' clocks,
    power and slowdowns; specdsl.bench.conditions); `host` what else
    the machine was doing during the run (specdsl.bench.hostload:
    `other_cores`, ...; empty where it was not read); `warnings`, e.g.
    `client-bound: ...`. `invalid`: why the run is not a measurement ('':
    valid; specdsl.bench.validity): no verdict reads an invalid run.
    """

    index: int
    metrics: dict[str, float] = attrs.field(converter=lambda d: {str(k): float(v) for k, v in d.items()})
    samples: dict[str, tuple[float, ...]] = attrs.field(factory=dict, converter=_samples)
    failures: dict[str, int] = attrs.field(factory=dict, converter=lambda d: {str(k): int(v) for k, v in d.items()})
    records_file: str = ""
    prompts: dict[str, Any] = attrs.field(factory=dict, converter=_plain_dict)
    cache_reset: str = ""
    server: dict[str, Any] = attrs.field(factory=dict, converter=_plain_dict)
    client: dict[str, Any] = attrs.field(factory=dict, converter=_plain_dict)
    conditions: dict[str, Any] = attrs.field(factory=dict, converter=_plain_dict)
    host: dict[str, Any] = attrs.field(factory=dict, converter=_plain_dict)
    warnings: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    invalid: str = ""

    def to_json(self) -> dict:
        out = {
            "index": self.index,
            "metrics": dict(sorted(self.metrics.items())),
            "samples": {k: list(v) for k, v in sorted(self.samples.items())},
            "failures": dict(sorted(self.failures.items())),
            "records_file": self.records_file,
        }
        for key in ("prompts", "cache_reset", "server", "client", "conditions", "host"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.invalid:
            out["invalid"] = self.invalid
        return out

    @classmethod
    def from_json(cls, d: dict) -> RunResult:
        return cls(
            index=int(d["index"]),
            metrics=d.get("metrics", {}),
            samples=d.get("samples", {}),
            failures=d.get("failures", {}),
            records_file=d.get("records_file", ""),
            prompts=d.get("prompts", {}),
            cache_reset=d.get("cache_reset", ""),
            server=d.get("server", {}),
            client=d.get("client", {}),
            conditions=d.get("conditions", {}),
            host=d.get("host", {}),
            warnings=d.get("warnings", ()),
            invalid=d.get("invalid", ""),
        )


@attrs.frozen
class BenchResult:
    """Every run of one benchmark, in order. Serialised with `format_version`.

    `settings`: what the requests asked for and how they were made, so that
    a diff of two results shows it (see `specdsl.bench.settings`); empty for
    a user's script and in results written before it was recorded."""

    runs: tuple[RunResult, ...] = attrs.field(converter=tuple)
    settings: dict[str, Any] = attrs.field(factory=dict, converter=_plain_dict)

    def to_json(self) -> dict:
        out = {"format_version": FORMAT_VERSION, "runs": [r.to_json() for r in self.runs]}
        if self.settings:
            out["settings"] = self.settings
        return out

    @classmethod
    def from_json(cls, d: dict) -> BenchResult:
        version = d.get("format_version")
        if version != FORMAT_VERSION:
            raise ValueError(f"unsupported bench result format_version {version!r} (expected {FORMAT_VERSION})")
        return cls(runs=tuple(RunResult.from_json(r) for r in d["runs"]), settings=d.get("settings", {}))

    def warnings(self) -> list[str]:
        """Each run's warnings, as `run N: ...`."""
        return [f"run {r.index}: {w}" for r in self.runs for w in r.warnings]

    def peak_rate(self) -> float:
        """The most requests a second any of its runs sent (completed and
        failed, over its duration; 0 without one): what a later call on
        the same server takes as its `rate_hint` (specdsl.bench.loadgen)."""
        return max([(r.metrics.get("completed", 0.0) + r.metrics.get("failed", 0.0)) / r.metrics["duration"]
                    for r in self.runs if r.metrics.get("duration")] + [0.0])


def describe_failures(failures: dict[str, int]) -> str:
    """`'http 422: ...' x3; timeout after 5s x1`, most frequent first."""
    items = sorted(failures.items(), key=lambda kv: (-kv[1], kv[0]))
    return "; ".join(f"{reason} x{count}" for reason, count in items)


def stamped(doc: dict) -> dict:
    """A result document with the version of specdsl that measured it (a
    page attached to a release names it; readers ignore the key)."""
    from specdsl import __version__

    return {**doc, "specdsl": __version__}
