"""The record of a provisioned environment, and the marker file that holds it.

The marker (`specdsl-env.json` beside the venv) is written last, after a
successful install and probe: an environment without it is unfinished and is
built again. It holds the record and the canonical stack it was built from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from specdsl import secrets
from specdsl.hosts import Host

MARKER = "specdsl-env.json"
FORMAT_VERSION = 1


class ProvisionError(Exception):
    """An environment could not be built or checked.

    `command` is the exact argv that failed ([] when no command did),
    `tail` the installer's last output lines; `str()` is the whole message a
    user needs: what failed, the command, the log path and the last lines."""

    def __init__(self, message: str, *, command: list[str] | None = None, tail: str = "", log_path: str | None = None):
        self.message = message
        self.command = list(command or [])
        self.tail = tail
        self.log_path = log_path
        super().__init__(self._render())

    def _render(self) -> str:
        import shlex

        parts = [self.message]
        if self.command:
            parts.append(f"  command: {shlex.join(self.command)}")
        if self.log_path:
            parts.append(f"  log: {self.log_path}")
        if self.tail:
            parts.append("  last lines:")
            parts.extend(f"    {line}" for line in self.tail.splitlines())
        return "\n".join(parts)


@attrs.frozen
class EnvInfo:
    """A provisioned environment: where it is and what is in it.

    `path` is the venv folder, `python` its interpreter, `packages` the
    resolved versions (lower-case normalized distribution names -> version),
    `torch` {"version", "cuda", "nccl"} where torch imports (cuda/nccl None on
    a CPU build), `nvcc` the toolkit release when the stack declares `cuda`.
    `env` are the stack's environment variables (applied to every command
    run in the environment, servers included); `warnings` what the build
    worked around (an unreachable index left out): empty in a record
    handed out for reuse, where nothing was built."""

    identity: str
    path: str
    python: str
    python_version: str
    packages: dict[str, str]
    torch: dict[str, Any] | None
    nvcc: str | None
    created: str
    env: dict[str, str] = attrs.field(factory=dict)
    installer: str = "uv"
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = attrs.asdict(self)
        out["warnings"] = list(self.warnings)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "EnvInfo":
        names = {f.name for f in attrs.fields(cls)}
        data = {k: v for k, v in data.items() if k in names}
        data["warnings"] = tuple(data.get("warnings", ()))
        return cls(**data)


def marker_stack_json(stack_json: str) -> str:
    """The canonical stack as the marker keeps it (and as a stack is compared
    with it): each sensitive value (an env value under a secret name, a URL
    password, a value resolving registered as sensitive) as its keyed
    digest, so a changed secret is still a different stack."""
    stack = json.loads(stack_json)
    found = set(secrets.known())
    env = stack.get("env") if isinstance(stack, dict) else None
    if isinstance(env, list):
        found.update(secrets.mapping_secrets((k, v) for k, v in env if isinstance(k, str)))
    texts = [v for _, v in env] if isinstance(env, list) else []
    for name in ("packages", "index", "find_links", "overrides"):
        texts += [t for t in (stack.get(name) or []) if isinstance(t, str)] if isinstance(stack, dict) else []
    for text in texts:
        found.update(secrets.url_secrets(str(text)))
    if not found:
        return stack_json
    return json.dumps(secrets.hide(stack, found), sort_keys=True, separators=(",", ":"))


def write_marker(host: Host, folder: Path, record: EnvInfo, stack_json: str) -> None:
    """Write the marker on the host (atomically, the owner's only). No
    sensitive value is in it: the stack's are keyed digests
    (`marker_stack_json`), the record's environment shows them as
    `(sensitive)`; a reused record gets its environment from the stack."""
    doc = record.to_json()
    doc["env"] = secrets.redact_env(doc.get("env") or {})
    payload = {"format_version": FORMAT_VERSION, "stack": json.loads(marker_stack_json(stack_json)), "record": doc}
    host.write_text(Path(folder) / MARKER, json.dumps(payload, indent=2, sort_keys=True) + "\n")


def read_marker(host: Host, folder: Path) -> tuple[EnvInfo, dict] | None:
    """(record, stack) from a folder's marker on the host, None when missing or unreadable."""
    try:
        payload = json.loads(host.read_text(Path(folder) / MARKER))
    except (FileNotFoundError, json.JSONDecodeError, OSError):
        return None
    if not isinstance(payload, dict) or payload.get("format_version") != FORMAT_VERSION:
        return None
    try:
        return EnvInfo.from_json(payload["record"]), payload["stack"]
    except (KeyError, TypeError):
        return None
