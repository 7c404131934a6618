"""The state lock: one writer per state folder.

`.specdsl/state.lock` is a small TOML file (format_version, id, pid, host,
operation, created), created exclusively (written to a temp file, then
hard-linked into place, so it is never seen half-written). Every look at the
lock happens under an advisory `flock` of the state folder itself, so two
processes cannot both decide a lock is stale and each remove the other's.
A lock whose holder is a dead process on this host is broken with a message;
any other lock is a `LockError` that says who holds it and how to
`specdsl force-unlock ID`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import tomllib
import uuid
import warnings
from pathlib import Path
from typing import Callable, Iterator

import attrs
import tomli_w

from specdsl.private import FILE_MODE, make_dirs
from specdsl.state.errors import LockError, StaleLockWarning, StateError
from specdsl.state.model import utc_now

LOCK_NAME = "state.lock"
LOCK_FORMAT = 1


@attrs.frozen
class LockInfo:
    """Who holds a state lock: a random `id`, the process and host, the
    operation (`apply`, `promote`, ...) and when it was taken (UTC)."""

    id: str
    pid: int
    host: str
    operation: str
    created: str


def lock_path(state_dir: Path) -> Path:
    return Path(state_dir) / LOCK_NAME


def this_host() -> str:
    return socket.gethostname()


def ensure_dir(state_dir: Path) -> None:
    """Create the state folder (and missing parents) 0700, the owner's
    only; StateError when it cannot be. An existing folder keeps its mode."""
    try:
        make_dirs(state_dir)
    except OSError as err:
        raise StateError(state_dir, f"Cannot create the state folder ({err.strerror or err})",
                         "check the path and its permissions, or pass --state DIR to keep state "
                         "elsewhere") from None
    if not os.access(state_dir, os.W_OK | os.X_OK):
        raise StateError(state_dir, "State folder is not writable",
                         "check its permissions, or pass --state DIR to keep state elsewhere")


@contextlib.contextmanager
def _guard(state_dir: Path) -> Iterator[None]:
    """Hold an exclusive flock on the state folder (released when the
    process dies, so it can never go stale)."""
    fd = os.open(state_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_lock(state_dir: Path) -> LockInfo | None:
    """The current lock holder, None when unlocked; StateError when the lock
    file cannot be read or understood."""
    path = lock_path(state_dir)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise _bad_lock(path, str(err)) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise _bad_lock(path, f"not valid TOML: {err}") from None
    version = doc.get("format_version")
    if isinstance(version, int) and version > LOCK_FORMAT:
        raise StateError(path, f"State lock was written by a newer specdsl (format {version})",
                         "upgrade specdsl; the lock was left as it is")
    kinds = {"id": str, "pid": int, "host": str, "operation": str, "created": str}
    for key, kind in kinds.items():
        if not isinstance(doc.get(key), kind) or isinstance(doc.get(key), bool):
            raise _bad_lock(path, f"key {key!r} missing or not {kind.__name__}")
    return LockInfo(**{k: doc[k] for k in kinds})


def _bad_lock(path: Path, why: str) -> StateError:
    return StateError(path, f"State lock file is unreadable ({why})",
                      f"if no specdsl is running on this state, delete it: rm {path}")


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists on this host (a zombie counts as dead)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _create_exclusive(path: Path, data: bytes) -> None:
    """Create `path` holding `data`, FileExistsError if it exists."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.link(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def locked(
    state_dir: Path, operation: str, *, notify: Callable[[str], None] | None = None
) -> Iterator[LockInfo]:
    """Hold the state lock of `state_dir` (created if needed) for the block.

    A lock left by a dead process on this host is broken first and a message
    goes to `notify` (default: a `StaleLockWarning`). LockError when a live
    or remote holder has it; StateError when the folder is not writable.
    The lock is removed on exit unless it was force-unlocked meanwhile."""
    state_dir = Path(state_dir)
    ensure_dir(state_dir)
    path = lock_path(state_dir)
    info = LockInfo(id=str(uuid.uuid4()), pid=os.getpid(), host=this_host(),
                    operation=operation, created=utc_now())
    data = tomli_w.dumps({"format_version": LOCK_FORMAT, **attrs.asdict(info)}).encode()
    with _guard(state_dir):
        holder = read_lock(state_dir)
        if holder is not None:
            if holder.host != this_host() or pid_alive(holder.pid):
                raise LockError(path, holder)
            os.unlink(path)
            message = (f"{path}: broke a stale lock: {holder.operation!r} (lock id {holder.id}) was "
                       f"held by pid {holder.pid} on {holder.host}, which is no longer running")
            if notify is None:
                warnings.warn(message, StaleLockWarning, stacklevel=3)
            else:
                notify(message)
        try:
            _create_exclusive(path, data)
        except FileExistsError:  # only without a working flock (e.g. some network folders)
            raise LockError(path, read_lock(state_dir) or info) from None
        except OSError as err:
            raise StateError(path, f"Cannot create the state lock ({err.strerror or err})",
                             "check the folder's permissions, or pass --state DIR") from None
    try:
        yield info
    finally:
        with _guard(state_dir), contextlib.suppress(StateError, FileNotFoundError):
            holder = read_lock(state_dir)
            if holder is not None and holder.id == info.id:
                os.unlink(path)


def force_unlock(state_dir: Path, lock_id: str) -> LockInfo:
    """Remove the lock of `state_dir` whose id is `lock_id`; returns who held
    it. StateError when there is no lock or the id does not match."""
    state_dir = Path(state_dir)
    path = lock_path(state_dir)
    if not state_dir.is_dir():
        raise StateError(state_dir, "No state folder here, so nothing is locked",
                         "check the path, or pass --state DIR")
    with _guard(state_dir):
        holder = read_lock(state_dir)
        if holder is None:
            raise StateError(path, "State is not locked", "there is nothing to unlock")
        if holder.id != lock_id:
            raise StateError(
                path, f"Lock id {lock_id!r} does not match the lock held by {holder.operation!r} "
                f"(pid {holder.pid} on {holder.host}, since {holder.created})",
                f"if that process is gone for good, run `specdsl force-unlock {holder.id}`")
        try:
            os.unlink(path)
        except OSError as err:
            raise StateError(path, f"Cannot remove the state lock ({err.strerror or err})",
                             "check the folder's permissions") from None
    return holder
