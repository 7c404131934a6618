"""Per-request records: what each request did, with the arrival time of
every streamed chunk, kept as JSONL so any statistic can be recomputed.

File layout (one JSON object per line):
  line 1: {"format_version": 1, "kind": "run", "run": INDEX, "duration_s": ..., ...}
  (with "window_s" for a run of `duration`: its throughputs are read over
  that window, specdsl.bench.stats)
  then one line per measured request (warmup requests are not written):
  {"i": N, "ok": bool, "reason": str|null, "status": int|null,
   "start_s": seconds from the run's start to the request being sent,
   "end_s": seconds from the run's start to the request's end (its stream
   read, or its failure; absent in records written before it was kept),
   "chunks_s": [seconds from send to each token-carrying chunk],
   "output_tokens": int, "tokens_from": "usage"|"tokenizer"|"chunks",
   "prompt_tokens": int}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specdsl import private

RECORDS_FORMAT_VERSION = 1


@dataclass(slots=True)
class RequestTiming:
    """One request. `chunks_s` are the perf_counter offsets (s) from the
    moment the request was sent to the arrival of each chunk whose `choices`
    were non-empty (the chunks `vllm bench serve` times)."""

    i: int
    start_s: float = 0.0
    end_s: float = 0.0  # from the run's start to the request's end (0: not recorded)
    ok: bool = False
    reason: str | None = None
    status: int | None = None
    chunks_s: list[float] = field(default_factory=list)
    output_tokens: int = 0
    tokens_from: str = "chunks"
    prompt_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "i": self.i,
            "ok": self.ok,
            "reason": self.reason,
            "status": self.status,
            "start_s": round(self.start_s, 9),
            "end_s": round(self.end_s, 9),
            "chunks_s": [round(t, 9) for t in self.chunks_s],
            "output_tokens": self.output_tokens,
            "tokens_from": self.tokens_from,
            "prompt_tokens": self.prompt_tokens,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RequestTiming:
        return cls(
            i=int(d["i"]),
            start_s=float(d["start_s"]),
            end_s=float(d.get("end_s", 0.0)),
            ok=bool(d["ok"]),
            reason=d.get("reason"),
            status=d.get("status"),
            chunks_s=[float(t) for t in d.get("chunks_s", [])],
            output_tokens=int(d.get("output_tokens", 0)),
            tokens_from=str(d.get("tokens_from", "chunks")),
            prompt_tokens=int(d.get("prompt_tokens", 0)),
        )


def write_records(path: Path, header: dict[str, Any], records: list[RequestTiming]) -> None:
    """Write the header line and one line per record; atomic (temp + rename)."""
    private.make_dirs(path.parent)
    head = {"format_version": RECORDS_FORMAT_VERSION, "kind": "run", **header}
    with private.replacing(path) as f:  # 0600, whatever the umask
        f.write(json.dumps(head, sort_keys=True) + "\n")
        for rec in sorted(records, key=lambda r: r.i):
            f.write(json.dumps(rec.to_json(), separators=(",", ":")) + "\n")


def read_records(path: Path) -> tuple[dict[str, Any], list[RequestTiming]]:
    """The header and the records of a file written by `write_records`."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if not lines:
        raise ValueError(f"{path}: empty records file")
    header = json.loads(lines[0])
    if header.get("format_version") != RECORDS_FORMAT_VERSION:
        raise ValueError(f"{path}: unsupported records format_version {header.get('format_version')!r}")
    return header, [RequestTiming.from_json(json.loads(line)) for line in lines[1:] if line.strip()]
