"""Build, record, reuse and verify one isolated environment per stack identity.

Everything happens on a `Host`: commands through `host.run`, files through
its file methods, the build lock through `host.lock`. Layout under
`host.env_root`:

    <identity>/venv/               the environment
    <identity>/overrides.txt       uv overrides (stack overrides + excluded deps)
    <identity>/specdsl-env.json    the marker: record + stack, written last
    <identity>.lock                held while building

Folders are made 0700 and files 0600 (the host's `mkdir` and `write_text`,
never around them): an environment record is its owner's only. Package
sources are worked out in `sources`.

A stack with `python = "system"` (the host's default interpreter) or an
interpreter path gets a venv over that interpreter
(`--system-site-packages`, so its preinstalled packages count) and installs
its packages from find-links only (`--no-index`): for hosts without any
registry.
"""

from __future__ import annotations

import json
import re
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import attrs

from specdsl.hosts import Host, HostError
from specdsl.model.config import Stack, canonical_json
from specdsl.provision.envinfo import EnvInfo, ProvisionError, marker_stack_json, read_marker, write_marker
from specdsl.provision.pipconf import PipSources, read_pip_sources
from specdsl.provision.probe import ProbeFailed, probe
from specdsl.provision.sources import Sources, package_sources

INSTALL_TIMEOUT_S = 3600.0
VENV_TIMEOUT_S = 300.0
QUERY_TIMEOUT_S = 60.0
NEVER = "sys_platform == 'never'"  # uv drops a dependency overridden with a marker that never holds

Progress = Callable[[str], None]


def provision(
    stack: Stack,
    host: Host,
    identity: str,
    log_path: Path,
    *,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> EnvInfo:
    """The environment of `stack` under `host.env_root / identity`, built if needed.

    Reuses an existing one when its marker names the same stack and it still
    verifies (that record carries no warnings: nothing was worked around
    now); otherwise builds it afresh (venv, install, probe, CUDA check,
    marker). Every command and its output go to `log_path`, a path on the
    host. Raises `ProvisionError` (exact command, installer's last lines) on
    failure and `hosts.Cancelled` when `stop` is set."""
    say = progress or (lambda _msg: None)
    root = Path(host.env_root)
    folder = root / identity
    log_path = Path(log_path)
    host.mkdir(root)
    host.mkdir(log_path.parent)
    stack_json = _stack_json(stack)
    with host.lock(root / f"{identity}.lock"):
        found = read_marker(host, folder)
        if found is not None:
            record, stored = found
            # the marker keeps no secret: the environment is the stack's own
            record = attrs.evolve(record, env={k: str(v) for k, v in stack.env})
            if _same_stack(stored, marker_stack_json(stack_json)) and verify(record, host):
                say(f"reusing environment {identity}")
                return _as_reused(record)
            say(f"environment {identity} no longer matches its record: rebuilding")
        host.remove_tree(folder)
        host.mkdir(folder)
        return _build(stack, host, folder, identity, stack_json, log_path, say, stop)


def find(host: Host, identity: str) -> EnvInfo | None:
    """The environment recorded under `identity` on `host`, when its marker
    is there and it verifies; else None. Takes no lock (a build in progress
    has no marker yet) and builds nothing: refresh asks it so that a plan
    sees an environment the cache holds although this spec's state does not
    record it."""
    folder = Path(host.env_root) / identity
    found = read_marker(host, folder)
    if found is None:
        return None
    record = found[0]
    if record.identity != identity or Path(record.path) != folder / "venv" or not verify(record, host):
        return None
    return _as_reused(record)


def verify(record: EnvInfo, host: Host) -> bool:
    """True when the environment is still there on `host` and holds what its
    record says: the marker names it, the interpreter runs with the recorded
    Python version, and the installed distributions equal the recorded ones."""
    venv = Path(record.path)
    found = read_marker(host, venv.parent)
    if found is None or found[0].identity != record.identity or not host.exists(Path(record.python)):
        return False
    log = venv.parent / "verify.log"
    try:
        facts = probe(host, record.python, log, torch=False, env=record.env)
    except ProbeFailed:
        return False
    return facts["python_version"] == record.python_version and facts["packages"] == record.packages


def _stack_json(stack: Stack) -> str:
    # The name is a label: two stacks with the same content share an environment.
    return canonical_json(attrs.evolve(stack, name=""))


def _same_stack(stored: dict, stack_json: str) -> bool:
    return json.dumps(stored, sort_keys=True, separators=(",", ":")) == stack_json


def _as_reused(record: EnvInfo) -> EnvInfo:
    """A record handed out for reuse carries no warnings: what its build
    worked around (an index left out then) was reported then and stays in
    the marker; it must not be reported again as if it happened now."""
    return attrs.evolve(record, warnings=())


# -- building ------------------------------------------------------------------


def _build(stack: Stack, host: Host, folder: Path, identity: str, stack_json: str, log_path: Path, say, stop) -> EnvInfo:
    existing = _checked_interpreter(stack, host)
    env = {k: str(v) for k, v in stack.env}
    venv = folder / "venv"
    python = str(venv / "bin" / "python")
    run = _runner(stack, host, env, log_path, say, stop)
    if stack.installer == "prebuilt":
        sources = Sources()
    else:
        pip_sources = read_pip_sources(host) if stack.installer == "uv" else PipSources()
        sources = package_sources(host, stack, pip_sources, no_index=existing is not None, log_path=log_path)
    for w in sources.warnings:
        say(f"warning: {w}")
    _INSTALL[stack.installer](stack, host, folder, existing, sources, run)
    say("recording installed versions")
    facts = _probe_new(stack, host, python, log_path, env)
    if stack.installer == "prebuilt":
        pinned = _check_prebuilt(stack, facts["packages"])
        # the tree was installed without its console scripts (their shebangs
        # name the machine that built it): write the pinned packages' own,
        # so `vllm serve` and `transformers serve` run from the environment
        run([python, "-c", CONSOLE_SCRIPTS, *pinned],
            "writing the prebuilt packages' console scripts", timeout=VENV_TIMEOUT_S)
    nvcc = _check_nvcc(stack, env, host, log_path, facts.get("cuda_home")) if stack.cuda else None
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
        warnings=sources.warnings,
    )
    write_marker(host, folder, record, stack_json)
    say(f"environment {identity} ready")
    return record


