"""What a diagnosis is: the differences between two arms, ranked.

Plain frozen values, so a report can render them and `--json` can print
them (`Diagnosis.to_json`, format_version 1).
"""

from __future__ import annotations

from typing import Any

import attrs

FORMAT_VERSION = 1
CATEGORIES = ("effective", "server_args", "stack", "env", "host", "workload", "log")


@attrs.frozen
class Difference:
    """One thing that differs between the baseline and the candidate.

    `category` is one of CATEGORIES; `key` what differs within it (an
    effective key `attention_backend`, a flag `continuous-batching`, a
    package `torch`, `CUDA_HOME`, a warning's text for "log");
    `baseline`/`candidate` the values as text (None: absent on that side);
    `silent_default` that a side's value was chosen by the server, not by
    the spec; `why` one line on why it may matter; `rank` its place, 0 the
    most likely cause (docs/diagnose.md); `tier` the rule that placed it;
    `bisectable` that an experiment can change it alone (bisect's input);
    `seen` for a log fact, the launches whose log says it ("4 of 4
    launches: 1, 3, 5, 7"); `quote` the server log's own words behind a
    value (cut to the fragment that says it); `hidden` why it is left out
    of the list unless asked for (`--all`): noise, or said by another line;
    `members` the (key, value) pairs one line stands for (the flags a
    release added, each at its default: one fact, said once)."""

    category: str = attrs.field(validator=attrs.validators.in_(CATEGORIES))
    key: str
    baseline: str | None
    candidate: str | None
    silent_default: bool = False
    why: str = ""
    rank: int = 0
    tier: int = 0
    bisectable: bool = False
    seen: str = ""
    quote: str = ""
    hidden: str = ""
    members: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=tuple)

    @property
    def label(self) -> str:
        return f"{self.category}.{self.key}"

    def change(self) -> str:
        """`'flashinfer' -> 'triton'`, with (unset) for an absent side."""
        return f"{_show(self.baseline)} -> {_show(self.candidate)}"

    def line(self) -> str:
        """One line: key, change, the server-default mark and why."""
        if self.category == "log" and (self.baseline is None or self.candidate is None):
            where = "candidate only" if self.baseline is None else "baseline only"
            where += f", {self.seen}" if self.seen else ""
            return f"log ({where}): {self.key}" + (f"  ({self.why})" if self.why else "")
        if self.members:  # "sglang 0.5.9 adds 6 flags, all at their defaults: a=false, ..."
            return f"{self.key}: {', '.join(f'{k}={v}' for k, v in self.members)}" + (f"  ({self.why})" if self.why else "")
        mark = "  [server default]" if self.silent_default else ""
        quote = f'  log: "{self.quote}"' if self.quote else ""
        return f"{self.label}: {self.change()}{mark}{quote}" + (f"  ({self.why})" if self.why else "")

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "key": self.key, "baseline": self.baseline, "candidate": self.candidate,
                "silent_default": self.silent_default, "why": self.why, "rank": self.rank, "tier": self.tier,
                "bisectable": self.bisectable, "seen": self.seen, "quote": self.quote, "hidden": self.hidden,
                "members": [{"key": k, "value": v} for k, v in self.members]}


def _show(value: str | None) -> str:
    return "(unset)" if value is None else value


@attrs.frozen
class Diagnosis:
    """The differences between `baseline` and `candidate` (labels: their
    experiments or run ids), best-ranked first; `notes` what could not be
    read (a log gone, no environment record), so a short list is not
    mistaken for a complete one."""

    baseline: str
    candidate: str
    differences: tuple[Difference, ...] = attrs.field(default=(), converter=tuple)
    notes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    runs: tuple[str, str] = ("", "")  # (baseline run id, candidate run id)
    metrics: tuple[tuple[str, float | None, float | None], ...] = ()  # (name, baseline, candidate)
    hidden: tuple[Difference, ...] = attrs.field(default=(), converter=tuple)  # noise, or said by another line
    metrics_are: str = ""  # what each metric figure is (METRICS_ARE)

    def top(self, n: int = 3) -> tuple[Difference, ...]:
        return self.differences[:n]

    def bisectable(self) -> tuple[Difference, ...]:
        """What an experiment can change alone: shown, or hidden as said by
        another line (a declared `packages.sglang` behind its resolved
        version), never noise. In a fixed order (category, then key), not
        by rank: bisect's experiments do not move when the ranking does."""
        found = [d for d in self.differences + self.hidden if d.bisectable and not d.hidden.startswith("noise")]
        return tuple(sorted(found, key=lambda d: (CATEGORIES.index(d.category), d.key)))

    def to_json(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "baseline": {"name": self.baseline, "run": self.runs[0]},
            "candidate": {"name": self.candidate, "run": self.runs[1]},
            "metrics": [{"name": n, "baseline": b, "candidate": c} for n, b, c in self.metrics],
            "metrics_are": self.metrics_are,
            "differences": [d.to_json() for d in self.differences],
            "hidden": [d.to_json() for d in self.hidden],
            "notes": list(self.notes),
        }
