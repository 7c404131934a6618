"""Pip's configured package sources, so that uv sees what pip sees.

uv ignores pip's configuration. A machine's pip configuration is where its
package mirror is named: this workplace's find-links folder with
`torch==2.13.0+cpu`, a user's `extra-index-url =
https://download.pytorch.org/whl/cpu`, a company mirror as `index-url`. It is
the *host's* configuration that counts (the install runs there): a small
script run on the host asks `python -m pip config list` (pip itself applies
its rules: global, user and site files, PIP_CONFIG_FILE, PIP_* variables)
and reads the host's PIP_* and SSL_CERT_FILE variables; the sources are
handed to uv.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import attrs

from specdsl.hosts import Host, HostError

_LINE = re.compile(r"^(?P<scope>[^.]*)\.(?P<key>[a-z0-9-]+)=(?P<value>.*)$")
# Which sections count for `pip install` (pip reads global, then install, then env).
_SECTIONS = {"global", "install", ":env:"}


@attrs.frozen
class PipSources:
    """Package sources from pip's configuration (lists keep pip's order)."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    cert: str | None = None
    # SSL_CERT_FILE as the host's environment sets it (None: unset)
    ssl_cert_file: str | None = None


def parse_config_list(text: str) -> PipSources:
    """Parse `pip config list` output (`section.key='value'` lines).

    Later lines win for single values; list values (find-links,
    extra-index-url, constraint) are whitespace-separated and merged without
    duplicates."""
    single: dict[str, str] = {}
    lists: dict[str, list[str]] = {"find-links": [], "extra-index-url": [], "constraint": []}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if not m or m["scope"] not in _SECTIONS:
            continue
        try:
            value = ast.literal_eval(m["value"])
        except (ValueError, SyntaxError):
            value = m["value"]
        value = str(value)
        key = m["key"]
        if key in lists:
            for item in value.split():
                if item not in lists[key]:
                    lists[key].append(item)
        else:
            single[key] = value
    return PipSources(
        index_url=single.get("index-url"),
        extra_index_urls=tuple(lists["extra-index-url"]),
        find_links=tuple(lists["find-links"]),
        constraints=tuple(lists["constraint"]),
        cert=single.get("cert"),
    )


# Run on the host (standard library only): pip's configuration as `pip
# config list` prints it (None without pip), and the variables that matter.
_READ_CONFIG = r"""
import json, os, subprocess, sys
out = {"env": {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k == "SSL_CERT_FILE"}, "pip": None}
try:
    proc = subprocess.run([sys.executable, "-m", "pip", "config", "list"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=float(sys.argv[2]))
    if proc.returncode == 0:
        out["pip"] = proc.stdout
except Exception:
    pass
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
"""
READ_TIMEOUT_S = 60.0


def read_pip_sources(host: Host, python: str | None = None) -> PipSources:
    """Pip's configured sources as `python -m pip` sees them on `host`
    (`python`: the host's default interpreter unless given).

    Without pip in that interpreter (specdsl installed by uv, say) only the
    host's PIP_* environment variables are read; when the interpreter does
    not run at all, there are no configured sources."""
    python = python or host.default_python
    with host.temp_dir(prefix="specdsl-pipconf-") as tmp:
        script, out, log = tmp / "read_pip_config.py", tmp / "pip-config.json", tmp / "pip-config.log"
        host.write_text(script, _READ_CONFIG)
        argv = [python, str(script), str(out), str(READ_TIMEOUT_S)]
        try:
            result = host.run(argv, log_path=log, timeout=READ_TIMEOUT_S + 30)
            found = json.loads(host.read_text(out)) if result.ok else None
        except (HostError, OSError, ValueError):  # no such interpreter, no output, not JSON
            found = None
    if not isinstance(found, dict):
        return PipSources()
    env = found.get("env") or {}
    text = found["pip"] if isinstance(found.get("pip"), str) else _env_as_config_list(env)
    return attrs.evolve(parse_config_list(text), ssl_cert_file=env.get("SSL_CERT_FILE") or None)


def _env_as_config_list(environ) -> str:
    """PIP_* variables in `pip config list`'s form (`:env:.key='value'`)."""
    lines = []
    for name, value in sorted(environ.items()):
        if name.startswith("PIP_"):
            key = name[4:].lower().replace("_", "-")
            lines.append(f":env:.{key}={value!r}")
    return "\n".join(lines)