def _checked_interpreter(stack: Stack, host: Host) -> str | None:
    """The existing interpreter the stack builds over (None: a new Python),
    after the checks of its installer against it."""
    if stack.installer not in ("uv", "pip", "prebuilt"):
        raise ProvisionError(f"Stack {stack.name!r}: unknown installer {stack.installer!r} (use \"uv\", \"pip\" or \"prebuilt\")")
    existing = _existing_interpreter(stack, host)
    if stack.installer == "prebuilt" and existing is None:
        raise ProvisionError(
            f"Stack {stack.name!r}: installer \"prebuilt\" installs nothing, so it needs an existing interpreter: "
            "set python = \"system\" or a path (and the prebuilt tree in env.PYTHONPATH)"
        )
    if existing is not None and stack.index:
        raise ProvisionError(
            f"Stack {stack.name!r} uses an existing interpreter ({stack.python}) and installs from "
            "find-links only; it cannot also name an index. Remove `index` or give a Python version."
        )
    return existing


def _runner(stack: Stack, host: Host, env: dict[str, str], log_path: Path, say, stop):
    """`run(argv, what, extra_env=None, timeout=INSTALL_TIMEOUT_S)`: one
    step of the build on `host`, said, logged; a failure is a ProvisionError
    with its command and the log's tail."""

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

    return run


def _install_prebuilt(stack: Stack, host: Host, folder: Path, existing: str, sources: Sources, run) -> None:
    # nothing is installed or resolved: the packages are already there (a
    # carried site tree in env.PYTHONPATH over the host's interpreter);
    # the pins are checked against what the new environment sees (_build)
    venv = folder / "venv"
    run([existing, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], f"creating environment (Python {existing})",
        timeout=VENV_TIMEOUT_S)
    _inherit_site_packages(host, existing, str(venv / "bin" / "python"), run)


def _install_uv(stack: Stack, host: Host, folder: Path, existing: str | None, sources: Sources, run) -> None:
    venv = folder / "venv"
    python = str(venv / "bin" / "python")
    uv = host.which("uv")
    if uv is None:
        raise ProvisionError(f"Stack {stack.name!r}: no `uv` on host {host.name}. Install uv there or use installer = \"pip\".")
    venv_argv = [uv, "venv", "--quiet", "--python", existing or stack.python]
    if existing is not None:
        venv_argv.append("--system-site-packages")
    run(venv_argv + [str(venv)], f"creating environment (Python {existing or stack.python})", timeout=VENV_TIMEOUT_S)
    if existing is not None:
        _inherit_site_packages(host, existing, python, run)
    overrides = list(stack.overrides) + [f"{name}; {NEVER}" for name in stack.exclude]
    argv = [uv, "pip", "install", "--python", python, *sources.args]
    if overrides:
        host.write_text(folder / "overrides.txt", "\n".join(overrides) + "\n")
        argv += ["--override", str(folder / "overrides.txt")]
    if stack.packages:
        run(argv + list(stack.packages), f"installing {len(stack.packages)} packages with uv", sources.uv_env)


