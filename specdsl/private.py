"""Files and folders that are their owner's only: files 0600, folders 0700,
whatever the umask.

Everything specdsl records (state and its backup, the state lock, saved
plans, run folders with their logs and results, stack locks, environment
records, the key that hashes sensitive values) can hold what a user would
not show others: tokens in an environment, a server's argv, paths, results.
The writers create them through these helpers, so the mode comes from here
and never from the umask (which only takes bits away: 0o600 and 0o700 are
what they ask for under any umask). Folders that already exist are left as
they are (`--state .` must not change the mode of the user's folder).

This module imports nothing of specdsl.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path
from typing import IO, Iterator

FILE_MODE = 0o600
DIR_MODE = 0o700


def make_dirs(path: Path | str) -> Path:
    """`path` and every missing parent, each made 0700 (mkdir -p would make
    the parents with the umask's mode)."""
    path = Path(path)
    missing = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            folder.mkdir(mode=DIR_MODE)
    return path


@contextlib.contextmanager
def open_new(path: Path | str, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Create `path` (it must not exist) 0600 and open it for writing."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as f:
        yield f


@contextlib.contextmanager
def replacing(path: Path | str, mode: str = "w", encoding: str | None = "utf-8", fsync: bool = False) -> Iterator[IO]:
    """Write a new version of `path` atomically: a 0600 temp file in the
    same folder, renamed over `path` when the block ends without an error
    (the temp file is removed otherwise)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        with open_new(tmp, mode, encoding) as f:
            yield f
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: Path | str, text: str, *, fsync: bool = False) -> None:
    """Replace `path` with `text`, atomically and 0600; its folder is made
    (0700) when missing."""
    make_dirs(Path(path).parent)
    with replacing(path, "w", fsync=fsync) as f:
        f.write(text)


def tighten(folder: Path | str) -> None:
    """Make what is under `folder` (a run folder other code wrote into) the
    owner's only: files 0600, folders 0700. Links are not followed."""
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            _chmod(os.path.join(root, name), DIR_MODE)
        for name in files:
            _chmod(os.path.join(root, name), FILE_MODE)
    _chmod(folder, DIR_MODE)


def _chmod(path: str | Path, mode: int) -> None:
    with contextlib.suppress(FileNotFoundError, PermissionError, NotImplementedError):
        if not os.path.islink(path):
            os.chmod(path, mode)
