"""The files of this machine a Slurm job through a login node names (pure).

What `specdsl.apply.slurm.files` copies, found the same way for `plan`:
a spec names files by paths relative to its own folder: a dataset
(`jsonl:prompts.jsonl`, a ShareGPT `.json`), a model folder
(`model = "./tiny-llama"`), a script in a command server's or workload's
argv (`["python", "bench.py"]`), a stack's `find_links` folder of carried
wheels or a wheel in its `packages`. A dataset file is this machine's also
when its path is absolute (its SHA-256 is part of the benchmark's
identity); any other absolute path is a path on the cluster, left as
written. Each file travels once per content, to
`SLURM_WORKDIR/files/<sha256[:32]>-<name>/<name>` (`copy_folder`).

Reads this machine's files (to hash them) and nothing else: which copies
the login node already has is asked by apply (`apply.slurm.files.present`);
`plan` says "copied unless already there".
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import attrs

from specdsl.model import config
from specdsl.model.datasets import dataset_file

FILES = "files"
DIST = (".whl", ".tar.gz", ".zip")


@attrs.frozen
class LocalFile:
    """A file or folder of this machine a job names: `text` as the spec
    wrote it, `path` where it is here, `what` the setting that named it."""

    text: str
    path: Path
    what: str
    span: object = None


def content_digest(path: Path) -> str:
    """SHA-256 of a file's bytes, or of a folder's files (relative names,
    kinds and contents, in sorted order; links followed)."""
    h = hashlib.sha256()
    if path.is_file():
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    for folder, dirs, files in sorted(os.walk(path, followlinks=True)):
        dirs.sort()
        for name in sorted(files):
            file = Path(folder) / name
            h.update(b"f\0" + str(file.relative_to(path)).encode() + b"\0")
            h.update(content_digest(file).encode())
        for name in dirs:
            h.update(b"d\0" + str((Path(folder) / name).relative_to(path)).encode() + b"\0")
    return h.hexdigest()


def content_size(path: Path) -> int:
    """Bytes of a file, or of a folder's files (links followed)."""
    if path.is_file():
        return path.stat().st_size
    return sum((Path(folder) / name).stat().st_size
               for folder, _, files in os.walk(path, followlinks=True) for name in files)


def copy_folder(digest: str, local: Path) -> str:
    """The copy's folder under `SLURM_WORKDIR/files/`: one per content and
    name (two names of one content are two files)."""
    return f"{digest[:32]}-{local.name}"


def relative(text: str) -> bool:
    return bool(text) and not text.startswith(("/", "~")) and "://" not in text and "{" not in text


def _candidate(text: str, spec_dir: Path, *, explicit: bool) -> Path | None:
    """The file here a relative `text` names: when it is written as a path
    (`./x`, `../x`, or `explicit`: the setting is a path) or exists under
    the spec's folder (`bench.py`: else it is a name, a model id, a flag)."""
    if not relative(text) or text in (".", ".."):
        return None
    path = Path(spec_dir) / text
    if explicit or text.startswith(("./", "../")) or path.exists():
        return path
    return None


def dataset_text(dataset: str) -> tuple[str, str] | None:
    """(prefix, path) of a dataset naming a file (`model.datasets`' rule), else None."""
    found = dataset_file(dataset)
    return None if found is None else (found.prefix, found.path)


# What a relative argv word ending so names: a script of the spec's folder
# even when it is not there (a missing `bench.py` is a mistake, not a name).
SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".pl", ".rb", ".js")


def command_scripts(argv, spec_dir: Path) -> list[tuple[int, str, Path]]:
    """(index, word, path here) of each word of a command's argv that names
    a file of the spec's folder: written as a path (`./bench.sh`,
    `../tools/x`), ending as a script does (`bench.py`), there or not, or a
    relative path with a folder in it that is there (`tools/run`). A bare
    word is a name even when the folder holds one (`vllm bench serve` beside
    a `bench/` folder), a path with a folder that is not there a name too
    (`org/model`); options (`-x`, `--out=f.py`) are never scripts. Relative
    paths of a command are the spec's folder's, as a model's and a
    dataset's are."""
    out = []
    for i, word in enumerate(argv):
        if word.startswith("-") or "=" in word or not relative(word) or word in (".", ".."):
            continue
        path = Path(spec_dir) / word
        if word.startswith(("./", "../")) or word.endswith(SCRIPT_SUFFIXES) or ("/" in word and path.exists()):
            out.append((i, word, path))
    return out


def _argv_files(argv, spec_dir: Path, what: str, span) -> list[LocalFile]:
    out = []
    for word in argv:
        path = _candidate(word, spec_dir, explicit=False)
        if path is not None:
            out.append(LocalFile(word, path, what, span))
    return out


