"""The files of this machine a Slurm job needs through a login node.

A spec names files by paths relative to its own folder: a dataset
(`jsonl:prompts.jsonl`, a ShareGPT `.json`), a model folder
(`model = "./tiny-llama"`), a script in a command server's or workload's
argv (`["python", "bench.py"]`), a stack's `find_links` folder of carried
wheels or a wheel in its `packages`. Submitted from this machine the nodes
see them where they are (the spec's folder is shared). Through a login
node (`ssh` with `slurm`) this machine shares nothing with the cluster, so
each is copied, before anything is submitted, to
`SLURM_WORKDIR/files/<digest>-<name>/<name>` on the login node (which shares
`slurm.workdir` with the nodes), and the job's description names that
copy. `<digest>` is the SHA-256 of the file's content (a folder's: its
files' relative names and contents), so a re-apply copies nothing again
and a changed file gets a folder of its own.

A dataset file is this machine's also when its path is absolute: apply
reads it here before anything starts and its SHA-256 is part of the
benchmark's identity, so the job must measure with that content. Any
other absolute path (a model folder, a script, a wheel folder) is a path
on the cluster, as for an SSH host, and left as written: a shared
`/models` need not travel.

A file of a relative path that is missing here is a located problem of the
host's preflight: nothing is submitted.

Finding the files and hashing them is pure and `plan`'s too
(`specdsl.plan.files`, which shows them); here is what acts on the login
node: which copies are there (`present`), the copy (`stage`), and the
values rewritten to name the copies (`Staged.rewrite`).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path, PurePosixPath

import attrs

from specdsl.hosts.base import HostError
from specdsl.hosts.slurm import SlurmError, SshRunner
from specdsl.model import config
from specdsl.plan.files import (DIST, FILES, LocalFile, content_digest, copy_folder, dataset_text, files_of, missing,
                                relative)

__all__ = ["FILES", "LocalFile", "Staged", "content_digest", "dataset_text", "files_of", "missing", "present", "stage"]


@attrs.define
class Staged:
    """The copies on the login node: local path -> remote path."""

    remote: dict = attrs.Factory(dict)  # str(local path, resolved) -> str(remote path)
    copied: list = attrs.Factory(list)  # (LocalFile, digest, remote) copied by this apply
    kept: list = attrs.Factory(list)  # (LocalFile, digest, remote) already there

    def rewrite(self, value, spec_dir: Path, memo: dict):
        """`value` naming the copies instead of this machine's files."""
        if not self.remote:
            return value
        key = id(value)
        if key in memo:
            return memo[key]
        out = self._rewrite(value, Path(spec_dir), memo)
        memo[key] = out
        return out

    def _path(self, text: str, spec_dir: Path, absolute: bool = False) -> str:
        if absolute and Path(text).is_absolute():
            return self.remote.get(str(Path(text).resolve()), text)
        if not relative(text) or text in (".", ".."):
            return text
        return self.remote.get(str((spec_dir / text).resolve()), text)

    def _rewrite(self, value, spec_dir: Path, memo: dict):
        if isinstance(value, config.Experiment):
            return attrs.evolve(value, stack=self.rewrite(value.stack, spec_dir, memo),
                                server=self.rewrite(value.server, spec_dir, memo),
                                workload=self.rewrite(value.workload, spec_dir, memo))
        if isinstance(value, config.Server):
            return attrs.evolve(value, model=self._path(value.model, spec_dir),
                                command=tuple(self._path(w, spec_dir) for w in value.command))
        if isinstance(value, config.Workload):
            found = dataset_text(value.dataset)
            dataset = value.dataset if found is None else found[0] + self._path(found[1], spec_dir, absolute=True)
            return attrs.evolve(value, dataset=dataset, command=tuple(self._path(w, spec_dir) for w in value.command))
        if isinstance(value, config.Stack):
            return attrs.evolve(value, find_links=tuple(self._path(t, spec_dir) for t in value.find_links),
                                packages=tuple(self._path(t, spec_dir) if t.endswith(DIST) else t
                                               for t in value.packages))
        return value


def present(host, folders: list[Path]) -> set[str]:
    """Which of `folders` are on the login node `host`, asked in one command."""
    if not folders:
        return set()
    script = 'for d in "$@"; do [ -d "$d" ] && printf "%s\\n" "$d"; done; exit 0'
    try:
        done = SshRunner(host).run(["sh", "-c", script, "sh", *map(str, folders)], timeout=60)
    except SlurmError as exc:
        raise HostError(str(exc)) from None
    if done.returncode != 0:
        raise HostError(f"looking for copies on the login node: {done.stderr.strip()[-300:]}")
    return set(done.stdout.splitlines())


def stage(host, root: Path, files: list[LocalFile]) -> Staged:
    """Copy each file to `root/files/<digest>-<name>/<name>` on the login
    node `host` (an `SshHost`), unless a copy of that content is there.
    Three commands at most, whatever the count: which copies are there; the
    missing ones as one tar stream (`SshHost.put_tree`) into a folder of
    their own beside them; each renamed into place (a half-copied file is
    never seen under its name; one another apply put there first is kept)."""
    staged = Staged()
    todo: dict[str, tuple[LocalFile, str, Path]] = {}
    for f in files:
        local = f.path.resolve()
        if str(local) not in todo:
            todo[str(local)] = (f, content_digest(local), local)
    # one folder per content and name (two names of one content are two files)
    names = {key: copy_folder(digest, local) for key, (_, digest, local) in todo.items()}
    top = Path(root) / FILES
    there = present(host, sorted({top / n for n in names.values()}))
    new = {}
    for key, (f, digest, local) in todo.items():
        remote = str(PurePosixPath(top) / names[key] / local.name)
        if str(top / names[key]) in there:
            staged.kept.append((f, digest, remote))
        else:
            new[names[key]] = local
            staged.copied.append((f, digest, remote))
        staged.remote[key] = remote
    if new:
        incoming = top / f".incoming-{uuid.uuid4().hex[:12]}"
        with tempfile.TemporaryDirectory(prefix="specdsl-stage-") as tmp:
            for name, local in new.items():
                (Path(tmp) / name).mkdir()
                os.symlink(local, Path(tmp) / name / local.name)  # put_tree follows links: the file itself travels
            host.put_tree(Path(tmp), incoming)
        script = ('cd "$1" || exit 1; for d in *; do [ -d "../$d" ] || mv "$d" "../$d" || exit 1; done; '
                  'cd .. && rm -rf "$1"')
        try:
            done = SshRunner(host).run(["sh", "-c", script, "sh", str(incoming)], timeout=120)
        except SlurmError as exc:
            raise HostError(str(exc)) from None
        if done.returncode != 0:
            raise HostError(f"putting the copies in {top}: {done.stderr.strip()[-300:]}")
    return staged
