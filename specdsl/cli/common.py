"""Shared CLI steps: resolve a spec (printing diagnostics), find and read
state, and turn state errors into messages and exit codes."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import attrs

from specdsl.cli.lang_commands import parse_vars
from specdsl.cli.views import print_diags
from specdsl.resolve.resolver import Resolved, resolve_file

# apply's other codes (3 check failed, 4 inconclusive, 5 step failed) come from the walk's result
EXIT_OK, EXIT_ERROR, EXIT_CHANGES, EXIT_CONFLICT = 0, 1, 2, 6


@attrs.frozen
class Loaded:
    spec: str
    resolved: Resolved
    variables: dict
    digest: str  # spec files + variable files + -var values


def load_spec(args) -> Loaded | None:
    """Resolve the spec named by args.file with args.vars/args.var_files;
    print diagnostics; None when invalid."""
    variables, bad = parse_vars(getattr(args, "vars", []))
    if bad:
        print(f"specdsl: error: -var expects NAME=VALUE, got {bad[0]!r}", file=sys.stderr)
        return None
    resolved = resolve_file(Path(args.file), variables, [Path(f) for f in getattr(args, "var_files", [])])
    print_diags(resolved.diags, resolved.sources.texts)
    if not resolved.ok:
        return None
    h = hashlib.sha256(resolved.sources.digest().encode())
    h.update(json.dumps(sorted(variables.items())).encode())
    return Loaded(args.file, resolved, variables, h.hexdigest())


def error(message: str) -> None:
    print(f"specdsl: error: {message}", file=sys.stderr)