def files_of(value, spec_dir: Path) -> list[LocalFile]:
    """The local files a payload value (an experiment, server, workload or
    stack) names by relative path."""
    spec_dir = Path(spec_dir)
    out: list[LocalFile] = []
    if isinstance(value, config.Experiment):
        for part in (value.stack, value.server, value.workload):
            out += files_of(part, spec_dir)
    elif isinstance(value, config.Server):
        if not value.command or "{model}" in " ".join(value.command):
            path = _candidate(value.model, spec_dir, explicit=False)
            if path is not None:
                out.append(LocalFile(value.model, path, f"model of server {value.name}", value.span))
        out += _argv_files(value.command, spec_dir, f"command of server {value.name}", value.span)
    elif isinstance(value, config.Workload):
        found = dataset_text(value.dataset) if not value.command else None
        if found is not None:
            path = Path(found[1]) if Path(found[1]).is_absolute() else _candidate(found[1], spec_dir, explicit=True)
            if path is not None:
                out.append(LocalFile(found[1], path, f"dataset of workload {value.name}", value.span))
        out += _argv_files(value.command, spec_dir, f"command of workload {value.name}", value.span)
    elif isinstance(value, config.Stack):
        for link in value.find_links:
            path = _candidate(link, spec_dir, explicit=True)
            if path is not None:
                out.append(LocalFile(link, path, f"find_links of stack {value.name}", value.span))
        for package in value.packages:
            if package.endswith(DIST) and (path := _candidate(package, spec_dir, explicit=True)) is not None:
                out.append(LocalFile(package, path, f"packages of stack {value.name}", value.span))
    return out


def job_files(graph, jobs, host_name: str, spec_dir: Path) -> list[LocalFile]:
    """The files of this machine that host `host_name`'s jobs (`slurm_jobs`)
    name, in the jobs' order (repeats kept: `missing` and the copy dedupe)."""
    files = []
    for job in jobs:
        if job.host.name == host_name:
            for addr in job.steps:
                for value in graph.steps[addr].payload.values():
                    files += files_of(value, Path(spec_dir))
    return files


def missing_files(files: list[LocalFile]) -> list[LocalFile]:
    """The files not on this machine, one per path and setting, in order."""
    return [f for f in sorted(set(files), key=lambda f: (str(f.path), f.what)) if not f.path.exists()]


def missing_detail(f: LocalFile) -> str:
    return (f"{f.text} is not on this machine ({f.path}): a host reached through a login node gets a copy of each "
            f"file the spec names by relative path, so it must exist here")


def missing(files: list[LocalFile]) -> list[str]:
    """One located problem per file that is not on this machine."""
    out = []
    for f in missing_files(files):
        where = f"{f.span}: " if f.span is not None else ""
        out.append(f"{where}{f.what}: {missing_detail(f)}")
    return out


UNASKED = "copied unless already there"
COPY = "will copy"
THERE = "already there"


@attrs.frozen
class PlannedCopy:
    """One file a login-node host's jobs name, as plan shows it: `copy` the
    path under `workdir` it will have on the login node."""

    host: str
    ssh: str
    workdir: str
    file: LocalFile
    size: int
    digest: str
    copy: str
    status: str = UNASKED  # or COPY, THERE: what the login node said (`specdsl plan` asks it unless --no-refresh)

    @property
    def folder(self) -> str:
        """The copy's folder, relative to `workdir` (what `apply.slurm.files.present` looks for)."""
        return self.copy.rsplit("/", 1)[0]

    def as_json(self) -> dict:
        return {"host": self.host, "ssh": self.ssh, "path": self.file.text, "setting": self.file.what,
                "bytes": self.size, "sha256": self.digest, "copy": f"{self.workdir}/{self.copy}",
                "status": self.status}


def slurm_workdir(host) -> str:
    """`slurm.workdir` as written, or the default's description."""
    return host.slurm.workdir or "~/.cache/specdsl/slurm"


def planned_copies(graph, jobs, spec_dir: Path) -> list[PlannedCopy]:
    """Per login-node host (a host with `ssh` and `slurm`) of `jobs`, the
    files apply will copy unless already there, one per local path (what
    `slurm_files.stage` dedupes by), hashed here. Call after `missing`
    found none."""
    out = []
    hosts = {j.host.name: j.host for j in jobs if getattr(j.host, "ssh", None)}
    for name in sorted(hosts):
        host = hosts[name]
        seen: set[str] = set()
        for f in job_files(graph, jobs, name, spec_dir):
            local = f.path.resolve()
            if str(local) in seen:
                continue
            seen.add(str(local))
            digest = content_digest(local)
            out.append(PlannedCopy(name, host.ssh, slurm_workdir(host), f, content_size(local), digest,
                                   f"{FILES}/{copy_folder(digest, local)}/{local.name}"))
    return out


def size_text(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def render_copies(copies: list[PlannedCopy], notes: dict | None = None) -> str:
    """The plan's section of copies to login nodes; "" when none. `notes`:
    host -> why its login node was not asked."""
    if not copies:
        return ""
    lines = []
    for host in sorted({c.host for c in copies}):
        mine = [c for c in copies if c.host == host]
        first = mine[0]
        if any(c.status == UNASKED for c in mine):
            why = (notes or {}).get(host) or "plan does not ask the login node with --no-refresh"
            lines += ["", f"Files copied to the login node {first.ssh} of host {host} unless already there ({why}), "
                          f"under {first.workdir}/{FILES}/:"]
        else:
            n = sum(c.status == COPY for c in mine)
            lines += ["", f"Files copied to the login node {first.ssh} of host {host}: {n} to copy, "
                          f"{len(mine) - n} already there, under {first.workdir}/{FILES}/:"]
        for c in mine:
            mark = {COPY: "+", THERE: "="}.get(c.status, "+")
            tail = f" ({c.status})" if c.status != UNASKED else ""
            lines.append(f"  {mark} {c.file.text} ({c.file.what}): {size_text(c.size)}, sha256 {c.digest[:12]} -> "
                         f"{c.copy}{tail}")
    return "\n".join(lines) + "\n"
