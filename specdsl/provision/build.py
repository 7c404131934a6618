"""Build, record, reuse and verify one isolated environment per stack identity.

Layout under `root`:

    <identity>/venv/               the environment
    <identity>/overrides.txt       uv overrides (stack overrides + excluded deps)
    <identity>/specdsl-env.json    the marker: record + stack, written last
    <identity>.lock                held while building

Package sources, in this order: the stack's `index` and `find_links`, then
pip's configured sources on this machine (see `pipconf`), so that uv finds
what pip would. Indexes are merged pip-style (best version over all of them:
`--index-strategy unsafe-best-match`) so both installers resolve a stack
alike. An index that does not answer (DNS, refused, timeout) or a find-links
folder that does not exist is left out with a warning: an unreachable mirror
must not break an install that can succeed without it.

A stack with `python = "system"` (or an interpreter path) gets a venv over
that interpreter (`--system-site-packages`, so its preinstalled packages
count) and installs its packages from find-links only (`--no-index`): for
hosts without any registry.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import sys
import tempfile
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable
from urllib.parse import urlparse

import attrs
import requests

from specdsl.hosts.http import session
from specdsl.hosts import HostError
from specdsl.hosts.local import LocalHost
from specdsl.model.config import Stack, canonical_json
from specdsl.provision.pipconf import PipSources, read_pip_sources
from specdsl.provision.probe import ProbeFailed, probe
from specdsl.provision.envinfo import EnvInfo, ProvisionError, read_marker, write_marker

INSTALL_TIMEOUT_S = 3600.0
VENV_TIMEOUT_S = 300.0
INDEX_PROBE_TIMEOUT_S = 5.0
NEVER = "sys_platform == 'never'"  # uv drops a dependency overridden with a marker that never holds

Progress = Callable[[str], None]


def provision(
    stack: Stack,
    root: Path,
    identity: str,
    log_path: Path,
    *,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> EnvInfo:
    """The environment of `stack` under `root/identity`, built if needed.

    Reuses an existing one when its marker names the same stack and it still
    verifies; otherwise builds it afresh (venv, install, probe, CUDA check,
    marker). Every command and its output go to `log_path`. Raises
    `ProvisionError` (exact command, installer's last lines) on failure and
    `hosts.Cancelled` when `stop` is set."""
    say = progress or (lambda _msg: None)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    folder = root / identity
    # The name is a label: two stacks with the same content share an environment.
    stack_json = canonical_json(attrs.evolve(stack, name=""))
    with _locked(root / f"{identity}.lock"):
        found = read_marker(folder)
        if found is not None:
            record, stored = found
            if json.dumps(stored, sort_keys=True, separators=(",", ":")) == stack_json and verify(record):
                say(f"reusing environment {identity}")
                return record
            say(f"environment {identity} no longer matches its record: rebuilding")
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        return _build(stack, folder, identity, stack_json, Path(log_path), say, stop)


def verify(record: EnvInfo) -> bool:
    """True when the environment is still there and holds what its record
    says: the marker names it, the interpreter runs with the recorded Python
    version, and the installed distributions equal the recorded ones."""
    venv = Path(record.path)
    found = read_marker(venv.parent)
    if found is None or found[0].identity != record.identity or not Path(record.python).exists():
        return False
    log = venv.parent / "verify.log"
    try:
        facts = probe(record.python, log, torch=False, env=record.env)
    except ProbeFailed:
        return False
    return facts["python_version"] == record.python_version and facts["packages"] == record.packages


# -- building ------------------------------------------------------------------


def _build(stack, folder, identity, stack_json, log_path, say, stop) -> EnvInfo:
    host = LocalHost()
    if stack.installer not in ("uv", "pip"):
        raise ProvisionError(f"Stack {stack.name!r}: unknown installer {stack.installer!r} (use \"uv\" or \"pip\")")
    existing = _existing_interpreter(stack)
    if existing is not None and stack.index:
        raise ProvisionError(
            f"Stack {stack.name!r} uses an existing interpreter ({stack.python}) and installs from "
            "find-links only; it cannot also name an index. Remove `index` or give a Python version."
        )
    env = {k: str(v) for k, v in stack.env}
    warnings: list[str] = []
    pip_sources = read_pip_sources(host=host) if stack.installer == "uv" else PipSources()
    venv = folder / "venv"
    python = str(venv / "bin" / "python")

    def run(argv: list[str], what: str, extra_env: dict[str, str] | None = None, timeout: float = INSTALL_TIMEOUT_S):
        say(what)
        try:
            result = host.run(argv, log_path=log_path, timeout=timeout, env={**env, **(extra_env or {})}, stop=stop)
        except HostError as exc:  # the program itself is missing
            raise ProvisionError(f"Provisioning stack {stack.name!r} failed: {what}: {exc}", command=list(argv), log_path=str(log_path)) from None
        if not result.ok:
            status = f"timed out after {timeout:.0f}s" if result.timed_out else f"exited {result.returncode}"
            raise ProvisionError(
                f"Provisioning stack {stack.name!r} failed: {what} {status}",
                command=list(argv),
                tail=_strip_footer(result.tail),
                log_path=str(log_path),
            )
        return result

    sources, uv_env = _sources(stack, pip_sources, no_index=existing is not None, installer=stack.installer, warnings=warnings)
    for w in warnings:
        say(f"warning: {w}")
    if stack.installer == "uv":
        uv = _uv_bin()
        venv_argv = [uv, "venv", "--quiet", "--python", existing or stack.python]
        if existing is not None:
            venv_argv.append("--system-site-packages")
        run(venv_argv + [str(venv)], f"creating environment (Python {existing or stack.python})", timeout=VENV_TIMEOUT_S)
        if existing is not None:
            _inherit_site_packages(existing, python, run)
        overrides = list(stack.overrides) + [f"{name}; {NEVER}" for name in stack.exclude]
        argv = [uv, "pip", "install", "--python", python, *sources]
        if overrides:
            (folder / "overrides.txt").write_text("\n".join(overrides) + "\n")
            argv += ["--override", str(folder / "overrides.txt")]
        if stack.packages:
            run(argv + list(stack.packages), f"installing {len(stack.packages)} packages with uv", uv_env)
    else:
        base = _pip_base_python(stack, existing)
        venv_argv = [base, "-m", "venv"] + (["--system-site-packages"] if existing else []) + [str(venv)]
        run(venv_argv, f"creating environment (Python {existing or stack.python})", timeout=VENV_TIMEOUT_S)
        if existing is not None:
            _inherit_site_packages(existing, python, run)
        pip = [python, "-m", "pip", "install", "--disable-pip-version-check", *sources]
        if stack.packages:
            run(pip + list(stack.packages), f"installing {len(stack.packages)} packages with pip")
        # pip has no overrides: force them afterwards without their dependencies,
        # and remove excluded dependencies once the resolver pulled them in.
        if stack.overrides:
            run(pip + ["--no-deps", *stack.overrides], "forcing overrides with pip")
        if stack.exclude:
            run([python, "-m", "pip", "uninstall", "-y", *stack.exclude], "removing excluded packages")

    say("recording installed versions")
    try:
        facts = probe(python, log_path, torch=True, env=env, host=host)
    except ProbeFailed as exc:
        raise ProvisionError(
            f"Provisioning stack {stack.name!r} failed: the new environment's Python does not run",
            command=exc.argv, tail=exc.tail, log_path=str(log_path),
        ) from None
    if "torch_error" in facts:
        raise ProvisionError(
            f"Provisioning stack {stack.name!r} failed: torch is installed but does not import",
            command=[python, "-c", "import torch"], tail="\n".join(facts["torch_error"].splitlines()[-30:]),
            log_path=str(log_path),
        )
    nvcc = _check_nvcc(stack, env, host, log_path) if stack.cuda else None
    record = EnvInfo(
        identity=identity,
        path=str(venv),
        python=python,
        python_version=facts["python_version"],
        packages=dict(sorted(facts["packages"].items())),
        torch=facts.get("torch"),
        nvcc=nvcc,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        env=env,
        installer=stack.installer,
        warnings=tuple(warnings),
    )
    write_marker(folder, record, stack_json)
    say(f"environment {identity} ready")
    return record


def _sources(stack, pip_sources: PipSources, *, no_index: bool, installer: str, warnings: list[str]):
    """Installer arguments naming package sources, and env for uv.

    pip reads its own configuration; uv gets pip's sources passed on."""
    find_links = list(stack.find_links) + [f for f in pip_sources.find_links if f not in stack.find_links]
    args: list[str] = []
    uv_env: dict[str, str] = {}
    for link in find_links:
        if _reachable(link, warnings, "find-links"):
            args += ["--find-links", link]
    if no_index:
        return ["--no-index", *args], uv_env
    extra = list(stack.index) + [u for u in pip_sources.extra_index_urls if u not in stack.index]
    reachable_extra = [u for u in extra if _reachable(u, warnings, "index")]
    for url in reachable_extra:
        args += ["--extra-index-url", url]
    if pip_sources.index_url and _reachable(pip_sources.index_url, warnings, "index"):
        args += ["--index-url", pip_sources.index_url]
    if installer == "uv":
        if reachable_extra:
            args += ["--index-strategy", "unsafe-best-match"]
        for constraint in pip_sources.constraints:
            if Path(constraint).exists():
                args += ["--constraint", constraint]
        if pip_sources.cert and "SSL_CERT_FILE" not in os.environ:
            uv_env["SSL_CERT_FILE"] = pip_sources.cert
    return args, uv_env


def _reachable(location: str, warnings: list[str], kind: str) -> bool:
    """Whether a package source answers; a warning is added when it does not."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        path = Path(parsed.path if parsed.scheme == "file" else location)
        if path.exists():
            return True
        warnings.append(f"{kind} {location} does not exist on this machine: left out")
        return False
    try:
        session(INDEX_PROBE_TIMEOUT_S).get(location, stream=True).close()
        return True  # any HTTP answer, even 404 at the root, is a live server
    except requests.RequestException as exc:
        reason = type(exc).__name__
        warnings.append(f"{kind} {location} is unreachable from this machine ({reason}): left out")
        return False


def _existing_interpreter(stack: Stack) -> str | None:
    """The interpreter path when the stack uses an existing one, else None."""
    if stack.python == "system":
        return sys.executable
    if "/" in stack.python:
        if not (os.path.isfile(stack.python) and os.access(stack.python, os.X_OK)):
            raise ProvisionError(f"Stack {stack.name!r}: interpreter {stack.python} does not exist or is not executable")
        return stack.python
    return None


_WRITE_SITE_DIRS = "import site, sys; open(sys.argv[1], 'w').write(chr(10).join(site.getsitepackages()))"
_WRITE_PURELIB = "import sys, sysconfig; open(sys.argv[1], 'w').write(sysconfig.get_paths()['purelib'])"


def _inherit_site_packages(existing: str, python: str, run) -> None:
    """Make the existing interpreter's packages visible in the new env.

    `--system-site-packages` reaches only the *base* interpreter's packages;
    when the existing interpreter is itself a virtual environment (a GPU
    host's preinstalled torch venv, say) its packages would stay invisible.
    A `.pth` file in the new env lists the existing interpreter's site
    folders after the env's own, so what the stack installs still comes first."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        run([existing, "-c", _WRITE_SITE_DIRS, str(out)], "reading the existing interpreter's site folders", timeout=60)
        dirs = [d for d in out.read_text().splitlines() if d and Path(d).is_dir()]
        run([python, "-c", _WRITE_PURELIB, str(out)], "finding the environment's site folder", timeout=60)
        purelib = Path(out.read_text().strip())
    inherited = [d for d in dirs if Path(d).resolve() != purelib.resolve()]
    if inherited:
        (purelib / "specdsl-inherited.pth").write_text("\n".join(inherited) + "\n")


def _pip_base_python(stack: Stack, existing: str | None) -> str:
    """An interpreter of the stack's Python version for `python -m venv`."""
    if existing:
        return existing
    if re.fullmatch(r"\d+\.\d+", stack.python) and f"{sys.version_info[0]}.{sys.version_info[1]}" == stack.python:
        return sys.executable
    found = shutil.which(f"python{stack.python}")
    if not found:
        raise ProvisionError(
            f"Stack {stack.name!r}: installer \"pip\" needs a python{stack.python} on PATH; none found. "
            "Install that Python or use installer = \"uv\"."
        )
    return found


def _check_nvcc(stack: Stack, env: dict[str, str], host: LocalHost, log_path: Path) -> str:
    """The CUDA toolkit release under CUDA_HOME; it must match `stack.cuda`."""
    cuda_home = env.get("CUDA_HOME") or os.environ.get("CUDA_HOME") or f"/usr/local/cuda-{stack.cuda}"
    nvcc = Path(cuda_home) / "bin" / "nvcc"
    argv = [str(nvcc), "--version"]
    if not nvcc.exists():
        raise ProvisionError(
            f"Stack {stack.name!r} declares cuda = {stack.cuda!r} but {nvcc} does not exist. "
            "Install the CUDA toolkit there or set CUDA_HOME in the stack's env.",
            command=argv, log_path=str(log_path),
        )
    result = host.run(argv, log_path=log_path, timeout=60, env=env)
    match = re.search(r"release (\d+\.\d+)", result.tail)
    if not result.ok or not match:
        raise ProvisionError(f"Stack {stack.name!r}: `nvcc --version` failed", command=argv, tail=result.tail, log_path=str(log_path))
    if not (match[1] == stack.cuda or match[1].startswith(stack.cuda + ".")):
        raise ProvisionError(
            f"Stack {stack.name!r} declares cuda = {stack.cuda!r} but {nvcc} is release {match[1]}. "
            "Point CUDA_HOME at the matching toolkit.",
            command=argv, tail=result.tail, log_path=str(log_path),
        )
    return match[1]


def _uv_bin() -> str:
    import uv

    return uv.find_uv_bin()


def _strip_footer(tail: str) -> str:
    return "\n".join(line for line in tail.splitlines() if not line.startswith("[specdsl] "))


@contextmanager
def _locked(path: Path):
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