def _install_pip(stack: Stack, host: Host, folder: Path, existing: str | None, sources: Sources, run) -> None:
    venv = folder / "venv"
    python = str(venv / "bin" / "python")
    base = _pip_base_python(stack, existing, host)
    venv_argv = [base, "-m", "venv"] + (["--system-site-packages"] if existing else []) + [str(venv)]
    run(venv_argv, f"creating environment (Python {existing or stack.python})", timeout=VENV_TIMEOUT_S)
    if existing is not None:
        _inherit_site_packages(host, existing, python, run)
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", *sources.args]
    if stack.packages:
        run(pip + list(stack.packages), f"installing {len(stack.packages)} packages with pip")
    # pip has no overrides: force them afterwards without their dependencies,
    # and remove excluded dependencies once the resolver pulled them in.
    if stack.overrides:
        run(pip + ["--no-deps", *stack.overrides], "forcing overrides with pip")
    if stack.exclude:
        run([python, "-m", "pip", "uninstall", "-y", *stack.exclude], "removing excluded packages")


_INSTALL = {"prebuilt": _install_prebuilt, "uv": _install_uv, "pip": _install_pip}


def _probe_new(stack: Stack, host: Host, python: str, log_path: Path, env: dict[str, str]) -> dict:
    """What the new environment's own interpreter says of it (torch
    included); a Python that does not run, or a torch that does not
    import, is a ProvisionError."""
    try:
        facts = probe(host, python, log_path, torch=True, env=env)
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
    return facts


# Run by the environment's own interpreter (with the stack's env, so the
# prebuilt tree on PYTHONPATH is seen): for each named distribution, a
# script in the environment's bin/ per console_scripts entry point that is
# not there yet, the way an installer writes them.
CONSOLE_SCRIPTS = """
import importlib.metadata as md, os, sys
bin_dir = os.path.join(sys.prefix, "bin")
for name in sys.argv[1:]:
    try:
        entry_points = md.distribution(name).entry_points
    except md.PackageNotFoundError:
        continue
    for ep in entry_points:
        path = os.path.join(bin_dir, ep.name)
        if ep.group != "console_scripts" or os.path.exists(path):
            continue
        module, _, attr = ep.value.partition(":")
        if not attr.strip():
            continue
        with open(path, "w") as f:
            # the guard matters: an engine that starts workers with
            # multiprocessing's spawn re-imports this file in each of them
            # (vLLM's engine core; without it the child starts vLLM again)
            f.write(f"#!{sys.executable}\\nimport importlib, sys\\n"
                    f"if __name__ == '__main__':\\n"
                    f"    target = importlib.import_module({module.strip()!r})\\n"
                    f"    for part in {attr.strip()!r}.split('.'):\\n        target = getattr(target, part)\\n"
                    f"    sys.exit(target())\\n")
        os.chmod(path, 0o755)
        print(f"{ep.name} -> {ep.value}")
"""


def _check_prebuilt(stack: Stack, found: dict[str, str]) -> list[str]:
    """Every `name==version` of a prebuilt stack must be what the environment
    holds (nothing was installed: a pin that is not met is a wrong carry).
    Returns the pinned names."""
    norm = {re.sub(r"[-_.]+", "-", k).lower(): v for k, v in found.items()}
    wrong, names = [], []
    for pin in stack.packages:
        m = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:==\s*(\S+))?\s*", pin)
        if not m:
            wrong.append(f"{pin}: a prebuilt stack pins packages as NAME or NAME==VERSION")
            continue
        names.append(m[1])
        name = re.sub(r"[-_.]+", "-", m[1]).lower()
        have = norm.get(name)
        if have is None:
            wrong.append(f"{pin}: not in the environment")
        elif m[2] and have != m[2]:
            wrong.append(f"{pin}: the environment has {m[1]} {have}")
    if wrong:
        raise ProvisionError(
            f"Provisioning stack {stack.name!r} failed: installer \"prebuilt\" installs nothing and the environment "
            "does not hold what the stack pins: " + "; ".join(wrong)
            + " (check the prebuilt tree named in env.PYTHONPATH)"
        )
    return names


