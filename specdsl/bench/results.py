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
    failure reasons and their counts."""


def _tuple_of_floats(values: Any) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


def _samples(value: Any) -> dict[str, tuple[float, ...]]:
    return {str(k): _tuple_of_floats(v) for k, v in dict(value).items()}


@attrs.frozen
class RunResult:
    """One repetition of a workload.

    `metrics`: scalar metrics (names in `METRICS`). `samples`: per-request
    values in ms for "ttft", "tpot", "e2el" and per-chunk values for "itl"
    (empty for a user's script). `failures`: reason -> count of failed
    requests. `records_file`: the JSONL file with every request's chunk
    timestamps ("" when there is none).
    """

    index: int
    metrics: dict[str, float] = attrs.field(converter=lambda d: {str(k): float(v) for k, v in d.items()})
    samples: dict[str, tuple[float, ...]] = attrs.field(factory=dict, converter=_samples)
    failures: dict[str, int] = attrs.field(factory=dict, converter=lambda d: {str(k): int(v) for k, v in d.items()})
    records_file: str = ""

    def to_json(self) -> dict:
        return {
            "index": self.index,
            "metrics": dict(sorted(self.metrics.items())),
            "samples": {k: list(v) for k, v in sorted(self.samples.items())},
            "failures": dict(sorted(self.failures.items())),
            "records_file": self.records_file,
        }

    @classmethod
    def from_json(cls, d: dict) -> RunResult:
        return cls(
            index=int(d["index"]),
            metrics=d.get("metrics", {}),
            samples=d.get("samples", {}),
            failures=d.get("failures", {}),
            records_file=d.get("records_file", ""),
        )


@attrs.frozen
class BenchResult:
    """Every run of one benchmark, in order. Serialised with `format_version`."""

    runs: tuple[RunResult, ...] = attrs.field(converter=tuple)

    def to_json(self) -> dict:
        return {"format_version": FORMAT_VERSION, "runs": [r.to_json() for r in self.runs]}

    @classmethod
    def from_json(cls, d: dict) -> BenchResult:
        version = d.get("format_version")
        if version != FORMAT_VERSION:
            raise ValueError(f"unsupported bench result format_version {version!r} (expected {FORMAT_VERSION})")
        return cls(runs=tuple(RunResult.from_json(r) for r in d["runs"]))


def describe_failures(failures: dict[str, int]) -> str:
    """`'http 422: ...' x3; timeout after 5s x1`, most frequent first."""
    items = sorted(failures.items(), key=lambda kv: (-kv[1], kv[0]))
    return "; ".join(f"{reason} x{count}" for reason, count in items)
