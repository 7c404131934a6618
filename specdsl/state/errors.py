"""Errors of the state layer.

`StateError` is a user-facing problem with a state folder (a truncated or
hand-edited file, a newer format, no write permission, a lost race): it names
the file and says what to do. The CLI prints `str(err)` and exits 1 (6 for
`LockError` and for a state that moved under a writer: a conflict).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specdsl.state.lock import LockInfo


class StateError(Exception):
    """A problem with a state folder that the user can fix.

    `path` is the file or folder concerned, `summary` one sentence-case line
    (no trailing period), `detail` what to do. `conflict` is True when the
    problem is another writer (lock held, state moved since read): the CLI's
    exit code 6.
    """

    conflict = False

    def __init__(self, path: Path | str, summary: str, detail: str = "") -> None:
        self.path = Path(path)
        self.summary = summary
        self.detail = detail
        super().__init__(self.render())

    def render(self) -> str:
        text = f"{self.path}: error: {self.summary}"
        if self.detail:
            text += f"\n  = hint: {self.detail}"
        return text


class StateConflict(StateError):
    """The state on disk moved since it was read (another writer got there
    first), or it belongs to another lineage."""

    conflict = True


class LockError(StateError):
    """The state is locked by someone else; `holder` says who. `path` is the
    lock file; the hint's force-unlock names its state folder, so it works
    from wherever the message was printed."""

    conflict = True

    def __init__(self, path: Path | str, holder: "LockInfo", summary: str = "", detail: str = "") -> None:
        self.holder = holder
        summary = summary or (
            f"State is locked by {holder.operation!r} (pid {holder.pid} on {holder.host}, "
            f"since {holder.created}, lock id {holder.id})"
        )
        detail = detail or (
            "wait for it to finish; if that process is gone for good, run "
            f"`specdsl force-unlock {holder.id} --state {Path(path).parent}`"
        )
        super().__init__(path, summary, detail)


class StaleLockWarning(UserWarning):
    """A lock left by a dead process on this host was broken."""