def _existing_interpreter(stack: Stack, host: Host) -> str | None:
    """The interpreter path when the stack uses an existing one, else None."""
    if stack.python == "system":
        return host.default_python
    if "/" in stack.python:
        if host.which(stack.python) is None:
            raise ProvisionError(f"Stack {stack.name!r}: interpreter {stack.python} does not exist or is not executable on host {host.name}")
        return stack.python
    return None


# Run with an interpreter on the host: write what is asked to argv[1].
_WRITE_SITE_DIRS = ("import os, site, sys; open(sys.argv[1], 'w').write(chr(10).join("
                    "os.path.realpath(d) for d in site.getsitepackages() if os.path.isdir(d)))")
_WRITE_PURELIB = "import os, sys, sysconfig; open(sys.argv[1], 'w').write(os.path.realpath(sysconfig.get_paths()['purelib']))"
_WRITE_VERSION = "import sys; open(sys.argv[1], 'w').write('%d.%d' % sys.version_info[:2])"


def _inherit_site_packages(host: Host, existing: str, python: str, run) -> None:
    """Make the existing interpreter's packages visible in the new env.

    `--system-site-packages` reaches only the *base* interpreter's packages;
    when the existing interpreter is itself a virtual environment (a GPU
    host's preinstalled torch venv, say) its packages would stay invisible.
    A `.pth` file in the new env lists the existing interpreter's site
    folders after the env's own, so what the stack installs still comes first."""
    with host.temp_dir(prefix="specdsl-site-") as tmp:
        out = tmp / "out"
        run([existing, "-c", _WRITE_SITE_DIRS, str(out)], "reading the existing interpreter's site folders", timeout=QUERY_TIMEOUT_S)
        dirs = [d for d in host.read_text(out).splitlines() if d]
        run([python, "-c", _WRITE_PURELIB, str(out)], "finding the environment's site folder", timeout=QUERY_TIMEOUT_S)
        purelib = host.read_text(out).strip()
    inherited = [d for d in dirs if d != purelib]
    if inherited:
        host.write_text(Path(purelib) / "specdsl-inherited.pth", "\n".join(inherited) + "\n")


def _pip_base_python(stack: Stack, existing: str | None, host: Host) -> str:
    """An interpreter of the stack's Python version for `python -m venv`:
    the host's default one when it is that version, else `pythonX.Y` on its PATH."""
    if existing:
        return existing
    if re.fullmatch(r"\d+\.\d+", stack.python) and _python_version(host, host.default_python) == stack.python:
        return host.default_python
    found = host.which(f"python{stack.python}")
    if not found:
        raise ProvisionError(
            f"Stack {stack.name!r}: installer \"pip\" needs a python{stack.python} on PATH on host {host.name}; none found. "
            "Install that Python or use installer = \"uv\"."
        )
    return found


def _python_version(host: Host, python: str) -> str | None:
    """"X.Y" of an interpreter on the host, None when it does not run."""
    with host.temp_dir(prefix="specdsl-version-") as tmp:
        out = tmp / "version"
        try:
            result = host.run([python, "-c", _WRITE_VERSION, str(out)], log_path=tmp / "version.log", timeout=QUERY_TIMEOUT_S)
            return host.read_text(out).strip() if result.ok else None
        except (HostError, FileNotFoundError):
            return None


def _check_nvcc(stack: Stack, env: dict[str, str], host: Host, log_path: Path, cuda_home: str | None) -> str:
    """The CUDA toolkit release under CUDA_HOME (as the environment's
    commands see it: the stack's env over the host's); it must match `stack.cuda`."""
    cuda_home = cuda_home or f"/usr/local/cuda-{stack.cuda}"
    nvcc = Path(cuda_home) / "bin" / "nvcc"
    argv = [str(nvcc), "--version"]
    if not host.exists(nvcc):
        raise ProvisionError(
            f"Stack {stack.name!r} declares cuda = {stack.cuda!r} but {nvcc} does not exist on host {host.name}. "
            "Install the CUDA toolkit there or set CUDA_HOME in the stack's env.",
            command=argv, log_path=str(log_path),
        )
    result = host.run(argv, log_path=log_path, timeout=QUERY_TIMEOUT_S, env=env)
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


def _strip_footer(tail: str) -> str:
    return "\n".join(line for line in tail.splitlines() if not line.startswith("[specdsl] "))
