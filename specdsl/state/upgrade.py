"""Older state formats brought up to the current one, as plain TOML
documents, before the current reader checks them (specdsl.state.codec).

Format 1 kept a check's verdict as the line apply printed, in the run's
`reason` (`"pass: ratio 1.035 [0.9348, inf) >= 0.9, n=3 pairs: PASS (...)"`),
with some of its numbers as `evidence.*` metrics (by later versions of
format 1) and `pass` = 1 or 0. Format 2 keeps it as a `[runs.verdict]`
table. `v1_to_v2` moves each verdict there; nothing recorded is dropped:
the line becomes the verdict's `detail`, the numbers its `decision`. This
module is the one place that reads a verdict's prose, and only that of
files written before verdicts were structured.
"""

from __future__ import annotations

import copy
import re
from typing import Any

_STATUSES = ("pass", "fail", "inconclusive", "error")
_NUM = r"-?(?:inf|nan|[0-9.]+(?:e[+-]?[0-9]+)?)"
# the line specdsl.verdict.decision wrote: `ratio 1.035 [0.9348, inf) >= 0.9, n=3 pairs: PASS`
_LINE = re.compile(
    rf"^(?P<what>ratio|mean) (?P<est>{_NUM}) [\[(](?P<low>{_NUM}), (?P<high>{_NUM})[\])] (?P<op>>=|<=|>|<) (?P<k>{_NUM}), "
    r"n=(?P<n>\d+) (?P<unit>pairs|runs): (?P<status>[A-Z]+)"
)
_NEXT_LOOK = re.compile(r"^; next look at \d+ pairs")
_LEVEL = re.compile(r"one-sided, (?P<level>[0-9.]+)%")
_NEED = re.compile(r"a decision would need (?P<how>about|more than) (?P<n>\d+) pairs")
_DETECTABLE = "; detectable at this n:"
_EVIDENCE = ("estimate", "low", "high", "level", "n", "threshold", "mde", "noise")


def v1_to_v2(doc: dict) -> dict:
    """A format 1 document as format 2: every verdict run's `reason` and
    `pass`/`evidence.*` metrics become its `verdict` table. Anything not
    shaped like a verdict run is left for the reader to judge."""
    doc = copy.deepcopy(doc)
    runs = doc.get("runs")
    if isinstance(runs, list):
        for run in runs:
            if isinstance(run, dict):
                _upgrade_run(run)
    return doc


def _upgrade_run(run: dict) -> None:
    step, reason, metrics = run.get("step"), run.get("reason"), run.get("metrics", {})
    if not (isinstance(step, str) and step.startswith("check.") and run.get("status") == "completed"
            and isinstance(reason, str) and isinstance(metrics, dict)):
        return
    verdict = verdict_of_v1(step, reason, metrics)
    if verdict is None:
        return
    run["verdict"] = verdict
    run["reason"] = ""
    run["metrics"] = {k: v for k, v in metrics.items() if k != "pass" and not k.startswith("evidence.")}


def verdict_of_v1(step: str, reason: str, metrics: dict[str, Any]) -> dict | None:
    """The format 2 `verdict` table of a format 1 verdict run (check
    address, `reason` "STATUS: detail", metrics), None when `reason` is not
    a verdict. The numbers come from the `evidence.*` metrics where they
    were recorded, else from the line."""
    status, sep, detail = reason.partition(":")
    status, detail = status.strip(), detail.strip()
    if not sep or status not in _STATUSES:
        return None
    out: dict[str, Any] = {"name": step.rsplit(".", 1)[-1], "status": status, "detail": detail}
    evidence = {k[len("evidence."):]: v for k, v in metrics.items()
                if k.startswith("evidence.") and k[len("evidence."):] in _EVIDENCE and isinstance(v, (int, float))}
    line = _LINE.match(detail)
    out["gating"] = line is not None or bool(evidence)
    if "noise" in evidence:
        out["noise"] = float(evidence["noise"])
    need = _NEED.search(detail)
    if need is not None:
        out["needed"] = int(need["n"])
        if need["how"] == "more than":
            out["needed_beyond"] = True
    if line is not None:
        out["decision"] = _decision(detail, line, evidence)
    return out


def _decision(detail: str, line: re.Match, evidence: dict[str, float]) -> dict:
    method = _method(detail[line.end():])
    level = _LEVEL.search(method)
    d: dict[str, Any] = {
        "statistic": line["what"], "unit": line["unit"], "op": line["op"], "method": method,
        "estimate": float(line["est"]), "low": float(line["low"]), "high": float(line["high"]),
        "threshold": float(line["k"]), "n": int(line["n"]),
        "level": float(level["level"]) / 100 if level is not None else float("nan"),
        "detail": line.group(0),
    }
    for key in ("estimate", "low", "high", "level", "threshold", "mde"):
        if key in evidence:  # recorded to full precision: better than the line's 4 digits
            d[key] = float(evidence[key])
    if "n" in evidence:
        d["n"] = int(evidence["n"])
    return d


def _method(rest: str) -> str:
    """The method named in parentheses after the verdict word
    (`" (paired t on log ratios, one-sided, 95%; detectable at this n: ...)"`),
    its own parentheses kept; "" when there is none."""
    rest = _NEXT_LOOK.sub("", rest)
    if not rest.startswith(" ("):
        return ""
    depth = 0
    for i, ch in enumerate(rest[1:], 1):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return rest[2:i].split(_DETECTABLE, 1)[0]
    return ""
