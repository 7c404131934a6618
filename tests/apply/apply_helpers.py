"""Running `specdsl apply` as a user does: a real process, real servers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APPLY_TIMEOUT_S = 900


def env_root() -> Path:
    """Environments apply builds, kept across test sessions beside the
    fixtures' cache (tests/conftest.py) and reused by identity."""
    cache = os.environ.get("SPECDSL_TEST_ENV_CACHE") or Path.home() / ".cache" / "specdsl" / "test-envs"
    return Path(cache) / "apply-envs"


def cli_env(**extra) -> dict[str, str]:
    env = dict(os.environ)
    env["SPECDSL_ENV_ROOT"] = str(env_root())
    env.update(extra)
    return env


def specdsl(*args, cwd: Path, timeout: float = APPLY_TIMEOUT_S, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "specdsl.cli.main", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=cli_env(), **kw,
    )


def start_specdsl(*args, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "specdsl.cli.main", *map(str, args)],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=cli_env(), start_new_session=True,
    )


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention `text` (a tmp folder) or
    run in a folder under it (a server's workers, whose command lines name
    no path, inherit its working folder): what a test left behind."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            cwd = ""
        if text in cmd or cwd == text or cwd.startswith(text.rstrip("/") + "/"):
            found.append(f"{pid}: {cmd[:200]} (in {cwd})")
    return found
