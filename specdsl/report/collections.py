"""Views of many runs: a matrix experiment's cells (`SweepView`) and a
track's promotions (`TrackView`).

A sweep of 1,000 cells is one summary row per cell (read from state's
medians, not from 1,000 run folders) and a few plots over all of them; a
track is its promotions, oldest first, each with the headline metric of
the run it promoted, and the experiment that made the latest one.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import attrs

from specdsl.names import natural_key
from specdsl.report.gather import (
    ExperimentView, Failure, Index, experiment_view, failures_of, headline,
)
from specdsl.state.promotions import verdict_of


@attrs.frozen
class Cell:
    name: str
    values: tuple[tuple[str, str], ...]  # the matrix values, from the cell's name
    status: str  # completed, failed, skipped, interrupted, or "not run"
    metrics: tuple[tuple[str, float], ...]
    verdicts: tuple[tuple[str, str], ...]  # (check, status)
    failure: str = ""

    def metric(self, name: str) -> float | None:
        return dict(self.metrics).get(name)


@attrs.frozen
class SweepView:
    name: str
    metric: str
    cells: tuple[Cell, ...]
    failures: tuple[tuple[str, Failure], ...]  # (cell, failure)

    @property
    def axes(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Each matrix key and its values, in the order the cells name them."""
        keys: dict[str, list[str]] = {}
        for c in self.cells:
            for k, v in c.values:
                if v not in keys.setdefault(k, []):
                    keys[k].append(v)
        return tuple((k, tuple(sorted(vs, key=natural_key))) for k, vs in keys.items())


def cell_values(name: str) -> tuple[tuple[str, str], ...]:
    """`grid[backend=fa3,c=16]` -> (("backend", "fa3"), ("c", "16"))."""
    if "[" not in name or not name.endswith("]"):
        return ()
    out = []
    for part in name[name.index("[") + 1:-1].split(","):
        k, _, v = part.partition("=")
        out.append((k.strip(), v.strip()))
    return tuple(out)


def sweep_view(ix: Index, name: str, cells: list[str]) -> SweepView:
    rows, failures = [], []
    for cell in sorted(cells, key=natural_key):
        run = ix.result(cell)
        latest = (ix.by_step.get(f"benchmark.{cell}") or [None])[-1]
        status = latest.status if latest is not None else "not run"
        checks = []
        for addr in ix.checks_of(cell):
            v = ix.verdict_run(addr)
            verdict = verdict_of(v)
            checks.append((addr.rsplit(".", 1)[-1], verdict.status.value if verdict is not None else "error"))
        fails = failures_of(ix, cell)
        failures += [(cell, f) for f in fails]
        reason = fails[0].reason.splitlines()[0] if fails else ""
        metrics = run.metrics if run is not None else ()
        rows.append(Cell(cell, cell_values(cell), "completed" if run is not None and status == "completed" else status,
                         metrics, tuple(checks), reason))
    have = set().union(*(dict(c.metrics) for c in rows)) if rows else set()
    # the headline: what the cells' first gating check reads, else throughput
    first = next((c for c in cells if ix.checks_of(c)), None)
    verdicts = experiment_view(ix, first).verdicts if first is not None else ()
    return SweepView(name, headline(verdicts, have), tuple(rows), tuple(failures))


@attrs.frozen
class Promoted:
    time: str
    run: str
    experiment: str
    previous: str
    value: float | None  # the headline metric of the promoted run
    verdicts: tuple[tuple[str, str], ...]  # (check, detail)


@attrs.frozen
class TrackView:
    name: str
    metric: str
    promotions: tuple[Promoted, ...]  # oldest first
    lock: tuple[tuple[str, str], ...]  # the current stack lock, flattened (key, value)
    lock_path: str
    latest: ExperimentView | None  # the experiment of the latest promotion


def track_view(ix: Index, track: str) -> TrackView:
    state = ix.state
    promos = state.promotions_of(track)
    latest = None
    if promos:
        try:
            latest = experiment_view(ix, promos[-1].experiment)
        except (KeyError, ValueError):
            latest = None
    have: set[str] = set()
    for p in promos:
        run = ix.runs.get(p.run)
        if run is not None:
            have |= set(dict(run.metrics))
    metric = headline(latest.verdicts if latest is not None else (), have)
    rows = []
    for p in promos:
        run = ix.runs.get(p.run)
        details = tuple((name, _detail(ix.runs.get(vid)))
                        for name, vid in zip(p.checks, p.verdicts + ("",) * (len(p.checks) - len(p.verdicts))))
        rows.append(Promoted(p.time, p.run, p.experiment, p.previous or "", run.metric(metric) if run else None, details))
    lock, lock_path = _lock(ix.state_dir, promos[-1].lock if promos else "")
    return TrackView(track, metric, tuple(rows), lock, lock_path, latest)


def _detail(run) -> str:
    verdict = verdict_of(run)
    return verdict.detail if verdict is not None else ""


def _lock(state_dir: Path, rel: str) -> tuple[tuple[tuple[str, str], ...], str]:
    if not rel:
        return (), ""
    path = Path(os.path.normpath(Path(state_dir) / rel))
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return (("error", f"cannot read the lock: {exc}"),), str(path)
    out: list[tuple[str, str]] = []

    def walk(prefix: str, value) -> None:
        if isinstance(value, dict):
            for k in sorted(value):
                walk(f"{prefix}.{k}" if prefix else k, value[k])
        elif isinstance(value, list):
            out.append((prefix, " ".join(str(v) for v in value) if value else "[]"))
        else:
            out.append((prefix, str(value)))

    walk("", {k: v for k, v in doc.items() if k != "metrics"})
    return tuple(out), str(path)
