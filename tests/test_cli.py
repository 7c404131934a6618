"""The command line as a newcomer meets it: `--help` explains every option,
and a mistyped command is answered with the command meant."""

from __future__ import annotations

import argparse

import pytest

from specdsl.cli.main import build_parser, main


def _parsers(parser: argparse.ArgumentParser, prog: str = "specdsl"):
    """(prog, parser) for the parser and every subcommand's, depth first."""
    yield prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{prog} {name}")


def test_every_option_and_command_has_help():
    missing = []
    for prog, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{prog} {c.dest}" for c in action._choices_actions if not c.help]
            elif action.option_strings and action.help in (None, "", argparse.SUPPRESS):
                missing.append(f"{prog} {'/'.join(action.option_strings)}")
    assert missing == []


def test_the_walk_sees_every_command():
    progs = {prog for prog, _ in _parsers(build_parser())}
    assert {"specdsl apply", "specdsl plan", "specdsl state list", "specdsl state show", "specdsl force-unlock", "specdsl history"} <= progs


@pytest.mark.parametrize("argv, hint", [
    (["aply", "x.spec"], "unknown command 'aply'; did you mean `apply`?"),
    (["valdate", "x.spec"], "unknown command 'valdate'; did you mean `validate`?"),
    (["state", "lsit"], "unknown command 'lsit'; did you mean `list`?"),
    (["zzz"], "unknown command 'zzz'; commands: validate, fmt, plan, show, graph, state, force-unlock, history, apply"),
])
def test_unknown_command_suggests_the_closest(argv, hint, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("usage: ") and hint in err
