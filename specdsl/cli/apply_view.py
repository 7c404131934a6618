"""Apply's terminal view: one line when a step starts and ends (status,
elapsed), a live status line for long steps on a terminal (installer
output, requests done), and the closing summary with every verdict (under
a FAIL, the top differences from its baseline: `short_lines`)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from specdsl.apply.outcome import Outcome, Status

_MARK = {Status.COMPLETED: "[green]✓[/]", Status.REUSED: "[cyan]=[/]", Status.FAILED: "[red]✗[/]",
         Status.SKIPPED: "[yellow]-[/]", Status.INTERRUPTED: "[yellow]![/]"}
_VERDICT_MARK = {"pass": "[green]✓[/]", "fail": "[red]✗[/]", "inconclusive": "[yellow]?[/]", "error": "[red]![/]"}
PLAIN_PROGRESS_EVERY_S = 10.0
ADDR_WIDTH = 40  # addresses up to this width keep the columns after them aligned


class ConsoleHooks:
    """Thread-safe progress on stderr."""

    def __init__(self, stream=None, width: int = ADDR_WIDTH) -> None:
        self.width = width
        self.console = Console(file=stream or sys.stderr, highlight=False, soft_wrap=True)
        self.live = self.console.is_terminal
        self._lock = threading.Lock()
        self._started: dict[str, float] = {}
        self._last_plain: dict[str, float] = {}
        self._status = self.console.status("") if self.live else None
        self._active: dict[str, str] = {}
        if self._status is not None:
            self._status.start()

    def _refresh(self) -> None:
        if self._status is not None:
            text = " | ".join(f"{a}: {m}"[:80] for a, m in self._active.items()) or "working"
            self._status.update(text)

    def start(self, addr: str, kind: str) -> None:
        with self._lock:
            self._started[addr] = time.monotonic()
            self._active[addr] = "started"
            self.console.print(f"  [bold]…[/] {escape(addr)}")
            self._refresh()

    def progress(self, addr: str, message: str) -> None:
        with self._lock:
            self._active[addr] = message.strip().splitlines()[-1] if message.strip() else ""
            if self._status is not None:
                self._refresh()
                return
            now = time.monotonic()
            if now - self._last_plain.get(addr, 0.0) >= PLAIN_PROGRESS_EVERY_S:
                self._last_plain[addr] = now
                self.console.print(f"    {addr}: {self._active[addr]}", markup=False)

    def finish(self, outcome: Outcome) -> None:
        with self._lock:
            self._active.pop(outcome.addr, None)
            mark = _VERDICT_MARK.get(outcome.verdict) or _MARK.get(outcome.status, "?")
            elapsed = f"{outcome.elapsed:6.1f}s" if outcome.elapsed else "       "
            first = outcome.detail.splitlines()[0] if outcome.detail else ""
            self.console.print(f"  {mark} ", end="")
            self.console.print(f"{outcome.addr:<{self.width}}  {elapsed}  {first}", markup=False)
            if outcome.status is Status.FAILED:
                for line in outcome.detail.splitlines()[1:]:
                    self.console.print("      " + line, markup=False)
            self._refresh()

    def note(self, message: str) -> None:
        with self._lock:
            self.console.print(f"[yellow]{message}[/]")

    def close(self) -> None:
        if self._status is not None:
            self._status.stop()


def print_result(result, plan, stream=None, why=None) -> None:
    """The closing summary. `why(experiment) -> lines`, when given, is the
    short diagnosis printed under an experiment's first FAIL."""
    console = Console(file=stream or sys.stdout, highlight=False, soft_wrap=True)
    counts = result.counts()
    if result.verdicts:
        # one line per verdict, never wrapped: ratio, interval, n, threshold and method together
        console.print("\nChecks:")
        explained: set[str] = set()
        for exp, v in result.verdicts:
            mark = _VERDICT_MARK.get(v.status, "[yellow]![/]")
            console.print(f"  {mark} ", end="")
            console.print(f"{exp}: {v.name}  {v.status.upper()}  {v.detail}", markup=False, soft_wrap=True)
            if why is not None and v.status == "fail" and exp not in explained:
                explained.add(exp)
                lines = why(exp)
                if lines:
                    console.print("      why, against its baseline (ranked):", markup=False)
                for line in lines:
                    console.print(f"        {line}", markup=False, soft_wrap=True)
    from specdsl.apply.repeats import said_once

    for w in said_once(result.warnings):  # a message of many runs once, with its count
        console.print("[yellow]warning:[/] ", end="")
        console.print(w, markup=False, soft_wrap=True)
    for o in result.outcomes:
        if o.status is Status.FAILED:
            where = f" (log: {o.log})" if o.log else ""
            console.print(f"[red]failed:[/] {escape(o.addr)}{escape(where)}")
    parts = [f"{counts[s]} {s.text}" for s in Status if counts[s] or s in (Status.COMPLETED, Status.REUSED, Status.FAILED)]
    checks = {s: sum(1 for _, v in result.verdicts if v.status == s) for s in ("pass", "fail", "inconclusive", "error")}
    console.print(
        f"\nApply {'interrupted' if result.interrupted else 'finished'} in {result.wall:.1f}s "
        f"(steps busy {result.busy:.1f}s, engine overhead {result.overhead:.2f}s): " + ", ".join(parts)
        + f"; {result.launches} server launch{'es' if result.launches != 1 else ''}"
        + f"; checks: {checks['pass']} passed, {checks['fail']} failed, {checks['inconclusive']} inconclusive"
        + f", {checks['error']} error{'s' if checks['error'] != 1 else ''}"
        + f"; invalid runs: {result.invalid_runs}"
        + (f"; dropped launches: {result.dropped_launches} (did not settle, never measured)" if result.dropped_launches else "")
        + "."
    )
    if result.interrupted:
        console.print("Completed steps are recorded; run apply again to resume.")


