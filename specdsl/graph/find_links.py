"""What a stack's local find-links folders hold, for the stack's identity.

A wheel carried in a find-links folder and rebuilt under the same file name
(`mypkg-0.1-py3-none-any.whl` with new code) is a different stack: its
environment must be built again. So a provision step's content holds, for
each find-links entry that is a folder on this machine (a path, relative to
the working directory as uv reads it, or a `file://` URL), one SHA-256 over
its distribution files (`*.whl`, `*.tar.gz`, `*.zip`): their names and the
SHA-256 of each, sorted by name. A URL, or a path that is no folder here,
is left as its text (already in the content's `find_links`).

Cheap: nothing is read for a stack without local find-links, and each file
is hashed once per process while it is unchanged (a 1,000-cell matrix
over one folder hashes each wheel once). The memo is keyed by the file's
path, size, mtime, ctime and inode, and a file whose timestamps are not
at least `QUIET_NS` older than the hash is not remembered (git's "racy"
rule: a rewrite within one timestamp tick could keep every one of them).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Iterable
from urllib.parse import urlparse
from urllib.request import url2pathname

DIST_SUFFIXES = (".whl", ".tar.gz", ".zip")
QUIET_NS = 2_000_000_000
_CHUNK = 1 << 20

_memo: dict[str, tuple[tuple[int, ...], str]] = {}
_memo_lock = threading.Lock()


def find_links_digests(links: Iterable[str]) -> dict[str, str]:
    """{entry as written: digest of its distribution files} for each entry
    of `links` that is a folder on this machine."""
    out: dict[str, str] = {}
    for link in links:
        folder = local_folder(link)
        if folder is not None:
            out[link] = folder_digest(folder)
    return out


def local_folder(link: str) -> Path | None:
    """The folder a find-links entry names on this machine, None for a URL
    or a path that is not a folder here."""
    parsed = urlparse(link)
    if parsed.scheme == "file":
        path = Path(url2pathname(parsed.path))
    elif parsed.scheme == "":
        path = Path(link)
    else:
        return None
    return path if path.is_dir() else None


def folder_digest(folder: Path) -> str:
    """SHA-256 over `name NUL sha256 LF` of each distribution file, by name."""
    h = hashlib.sha256()
    with os.scandir(folder) as entries:
        dists = sorted((e for e in entries if e.name.endswith(DIST_SUFFIXES) and e.is_file()), key=lambda e: e.name)
    for entry in dists:
        h.update(f"{entry.name}\0{file_sha256(entry.path)}\n".encode())
    return h.hexdigest()


def file_sha256(path: str | Path) -> str:
    """The file's SHA-256, from the memo while the file is unchanged."""
    key = os.path.abspath(path)
    before = os.stat(key)
    signature = _signature(before)
    with _memo_lock:
        hit = _memo.get(key)
    if hit is not None and hit[0] == signature:
        return hit[1]
    started = time.time_ns()
    h = hashlib.sha256()
    with open(key, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    digest = h.hexdigest()
    quiet = max(before.st_mtime_ns, before.st_ctime_ns) < started - QUIET_NS
    if quiet and _signature(os.stat(key)) == signature:
        with _memo_lock:
            _memo[key] = (signature, digest)
    return digest


def _signature(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
