"""Pip's configured package sources, so that uv sees what pip sees.

uv ignores pip's configuration. A machine's pip configuration is where its
package mirror is named: this workplace's find-links folder with
`torch==2.13.0+cpu`, a user's `extra-index-url =
https://download.pytorch.org/whl/cpu`, a company mirror as `index-url`. We
read it with `python -m pip config list` (pip itself applies its rules:
global, user and site files, PIP_CONFIG_FILE, PIP_* variables) and hand the
sources to uv.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import tempfile
from pathlib import Path

import attrs

from specdsl.hosts.local import LocalHost

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


def read_pip_sources(python: str = sys.executable, host: LocalHost | None = None) -> PipSources:
    """Pip's configured sources as `python -m pip` sees them on this machine.

    Without pip in that interpreter (specdsl installed by uv, say) only the
    PIP_* environment variables are read."""
    host = host or LocalHost()
    with tempfile.TemporaryDirectory(prefix="specdsl-pipconf-") as tmp:
        log = Path(tmp) / "pip-config.log"
        result = host.run([python, "-m", "pip", "config", "list"], log_path=log, timeout=60)
        if not result.ok:
            return parse_config_list(_env_as_config_list(os.environ))
        return parse_config_list(log.read_text())


def _env_as_config_list(environ) -> str:
    """PIP_* variables in `pip config list`'s form (`:env:.key='value'`)."""
    lines = []
    for name, value in sorted(environ.items()):
        if name.startswith("PIP_"):
            key = name[4:].lower().replace("_", "-")
            lines.append(f":env:.{key}={value!r}")
    return "\n".join(lines)
