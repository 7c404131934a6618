"""Shared CLI steps: resolve a spec (printing diagnostics), find and read
state, and turn state errors into messages and exit codes."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import attrs

from specdsl import secrets
from specdsl.cli.lang_commands import parse_vars
from specdsl.cli.views import print_diags
from specdsl.exits import Exit
from specdsl.model.config import Config, Experiment
from specdsl.resolve.resolver import Resolved, resolve_file


def _config_object(obj) -> dict:
    """A config object as `config.canonical` writes it (its kind and the
    fields that are meaning, spans left out), for the encoder below."""
    if not attrs.has(type(obj)):
        raise TypeError(f"{type(obj).__name__} is not a config value")
    out = {"__kind__": type(obj).__name__}
    for field in attrs.fields(type(obj)):
        if field.eq is not False:
            value = getattr(obj, field.name)
            if value is None and field.metadata.get("omit_none"):
                continue  # as config.canonical: a field added later is absent when unset
            out[field.name] = value
    return out


# The bytes of `config.canonical_json`, encoded in one pass by json's C
# encoder (config objects through `default`), and made once: json.dumps with
# options builds a new encoder per call, and a digest encodes thousands of values.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=_config_object)


@attrs.frozen
class Loaded:
    spec: str
    resolved: Resolved
    variables: dict
    digest: str  # what the spec means (`spec_digest`): a saved plan is stale when it differs


def load_spec(args) -> Loaded | None:
    """Resolve the spec named by args.file with args.vars/args.var_files;
    print diagnostics; None when invalid.

    A sensitive variable's value is kept out of what a plan records:
    `variables` holds `(sensitive)` for it (a saved plan given back to
    apply then takes the value from SPECDSL_VAR_NAME or a default), and
    the spec digest covers its value as a keyed digest, never as text."""
    from specdsl.cli.lang_commands import print_invalid_json
    from specdsl.diag import Diagnostic

    as_json = getattr(args, "json", False)
    variables, bad = parse_vars(getattr(args, "vars", []))
    if bad:
        error(f"-var expects NAME=VALUE, got {bad[0]!r}")
        if as_json:
            print_invalid_json(args.file, [Diagnostic.error(f"-var expects NAME=VALUE, got {bad[0]!r}")])
        return None
    given = {k: v for k, v in variables.items() if v != secrets.SENSITIVE}  # a saved plan's placeholder
    resolved = resolve_file(Path(args.file), given, [Path(f) for f in getattr(args, "var_files", [])], environ=os.environ)
    print_diags(resolved.diags, resolved.sources.texts)
    if not resolved.ok:
        if as_json:  # a --json command says why on stdout too: a script reads stdout alone
            print_invalid_json(args.file, resolved.diags)
        return None
    cfg = resolved.config
    hidden = set(cfg.sensitive_variables)
    kept = {k: (secrets.SENSITIVE if k in hidden else v) for k, v in variables.items()}
    try:
        if cfg.sensitive:
            secrets.key()  # identities of steps with secrets need it: say so now, not from the graph
        from specdsl.cli.inputs import inputs_digest

        digest = spec_digest(cfg, kept, inputs=inputs_digest(resolved, Path(args.file)))
    except secrets.KeyUnavailable as exc:
        error(str(exc))
        return None
    return Loaded(args.file, resolved, kept, digest)


def spec_digest(cfg: Config, variables: dict[str, str], *, inputs: str = "") -> str:
    """SHA-256 hex of what a spec means, not how it is written: the resolved
    configuration (every experiment cell with its host, stack, server,
    workload, assertions, baseline and track; the named blocks; the value of
    every variable, from defaults, variable files and -var) and the -var
    values given. Comments and layout do not change it; any change of a
    value does, in the spec or in a file it imports. A saved plan records
    it; `apply PLANFILE` refuses the plan when the spec's is another now.
    `inputs` (specdsl.cli.inputs) covers every file the spec read: an
    import outside its folder, a variable file, a dataset or tokenizer
    named by path (its bytes)."""
    texts: dict[int, str] = {}  # id -> canonical JSON: matrix cells share most of their objects

    def text(value) -> str:
        hit = texts.get(id(value))
        if hit is None:
            hit = texts[id(value)] = _ENCODER.encode(value)
        return hit

    cell_fields = [f.name for f in attrs.fields(Experiment) if f.eq]  # spans (where it is written) are not meaning
    # a field added later (a search) counts only where it is set: digests of specs without stay
    parts = [f"{f.name}={text(getattr(cfg, f.name))}" for f in attrs.fields(Config)
             if f.eq and f.name != "experiments" and not (f.name == "searches" and not cfg.searches)]
    for exp in cfg.experiments:
        parts.append("experiment")
        parts += [f"{name}={text(getattr(exp, name))}" for name in cell_fields
                  if not (name == "search" and exp.search is None)]
    parts.append(f"vars={json.dumps(sorted(variables.items()))}")
    if inputs:
        parts.append(f"inputs={inputs}")
    body = "\n".join(parts)
    if cfg.sensitive:
        # A bare SHA-256 over the secrets would let anyone holding the plan
        # test guesses of a short token: each is in it as its keyed digest
        # (written as the encoder escapes it).
        body = secrets.hide(body, {json.dumps(v)[1:-1] for v in cfg.sensitive})
    return hashlib.sha256(body.encode()).hexdigest()


def error(message: str) -> None:
    print(f"specdsl: error: {message}", file=sys.stderr)


def confirm(args, does: str, question: str, cancelled: str) -> bool:
    """The question a command asks before it starts servers or changes
    what is recorded; True to go on. `--yes` (-auto-approve) skips it; a
    stdin that is not a terminal, or `--no-input` (-input=false), cannot
    answer it, so without `--yes` the command says why and does not go on
    (`does`: what it would do, "apply changes things"). At a terminal only
    `yes` goes on; any other answer prints `cancelled`."""
    if getattr(args, "yes", False):
        return True
    no_input = getattr(args, "no_input", False)
    if no_input or not sys.stdin.isatty():
        error(f"{does}: confirm with --yes (-auto-approve) "
              + ("(-input=false: no question is asked)" if no_input else "(stdin is not a terminal)"))
        return False
    try:
        answer = input(f"\n{question} Only 'yes' is accepted: ").strip()
    except EOFError:  # the terminal closed: no answer is not yes
        answer = ""
    if answer != "yes":
        print(cancelled)
        return False
    return True


def say_problems(problems) -> None:
    """Say an operation's `Problems` on stderr: its diagnostics with their
    lines, then its errors, then its hints."""
    if problems.diags:
        print_diags(list(problems.diags), problems.sources)
    for message in problems.errors:
        error(message)
    for hint in problems.hints:
        print(hint, file=sys.stderr)


def state_error(exc) -> int:
    """Say a `specdsl.state.StateError` (it renders as `PATH: error:
    Summary` and its hint) and return its exit status: 6 for a conflict
    (another apply holds the lock, a stale plan), else 1."""
    print(str(exc), file=sys.stderr)
    return Exit.CONFLICT if exc.conflict else Exit.ERROR