def frontier_lines(cfg, state_dir: Path, title: str = "Frontier") -> list[str]:
    """The frontier table (specdsl.report.frontier) of each matrix experiment
    of `cfg` swept along `concurrency` or `rate`, from what state records:
    the value against throughput and latency percentiles, each cell's SLO
    (every check passed), the highest value that meets it marked."""
    from specdsl.report.frontier import LOAD_KEYS, frontier, sweep_frontiers, table

    groups: dict[str, list[str]] = {}
    for e in cfg.experiments:
        if any(k in LOAD_KEYS for k, _ in e.matrix):
            groups.setdefault(e.group or e.name, []).append(e.name)
    if not groups:
        return []
    from specdsl.report.collections import sweep_view
    from specdsl.report.gather import Index
    from specdsl.state import load_state

    state = load_state(state_dir)
    if state is None:
        return []
    ix = Index(state, state_dir)
    out = []
    for group, names in groups.items():
        recorded = [n for n in names if ix.result(n) is not None]
        for over, rest, rows in sweep_frontiers(sweep_view(ix, group, recorded).cells):
            best, knee = frontier(rows)
            out.append(f"\n{title} of {group} along {over}" + (f" ({rest})" if rest else "") + " (SLO: every check passed):")
            out += [f"  {line}" for line in table(over, rows)]
            answer = f"highest {over} that meets the SLO: {best:g}" if best is not None else f"no {over} meets the SLO"
            out.append(f"  {answer}" + (f"; the first that does not: {knee:g}" if knee is not None else ""))
    return out


SHORT = 3  # differences under a FAIL


def short_lines(cfg, graph, state_dir: Path, spec: str = ""):
    """A function experiment -> the lines apply prints under its FAIL: the
    top differences from its baseline ([] when there is nothing to say)."""

    def lines(name: str) -> list[str]:
        from specdsl.diagnose import DiagnoseError, compare, sides_of
        from specdsl.state import StateError, load_state

        try:
            state = load_state(state_dir)
            sides = sides_of(state, cfg, graph, name, spec=spec)
            d = compare(state, sides.baseline_run, sides.candidate_run, state_dir=state_dir, baseline=sides.baseline,
                        candidate=sides.candidate, labels=sides.labels)
        except (DiagnoseError, StateError, OSError, ValueError) as exc:
            return [f"(no diagnosis: {exc})"]
        if not d.differences:
            return [f"no recorded difference from {d.baseline}: the gap is noise, load or drift (specdsl diagnose {name})"]
        more = len(d.differences) - SHORT
        tail = f"; {more} more" if more > 0 else ""
        return [f"{x.rank + 1}. {x.line()}" for x in d.top(SHORT)] + [f"(specdsl diagnose {name} {spec}{tail})".replace(" )", ")")]

    return lines
