"""Where state lives and how it is read and written.

`.specdsl/` beside the spec (or `--state DIR`) holds `state.toml`, its
previous version `state.toml.backup`, the lock `state.lock` and one folder
per run under `runs/`. Writes are atomic: the new text goes to a temp file
in the same folder, is fsynced and renamed over `state.toml`, then the folder
is fsynced; the bytes it replaces were first saved (atomically too) as the
backup. A crash at any point leaves a complete `state.toml`.

A writer must pass back the State it read (and changed with `with_*`):
`write_state` refuses to write when the file on disk no longer has that
State's lineage and serial, so a lost update is an error, never silent.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

import attrs

from specdsl.private import FILE_MODE
from specdsl.state.codec import BACKUP_SUFFIX, decode_state, encode_state
from specdsl.state.errors import LockError, StateConflict, StateError
from specdsl.state.lock import LockInfo, ensure_dir, lock_path, pid_alive, read_lock, this_host
from specdsl.state.model import FORMAT_VERSION, RUN_ID_RE, State

STATE_DIR_NAME = ".specdsl"
STATE_NAME = "state.toml"
RUNS_NAME = "runs"


def state_dir_for(spec_path: Path, override: Path | None = None) -> Path:
    """The state folder of the spec at `spec_path`: `override` when given
    (the CLI's `--state DIR`), else `.specdsl` beside the spec."""
    if override is not None:
        return Path(override)
    return Path(spec_path).parent / STATE_DIR_NAME


def state_path(state_dir: Path) -> Path:
    return Path(state_dir) / STATE_NAME


def backup_path(state_dir: Path) -> Path:
    return Path(state_dir) / (STATE_NAME + BACKUP_SUFFIX)


def run_folder(state_dir: Path, run_id: str) -> Path:
    """`<state dir>/runs/<run id>/` (not created). ValueError for a run id
    that is not a plain folder name (a caller bug: ids come from
    `new_run_id` or a checked state file)."""
    if not RUN_ID_RE.match(run_id):
        raise ValueError(f"not a valid run id: {run_id!r}")
    return Path(state_dir) / RUNS_NAME / run_id


def _read_bytes(path: Path) -> bytes | None:
    """The file's bytes, None when it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise StateError(path.parent, "State folder path is not a folder",
                         "pass --state DIR with a folder, or move the file that is in the way") from None
    except IsADirectoryError:
        raise StateError(path, "State file is a folder", "move it out of the way") from None
    except OSError as err:
        raise StateError(path, f"Cannot read the state file ({err.strerror or err})",
                         "check its permissions") from None


def _decode(data: bytes, path: Path) -> State:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise StateError(path, f"State file is not UTF-8 text ({err.reason} at byte {err.start})",
                         f"restore the previous version with `cp {backup_path(path.parent)} {path}`") from None
    return decode_state(text, path)


def load_state(state_dir: Path) -> State | None:
    """The recorded State, None when there is none yet. StateError when the
    file is unreadable, invalid or from a newer specdsl, and when only the
    backup exists (so a deleted state is not silently started afresh)."""
    path = state_path(state_dir)
    data = _read_bytes(path)
    if data is None:
        backup = backup_path(state_dir)
        if backup.exists():
            raise StateError(path, "State file is missing but its backup exists",
                             f"restore it with `cp {backup} {path}`, or delete {backup} to start "
                             "with an empty state")
        return None
    return _decode(data, path)


def _fsync_dir(state_dir: Path) -> None:
    fd = os.open(state_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically (temp file in the same folder,
    fsync, rename). On failure the temp file is removed and `path` is left
    as it was; the OSError propagates."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)  # the owner's only, whatever the umask
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_state(state_dir: Path, state: State, *, lock: LockInfo | None = None) -> State:
    """Write `state` with serial + 1 and return what was written.

    `state` must descend from what is on disk: same lineage and serial as the
    current file (serial 0 and no file for a `State.new()`), else
    StateConflict and nothing is written. With `lock`, the lock file must
    still be that lock (not force-unlocked meanwhile); without, a lock held
    by another live process is a LockError. The file replaced is
    kept as `state.toml.backup`. StateError (naming the file) when the
    folder cannot be written; the previous file is then left as it was.
    ValueError (a caller bug) when `state.problems()` is not empty."""
    problems = state.problems()
    if problems:  # it would not read back: a bug in the caller, not the user's mistake
        raise ValueError(f"refusing to write an unsound state: {problems}")
    state_dir = Path(state_dir)
    path = state_path(state_dir)
    ensure_dir(state_dir)
    holder = read_lock(state_dir)
    if lock is None:
        if holder is not None and (holder.host, holder.pid) != (this_host(), os.getpid()) and (
                holder.host != this_host() or pid_alive(holder.pid)):
            raise LockError(lock_path(state_dir), holder)
    else:
        if holder is None or holder.id != lock.id:
            raise StateConflict(path, f"This {lock.operation!r} no longer holds the state lock "
                                "(it was force-unlocked); nothing was written",
                                "re-run the command to start from the current state")
    old = _read_bytes(path)
    if old is None:
        if state.serial != 0:
            raise StateConflict(path, f"State file disappeared since it was read (serial {state.serial})",
                                "re-run the command to start from the current state")
    else:
        current = _decode(old, path)
        if current.lineage != state.lineage:
            raise StateConflict(path, f"State file belongs to another lineage ({current.lineage}, "
                                f"not {state.lineage}); nothing was written",
                                "check --state: this is a different state than the one read")
        if current.serial != state.serial:
            raise StateConflict(path, f"State changed since it was read (serial {state.serial} -> "
                                f"{current.serial}); nothing was written",
                                "another specdsl wrote it meanwhile; re-run the command")
    written = attrs.evolve(state, format_version=FORMAT_VERSION, serial=state.serial + 1)
    data = encode_state(written).encode("utf-8")
    try:
        if old is not None:
            atomic_write(backup_path(state_dir), old)
        atomic_write(path, data)
        _fsync_dir(state_dir)
    except OSError as err:
        raise StateError(path, f"Cannot write the state file ({err.strerror or err})",
                         "check the folder's permissions and free space, or pass --state DIR; "
                         "the previous state file was left as it was") from None
    return written
