"""Where a Slurm host's jobs are submitted from and their files live: this
machine (`LocalSite`: `sbatch` on this PATH, job folders on a filesystem
this machine shares with the compute nodes) or a login node over SSH
(`SshSite`, a host block with both `ssh` and `slurm`).

Over SSH every Slurm command runs on the login node through the host's
one connection (`SshRunner`: quoted scripts sent as base64, short ones
through its worker shell); the job folder, the job's environments and a
copy of this specdsl's package (`lib/specdsl-<digest>/`, put there once
per version) live under `slurm.workdir` on the login node (default
`<host workdir>/slurm`), which the login node shares with the compute
nodes, as clusters do. This machine shares nothing with the cluster: the
controller follows the job's events file over SSH and, when the job ends,
brings its folder back (a tar stream, `Host.collect`) into the state
folder's `slurm/jobs/`, from where it is imported like a local job's.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from specdsl import private
from specdsl.hosts.local import default_env_root
from specdsl.hosts.slurm import SlurmClient, SshRunner


def package_folder() -> Path:
    """This specdsl's package folder (`.../specdsl`)."""
    import specdsl

    return Path(specdsl.__file__).resolve().parent


_DIGEST: str | None = None


def package_digest() -> str:
    """A hash of this specdsl's source (its .py files and grammar): the
    name of its copy on a login node, so another version gets its own."""
    global _DIGEST
    if _DIGEST is None:
        h = hashlib.sha256()
        root = package_folder()
        for folder, dirs, files in sorted(os.walk(root, followlinks=True)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".lark", ".json", ".toml", ".txt", ".css", ".js", ".html")):
                    path = Path(folder) / name
                    h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
        _DIGEST = h.hexdigest()[:16]
    return _DIGEST


def slurm_env(slurm) -> dict[str, str]:
    """What Slurm's commands see besides the submit host's own environment."""
    return {"SLURM_CONF": slurm.conf} if slurm.conf else {}


def login_root(slurm, host) -> Path:
    """The folder of a login node's jobs and copies: `slurm.workdir`, else
    `slurm` under the workdir of `host` (its `SshHost`)."""
    return Path(slurm.workdir) if slurm.workdir else Path(host.workdir) / "slurm"


def login_package(root: Path) -> Path:
    """Where this specdsl's package is copied under a login node's `root`
    (`lib/specdsl-<digest>`: another version gets its own)."""
    return root / "lib" / f"specdsl-{package_digest()}"


class LocalSite:
    """Jobs submitted from this machine; their folders are read in place."""

    remote = False

    def __init__(self, decl, walk, client: SlurmClient | None = None) -> None:
        slurm = decl.slurm
        self.decl = decl
        self.client = client or SlurmClient(env=slurm_env(slurm))
        self.root = Path(slurm.workdir) if slurm.workdir else Path(walk.writer.state_dir) / "slurm"
        env_root = Path(slurm.workdir) / "envs" if slurm.workdir else (walk.registry.env_root or default_env_root())
        self.env_root = Path(env_root).resolve()
        self.python = slurm.python or sys.executable
        self.package = package_folder().parent  # what PYTHONPATH names in the batch script
        self.spec_dir = str(Path(walk.spec_dir).resolve())
        self.shares = "this machine"

    def prepare(self) -> None:
        private.make_dirs(self.root)

    def make_dirs(self, folder: Path) -> None:
        private.make_dirs(folder)

    def write_text(self, path: Path, text: str, mode: int = 0o600) -> None:
        private.write_text(path, text)
        Path(path).chmod(mode)

    def read_from(self, path: Path, offset: int) -> bytes:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                return f.read()
        except OSError:
            return b""

    def local_of(self, folder: Path) -> Path:
        return folder

    def bring_back(self, folder: Path, local: Path) -> None:
        return None  # one folder


class SshSite:
    """Jobs submitted on a login node over SSH (`host` is its `SshHost`)."""

    remote = True

    def __init__(self, decl, walk, host, client: SlurmClient | None = None) -> None:
        slurm = decl.slurm
        self.decl = decl
        self.host = host
        self.client = client or SlurmClient(runner=SshRunner(host, slurm_env(slurm)))
        self.root = login_root(slurm, host)
        self.env_root = Path(slurm.workdir) / "envs" if slurm.workdir else Path(host.env_root)
        self.python = slurm.python or "python3"
        self.package = login_package(self.root)
        self.spec_dir = None  # the job's own folder: the spec's folder is not on the cluster
        self.mirror = Path(walk.writer.state_dir) / "slurm" / "jobs"
        self.shares = "the login node"

    def prepare(self) -> None:
        """The job folders' root and this specdsl's package on the login node."""
        self.host.mkdir(self.root)
        self.host.put_tree(package_folder(), self.package / "specdsl")

    def make_dirs(self, folder: Path) -> None:
        self.host.mkdir(folder)

    def write_text(self, path: Path, text: str, mode: int = 0o600) -> None:
        self.host.write_text(path, text, mode=mode)

    def read_from(self, path: Path, offset: int) -> bytes:
        return self.host.read_from(path, offset)

    def local_of(self, folder: Path) -> Path:
        local = self.mirror / folder.name
        private.make_dirs(local)
        return local

    def bring_back(self, folder: Path, local: Path) -> None:
        self.host.collect(folder, local)
        private.tighten(local)
