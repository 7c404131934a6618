"""The diagnosis section: the differences between the arms that
`specdsl.diagnose.compare(state, baseline_run, candidate_run, state_dir=...)`
ranks (category, key, baseline, candidate, silent_default, why, rank),
best-ranked first, and the notes of what it could not read. It is imported
here, on first use; without that package the section is left out."""

from __future__ import annotations

import html

from specdsl import secrets


def _esc(value) -> str:
    return html.escape(secrets.redact("(absent)" if value is None else str(value)), quote=True)


def diagnosis_section(state, state_dir, view, cfg=None, passed: bool = False) -> str:
    """The section's HTML, "" when there is nothing to diagnose (no
    baseline, no result, or no diagnose package). `cfg`: the resolved spec,
    when given, so the diagnosis knows what each arm declared. `passed`:
    every verdict passed, so the rows are differences, not likely causes
    (none is marked as a fault)."""
    try:
        from specdsl.diagnose import compare
    except ImportError:
        return ""
    if view.run is None or not view.baseline:
        return ""
    base = view.base_run or view.run  # a paired benchmark holds both arms in one run
    if view.base_run is None and not view.paired:
        return ""
    experiments = {}
    if cfg is not None:
        base_name = view.base_run.experiment if view.base_run is not None else view.baseline
        experiments = {"baseline": cfg.experiment(base_name), "candidate": cfg.experiment(view.name)}
    try:
        diagnosis = compare(state, base, view.run, state_dir=state_dir, labels=(view.baseline, view.name), **experiments)
    except Exception as exc:  # a diagnosis that cannot be made must not lose the rest of the report
        return f'<p class="note">The diagnosis could not be made: {_esc(exc)}</p>'
    notes = "".join(f'<p class="note">Note: {_esc(n)}</p>' for n in getattr(diagnosis, "notes", ()) or ())
    intro = ('<p class="note">Every verdict passed: these are the differences between the arms (the change asked for '
             "among them), ranked as `specdsl diagnose` ranks them; none is a fault to explain.</p>" if passed else
             '<p class="note">The differences between the arms, the most likely cause first.</p>')
    return intro + render_differences(getattr(diagnosis, "differences", ()) or (), passed) + notes


def render_differences(differences, passed: bool = False) -> str:
    """A table of differences, by rank (silent defaults first at equal rank),
    numbered from 1 in that order; a silent default marked as a fault
    unless `passed`."""
    items = sorted(differences, key=lambda d: (getattr(d, "rank", 0), not getattr(d, "silent_default", False),
                                               str(getattr(d, "category", "")), str(getattr(d, "key", ""))))
    if not items:
        return '<p class="note">No difference found between the arms.</p>'
    rows = []
    for place, d in enumerate(items, 1):  # numbered from 1, as `specdsl diagnose` prints them
        silent = getattr(d, "silent_default", False)
        cls = ' class="fail"' if silent and not passed else ""
        rows.append(
            f'<tr{cls}><td class="num">{place}</td>'
            f"<td>{_esc(getattr(d, 'category', ''))}</td><td><code>{_esc(getattr(d, 'key', ''))}</code></td>"
            f"<td>{_esc(getattr(d, 'baseline', ''))}</td><td>{_esc(_candidate(d))}</td>"
            f"<td>{'yes: the server chose it' if silent else ''}</td><td>{_esc(getattr(d, 'why', ''))}</td></tr>"
        )
    head = "".join(f"<th>{h}</th>" for h in ("rank", "category", "key", "baseline", "candidate", "silent default", "why"))
    return f'<table class="diagnosis"><tr>{head}</tr>\n' + "\n".join(rows) + "</table>"


def _candidate(d) -> str:
    """The candidate's value; a grouped line (the flags a release added) its members."""
    members = getattr(d, "members", ()) or ()
    if members:
        return ", ".join(f"{k}={v}" for k, v in members)
    return getattr(d, "candidate", "")
