"""The result of a paired benchmark, typed: what its `result.json` holds
(specdsl.apply.steps.paired and .endpoint write it; docs/apply.md), read
through one reader, `PairedResult.of`.

A paired result holds every run in the order it ran (`runs`, each as the
load generator's run document: `bench.RunResult.to_json`), its complete
`pairs` (each with one `Block` per arm: the arm's run indexes and the
launch that served them), its `launches` (per launch its arm, pair,
command line, log, `launch_s` and `run_s`, its effective configuration,
why it was dropped), the arms' names and last effective configuration,
and what the walk decided of it (`looks`, `continued`, `shared`,
`stopped`, `budget`, `gpu_facts`).

Every record keeps the keys it does not name in `other`, and a key that
was absent stays absent: `to_json` gives back the document it was read
from, key for key (tests/apply/test_paired_result.py holds a recorded one
to it). Pure: attrs and the document, nothing of specdsl; it sits at the
bottom of the layers so that plan, apply, diagnose, report and operations
read one type.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

BASELINE, CANDIDATE = "A", "B"


def _split(doc: Mapping, known: tuple[str, ...]) -> tuple[dict, dict]:
    """(the known keys present in `doc`, the others)."""
    return {k: doc[k] for k in known if k in doc}, {k: v for k, v in doc.items() if k not in known}


def _put(out: dict, **fields) -> dict:
    """`out` with each field that is not None (an absent key stays absent)."""
    out.update({k: v for k, v in fields.items() if v is not None})
    return out


@attrs.frozen
class Block:
    """One arm's runs in one pair, on one launch (`launch` None: an
    existing server's, of an endpoint pair). `remeasured`: its runs a
    burst invalidated, measured again (specdsl.apply.bursts); None when
    none was."""

    arm: str
    runs: tuple[int, ...]
    launch: int | None = None
    remeasured: tuple[int, ...] | None = None
    other: Mapping[str, Any] = attrs.field(factory=dict)

    _KEYS = ("arm", "runs", "launch", "remeasured")

    @classmethod
    def of(cls, doc: Mapping) -> "Block":
        known, other = _split(doc, cls._KEYS)
        re = known.get("remeasured")
        return cls(str(known.get("arm", "")), tuple(int(i) for i in known.get("runs", ())), known.get("launch"),
                   tuple(int(i) for i in re) if re is not None else None, other)

    def to_json(self) -> dict:
        out = {"arm": self.arm, "runs": list(self.runs), "launch": self.launch}
        return _put(out, remeasured=list(self.remeasured) if self.remeasured is not None else None) | dict(self.other)


@attrs.frozen
class Pair:
    """Pair `pair` (0-based): one block per arm when complete."""

    pair: int
    blocks: tuple[Block, ...]
    other: Mapping[str, Any] = attrs.field(factory=dict)

    @classmethod
    def of(cls, doc: Mapping) -> "Pair":
        known, other = _split(doc, ("pair", "blocks"))
        return cls(int(known.get("pair", -1)), tuple(Block.of(b) for b in known.get("blocks", ())), other)

    @property
    def complete(self) -> bool:
        return len(self.blocks) == 2

    def block(self, arm: str) -> Block | None:
        return next((b for b in self.blocks if b.arm == arm), None)

    def launches(self) -> dict[str, int | None]:
        """Each arm's launch in this pair."""
        return {b.arm: b.launch for b in self.blocks}

    def to_json(self) -> dict:
        return {"pair": self.pair, "blocks": [b.to_json() for b in self.blocks]} | dict(self.other)


@attrs.frozen
class Launch:
    """One server launch of a paired benchmark: its arm (A or B), its
    pair, and what was recorded of it; the rest (GPU and cache facts, the
    warm-up, the log lines of a dropped one) in `other`."""

    arm: str
    pair: int | None = None
    argv: tuple[str, ...] | None = None
    log: str | None = None
    launch_s: float | None = None  # start to ready
    run_s: tuple[float, ...] | None = None  # each run's wall time on it
    effective: Mapping[str, Any] | None = None  # its effective configuration (redacted)
    dropped: str | None = None  # why its warm-up did not settle: never measured
    jit_cache: str | None = None
    other: Mapping[str, Any] = attrs.field(factory=dict)

    _KEYS = ("arm", "pair", "argv", "log", "launch_s", "run_s", "effective", "dropped", "jit_cache")

    @classmethod
    def of(cls, doc: Mapping) -> "Launch":
        k, other = _split(doc, cls._KEYS)
        return cls(str(k.get("arm", "")), k.get("pair"),
                   tuple(k["argv"]) if isinstance(k.get("argv"), list) else k.get("argv"),
                   k.get("log"), k.get("launch_s"),
                   tuple(k["run_s"]) if isinstance(k.get("run_s"), list) else k.get("run_s"),
                   k.get("effective"), k.get("dropped"), k.get("jit_cache"), other)

    def to_json(self) -> dict:
        out = {"arm": self.arm}
        return _put(out, pair=self.pair, argv=list(self.argv) if isinstance(self.argv, tuple) else self.argv,
                    log=self.log, launch_s=self.launch_s,
                    run_s=list(self.run_s) if isinstance(self.run_s, tuple) else self.run_s,
                    effective=self.effective, dropped=self.dropped, jit_cache=self.jit_cache) | dict(self.other)

    def timed_launch(self) -> float | None:
        """`launch_s` when it is a number."""
        v = self.launch_s
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def timed_runs(self) -> tuple[float, ...]:
        """The numbers of `run_s`."""
        return tuple(float(t) for t in (self.run_s or ()) if isinstance(t, (int, float)) and not isinstance(t, bool))


