"""The `specdsl` command line: argument parsing and dispatch.

The CLI is the only layer that prints. Each subcommand lives in its own
module and registers itself with `add_parser(subparsers)`; its handler
takes the parsed arguments and returns the exit code.
"""

from __future__ import annotations

import argparse
import gc
import sys

from specdsl import __version__, secrets
from specdsl.cli import lang_commands

EXIT_OK, EXIT_ERROR = 0, 1
# Expressions nest at most 1,000 levels (specdsl.model.build.MAX_DEPTH) and
# the layers that walk them (hashing, evaluation, checks) recurse a few
# frames a level: Python's default limit of 1,000 frames is too low for
# what validate accepts. The bound on depth, not this number, is what keeps
# the C stack safe.
RECURSION_LIMIT = 10_000


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors exit 1, like every other user mistake
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")

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
        from specdsl.cli import apply_commands, calibrate_commands, destroy_commands, diagnose_commands

        modules += [apply_commands, calibrate_commands, diagnose_commands, destroy_commands]
    from specdsl.cli import report_commands

    return modules + [report_commands]


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
    sys.stdout, sys.stderr = _Redacting(sys.stdout), _Redacting(sys.stderr)
    try:
        parser = build_parser(lang_only=first in _LANG_COMMANDS, plan_only=first in _PLAN_COMMANDS)
        args = parser.parse_args(argv)
        return args.handler(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    finally:
        sys.stdout, sys.stderr = streams
        gc.set_threshold(*thresholds)
        sys.setrecursionlimit(recursion)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
