"""The `specdsl` command line: argument parsing and dispatch.

The CLI is the only layer that prints. Each subcommand lives in its own
module and registers itself with `add_parser(subparsers)`; its handler
takes the parsed arguments and returns the exit code.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys

# What the command line imports (the language layers: a few hundred
# classes and functions) lives until the process ends: the cyclic
# collector's passes over it while it loads are wasted work (~10 ms of a
# plan). Collect rarely while it loads, then as before.
_THRESHOLDS = gc.get_threshold()
gc.set_threshold(50_000, 20, 20)
try:
    from specdsl import __version__, secrets
    from specdsl.cli import lang_commands
    from specdsl.exits import Exit
finally:
    gc.set_threshold(*_THRESHOLDS)

# Expressions nest at most 1,000 levels (specdsl.model.build.MAX_DEPTH) and
# the layers that walk them (hashing, evaluation, checks) recurse a few
# frames a level: Python's default limit of 1,000 frames is too low for
# what validate accepts. The bound on depth, not this number, is what keeps
# the C stack safe.
RECURSION_LIMIT = 10_000
_UNSET = object()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors exit 1, like every other user mistake
        # one prefix for every error not about a file: `specdsl: error:` (the command named in the message)
        self.print_usage(sys.stderr)
        command = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        self.exit(Exit.ERROR, f"specdsl: error: {command + ': ' if command else ''}{message}\n")

    def _check_value(self, action, value) -> None:
        """An unknown (sub)command names the closest one (`specdsl aply`:
        did you mean `apply`?), else lists them all."""
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            from specdsl.diag import did_you_mean

            hint = did_you_mean(value, action.choices) or "commands: " + ", ".join(action.choices)
            raise argparse.ArgumentError(None, f"unknown command {value!r}; {hint}")
        super()._check_value(action, value)


# `validate` and `fmt` need none of the later layers: importing those
# (networkx, aiohttp, rich, ...) would triple the time of a validate.
_LANG_COMMANDS = ("validate", "fmt")
# Nor do the plan commands need apply's (the walker, the load generator,
# aiohttp, rich): a plan of 1,000 cells would wait on those imports.
_PLAN_COMMANDS = ("plan", "show", "graph", "state", "force-unlock", "history", "report")


def build_parser(lang_only: bool = False, plan_only: bool = False) -> argparse.ArgumentParser:
    parser = _Parser(prog="specdsl", description="Plan and apply LLM-serving performance experiments.")
    parser.add_argument("--version", action="version", version=f"specdsl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for module in [lang_commands] if lang_only else _command_modules(with_apply=not plan_only):
        module.add_parsers(sub)
    return parser


def _command_modules(with_apply: bool = True):
    from specdsl.cli import history, plan_commands

    modules = [lang_commands, plan_commands, history]
    if with_apply:
        from specdsl.cli import (apply_commands, bisect_commands, calibrate_commands, destroy_commands, diagnose_commands,
                                 search_commands)

        modules += [apply_commands, calibrate_commands, diagnose_commands, bisect_commands, search_commands,
                    destroy_commands]
    from specdsl.cli import report_commands

    return modules + [report_commands]


class _Watched:
    """A text stream that remembers what went through it: for a `--json`
    command that failed without a word on stdout (main)."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self.text: list[str] = []

    def write(self, text: str) -> int:
        self.text.append(text)
        return self._stream.write(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _json_failure(err_text: str) -> None:
    """The JSON diagnostics of a `--json` command that failed before it
    could print its document: the first error line as the summary, the rest
    as the detail, so stdout always holds JSON."""
    from specdsl.cli.lang_commands import print_error_json

    lines = [ln for ln in err_text.splitlines() if ln.strip()]
    first = next((i for i, ln in enumerate(lines) if "error:" in ln), 0)
    where, _, summary = lines[first].partition("error:") if lines else ("", "", "failed")
    where = where.strip().rstrip(":")
    print_error_json(summary.strip() or lines[first].strip(), "\n".join(lines[first + 1:]).strip(),
                     file=where if where and where != "specdsl" else None)


class _Redacting:
    """A text stream that writes sensitive values as `(sensitive)`: what a
    run prints (a failure's command line, a server's last log lines) passes
    through it, whichever module printed it (specdsl.secrets.redact)."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(secrets.redact(text) if isinstance(text, str) else text)
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


_SINGLE_DASH = re.compile(r"^-([a-z][a-z0-9]*(?:-[a-z0-9]+)*)(=.*)?$")
# Terraform's options that specdsl has no option for, as specdsl reads them:
# name -> (the option it becomes, or "" for none; the note said, or "")
_TERRAFORM_ONLY = {
    "auto-approve": ("--yes", ""),
    "no-color": ("--no-color", ""),
    "input=false": ("--no-input", ""),
    "input=true": ("", ""),
    "lock=true": ("", ""),
    "lock=false": ("", "-lock=false is not needed: only apply and destroy take the state lock, and they must "
                       "(a lock left by a killed process is removed with `specdsl force-unlock ID`); going on with it"),
    "recursive": ("", ""),  # `fmt -recursive`: a folder is always formatted recursively
}
# options every command takes, read before parsing (argparse never sees them)
_GLOBAL = ("--no-color", "--no-input")


def terraform_spellings(argv: list[str], parser: argparse.ArgumentParser, notes: list[str] | None = None) -> list[str]:
    """Terraform's single-dash long options read as ours: `-out=x.plan` is
    `--out=x.plan` (argparse would read it as `-o` with the value
    `ut=x.plan`), `-json`, `-var-file=F`, `-target=X`; `-refresh=false` is
    `--no-refresh`; `-auto-approve` is `--yes`, `-no-color` `--no-color`,
    `-input=false` `--no-input`; `-lock=false` and `fmt -recursive` are
    accepted (a note in `notes` says why `-lock=false` changes nothing). An
    option that is ours with one dash (`-var`) is kept; everything after
    `--` is left alone."""
    known = _option_strings(parser) | set(_GLOBAL)
    out: list[str] = []
    for i, tok in enumerate(argv):
        if tok == "--":
            return out + argv[i:]
        m = _SINGLE_DASH.match(tok)
        if tok in ("--auto-approve", "--recursive", "--input=false", "--input=true", "--lock=false", "--lock=true"):
            m = _SINGLE_DASH.match(tok[1:])  # the same with two dashes
        if m is None or tok.split("=", 1)[0] in known:
            out.append(tok)
            continue
        name, value = m.group(1), m.group(2) or ""
        if name == "refresh" and value.lower() in ("=false", "=true"):
            if value.lower() == "=false":
                out.append("--no-refresh")
            continue
        key = name + value.lower() if value.lower() in ("=false", "=true") else name
        if key in _TERRAFORM_ONLY and (name != "recursive" or (argv and argv[0] == "fmt")):
            become, note = _TERRAFORM_ONLY[key]
            if become == "--yes" and become not in _command_options(parser, argv[0] if argv else ""):
                out.append(tok)  # left for the command's own error
                continue
            if become:
                out.append(become)
            if note and notes is not None:
                notes.append(note)
            continue
        out.append(f"--{name}{value}" if f"--{name}" in known else tok)
    return out


def _globals(argv: list[str]) -> tuple[list[str], set[str]]:
    """(argv without the global options, the global options given)."""
    end = argv.index("--") if "--" in argv else len(argv)
    given = {a for a in argv[:end] if a in _GLOBAL}
    return [a for a in argv[:end] if a not in _GLOBAL] + argv[end:], given


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """`parser.parse_args`, but an option the command does not take is said
    by that (sub)command, with its usage and the closest option it has
    (`--targt`: did you mean `--target`?)."""
    args, extra = parser.parse_known_args(argv)
    if not extra:
        return args
    command = parser
    for dest in ("command", "state_command"):
        name = getattr(args, dest, None)
        sub = next((a for a in command._actions if isinstance(a, argparse._SubParsersAction)), None)
        if name is None or sub is None or name not in sub.choices:
            break
        command = sub.choices[name]
    from specdsl.diag import did_you_mean

    options = {o for a in command._actions for o in a.option_strings if o.startswith("--")}
    hints = []
    for word in extra:
        if word.startswith("-") and len(word) > 1:
            hint = did_you_mean("--" + word.lstrip("-").split("=", 1)[0], options)
            if hint:
                hints.append(f"{word.split('=', 1)[0]}: {hint}")
    message = f"unrecognized arguments: {' '.join(extra)}" + (f" ({'; '.join(hints)})" if hints else "")
    command.error(message)
    raise AssertionError("unreachable")  # error() exits


def _command_options(parser: argparse.ArgumentParser, command: str) -> set[str]:
    """The option strings of subcommand `command` (empty when there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return _option_strings(action.choices[command])
    return set()


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    found: set[str] = set()
    stack = [parser]
    while stack:
        p = stack.pop()
        for action in p._actions:
            found.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
    return found


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    first = argv[0] if argv else None
    thresholds = gc.get_threshold()
    recursion = sys.getrecursionlimit()
    sys.setrecursionlimit(max(recursion, RECURSION_LIMIT))
    if first in _PLAN_COMMANDS:
        # A plan is short-lived and its objects (config cells, steps, changes)
        # live until it exits: the cyclic collector's passes over them are
        # wasted work, a fifth of a 1,000-cell plan. Collect rarely instead
        # (and put the thresholds back for a caller that runs in-process).
        gc.set_threshold(50_000, 20, 20)
    streams = sys.stdout, sys.stderr
    colour = _UNSET
    sys.stdout, sys.stderr = _Redacting(sys.stdout), _Redacting(sys.stderr)
    try:
        parser = build_parser(lang_only=first in _LANG_COMMANDS, plan_only=first in _PLAN_COMMANDS)
        notes: list[str] = []
        argv, given = _globals(terraform_spellings(argv, parser, notes))
        args = _parse(parser, argv)
        args.no_input = "--no-input" in given
        if "--no-color" in given:
            colour = os.environ.get("NO_COLOR")
            os.environ["NO_COLOR"] = "1"  # rich, and coloured_plan, read it (https://no-color.org)
        for note in notes:
            print(f"specdsl: note: {note}", file=sys.stderr)
        if not getattr(args, "json", False):
            return args.handler(args)
        out, err = _Watched(sys.stdout), _Watched(sys.stderr)
        sys.stdout, sys.stderr = out, err
        code = args.handler(args)
        if code not in (Exit.OK, Exit.CHANGES) and not "".join(out.text).strip():  # stdout is JSON or nothing: never nothing
            _json_failure("".join(err.text))
        return code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return Exit.INTERRUPTED
    except BrokenPipeError:
        return Exit.OK
    finally:
        if colour is not _UNSET:  # put NO_COLOR back for a caller that runs in-process
            if colour is None:
                os.environ.pop("NO_COLOR", None)
            else:
                os.environ["NO_COLOR"] = colour
        sys.stdout, sys.stderr = streams
        gc.set_threshold(*thresholds)
        sys.setrecursionlimit(recursion)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
