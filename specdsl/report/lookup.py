"""What a name in state is, and its view: `gather(state, state_dir, name)`
finds an experiment, a matrix experiment's cells or a track (`experiment.NAME`
or `track.NAME` when both exist) and returns the `ExperimentView`
(specdsl.report.gather), `SweepView` or `TrackView`
(specdsl.report.collections); `NotFound` says what state holds instead.

It sits above both: gather builds one experiment's records, collections the
views of many, and neither imports this module.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from specdsl.diag import did_you_mean
from specdsl.paired_result import PairedResult
from specdsl.report import collections
from specdsl.report.gather import Index, doc_of, experiment_view
from specdsl.state import State


class NotFound(Exception):
    """Nothing to report for the name given; the message says what state holds."""


def gather(state: State | None, state_dir: Path, name: str):
    """The view of `name`: an experiment, a matrix experiment's cells or a
    track. NotFound (with what state holds) when it names nothing there,
    or an experiment without a result, a verdict or a failure."""
    if state is None:
        raise NotFound(f"no state recorded in {state_dir}")
    ix = Index(state, state_dir)
    kind, _, bare = name.partition(".") if name.startswith(("experiment.", "track.")) else ("", "", name)
    experiments = ix.experiments()
    cells = [e for e in experiments if e.startswith(bare + "[")]
    is_exp = bare in ix.by_experiment or bool(cells)
    is_track = bare in state.tracks()
    if kind == "track" or (not kind and is_track and not is_exp):
        if not is_track:
            raise NotFound(_unknown(f"track `{bare}`", bare, state.tracks(), "tracks with promotions"))
        return collections.track_view(ix, bare)
    if kind == "" and is_track and is_exp:
        raise NotFound(f"`{bare}` is both an experiment and a track; name one: `experiment.{bare}` or `track.{bare}`")
    if not is_exp:
        arm = _arm_view(ix, bare)
        if arm is not None:
            return arm
        bases = sorted({e.split("[", 1)[0] for e in experiments})
        raise NotFound(_unknown(f"experiment or track `{bare}`", bare, bases + list(state.tracks()), "experiments and tracks recorded"))
    if bare not in ix.by_experiment:
        return collections.sweep_view(ix, bare, cells)
    view = experiment_view(ix, bare)
    if view.run is None and not view.verdicts and not view.failures:
        arm = _arm_view(ix, bare)
        if arm is not None:
            return arm
        steps = sorted({r.step for r in ix.by_experiment[bare]})
        raise NotFound(f"No results of experiment `{bare}` recorded: its benchmark has not run "
                       f"(recorded steps: {', '.join(steps)}); run `specdsl apply` first")
    return view


def _arm_view(ix: Index, name: str):
    """The view of the comparison that measured `name` only as its baseline
    arm (A) (a baseline with no benchmark of its own, graph `arm_only`),
    with a note that says so; None when no paired result holds it."""
    holder = _arm_of(ix, name)
    if holder is None:
        return None
    view = experiment_view(ix, holder)
    note = f"{name} has no benchmark of its own: it was measured as the baseline arm (A) of {holder}'s pairs, shown here"
    return attrs.evolve(view, notes=(note, *view.notes), measured_as=name)


def _arm_of(ix: Index, name: str) -> str | None:
    """The experiment whose latest paired result measured `name` as its
    baseline arm (A), or None."""
    for r in reversed(ix.state.runs):
        if r.status == "completed" and r.step.startswith("benchmark.") and r.folder:
            doc = doc_of(r, ix.state_dir)
            got = PairedResult.of(doc)
            if got and got.pairs and got.name("A", None) == name:
                return r.experiment
    return None


def _unknown(what: str, name: str, known, label: str) -> str:
    hint = did_you_mean(name, known) or (f"{label}: " + ", ".join(known) if known else "nothing is recorded in this state yet")
    return f"No {what} recorded; {hint}"