_TOP = ("runs", "pairs", "arms", "launches", "effective", "design", "looks", "side_by_side", "specdsl",
        "continued", "shared", "stopped", "budget", "gpu_facts", "unit")


@attrs.frozen
class PairedResult:
    """A paired benchmark's `result.json`, typed (see the module)."""

    runs: tuple[Mapping[str, Any], ...]  # every run kept, as bench.RunResult.to_json wrote it
    pairs: tuple[Pair, ...]
    arms: Mapping[str, str] | None = None  # A/B -> experiment name
    launches: tuple[Launch, ...] | None = None
    effective: Mapping[str, Any] | None = None  # A/B -> the arm's last effective configuration
    design: str | None = None
    looks: Mapping[str, Any] | None = None
    side_by_side: bool | None = None
    specdsl: str | None = None  # the version that wrote it
    continued: int | None = None  # pairs an earlier apply recorded
    shared: Mapping[str, Any] | None = None  # measured in blocks shared with other comparisons
    stopped: str | None = None  # why measuring stopped before the verdicts were decided
    budget: Mapping[str, Any] | None = None  # why its budget stopped it (apply.budget)
    gpu_facts: Mapping[str, Any] | None = None
    unit: str | None = None  # "run": an endpoint pair's block is one run on a server that stays up
    other: Mapping[str, Any] = attrs.field(factory=dict)

    @classmethod
    def of(cls, doc: Mapping | None) -> "PairedResult | None":
        """The one reader: the paired result `doc` holds, None when `doc`
        is None or not a paired result (a plain benchmark's has no `pairs`)."""
        if not isinstance(doc, Mapping) or not isinstance(doc.get("pairs"), list):
            return None
        k, other = _split(doc, _TOP)
        launches = k.get("launches")
        return cls(tuple(k.get("runs", ())), tuple(Pair.of(p) for p in k["pairs"]), k.get("arms"),
                   tuple(Launch.of(x) for x in launches) if launches is not None else None,
                   k.get("effective"), k.get("design"), k.get("looks"), k.get("side_by_side"), k.get("specdsl"),
                   k.get("continued"), k.get("shared"), k.get("stopped"), k.get("budget"), k.get("gpu_facts"),
                   k.get("unit"), other)

    def to_json(self) -> dict:
        out = {"runs": [dict(r) for r in self.runs], "pairs": [p.to_json() for p in self.pairs]}
        launches = [x.to_json() for x in self.launches] if self.launches is not None else None
        return _put(out, arms=self.arms, launches=launches, effective=self.effective, design=self.design,
                    looks=self.looks, side_by_side=self.side_by_side, specdsl=self.specdsl,
                    continued=self.continued, shared=self.shared, stopped=self.stopped, budget=self.budget,
                    gpu_facts=self.gpu_facts, unit=self.unit) | dict(self.other)

    # what its readers ask of it

    def name(self, arm: str, default=""):
        """The experiment arm `arm` measured (`default` when not recorded)."""
        got = (self.arms or {}).get(arm)
        return str(got) if got is not None else default

    def effective_of(self, arm: str) -> Mapping[str, Any]:
        return (self.effective or {}).get(arm) or {}

    def complete_pairs(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.complete)

    def blocks(self) -> Iterator[tuple[Pair, Block]]:
        """Every (pair, block), in order."""
        for p in self.pairs:
            for b in p.blocks:
                yield p, b

    def run_indexes(self, arm: str | None = None) -> set[int]:
        """The indexes of the runs the pairs' blocks read (of arm `arm`)."""
        return {i for _p, b in self.blocks() if arm is None or b.arm == arm for i in b.runs}

    def where(self) -> dict[int, tuple[Pair, Block]]:
        """Each run index the blocks read -> its pair and block."""
        return {i: (p, b) for p, b in self.blocks() for i in b.runs}

    def launches_of(self, arm: str) -> list[tuple[int, Launch]]:
        """(launch number, launch) of arm `arm`'s launches, in order."""
        return [(k, x) for k, x in enumerate(self.launches or ()) if x.arm == arm]
