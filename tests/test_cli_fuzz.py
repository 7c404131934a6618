"""No command answers with a traceback (issue 34): every command of the CLI
against the bad inputs a user meets (a missing file, a folder, bytes that
are not UTF-8, a spec with errors, a corrupt state or plan, a file that
cannot be written). Each is run in-process, so an exception that escapes
`main` fails the test; the answer must be an exit code and a message.
`fmt` of a file it cannot write also runs as a real process, its file size
limited (RLIMIT_FSIZE binds root too), and must leave the file as it was."""

from __future__ import annotations

import itertools
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from specdsl.cli.main import main

VALID = '''stack "s" { python = "system" }
server "m" {
  engine  = "command"
  model   = "m"
  command = ["true", "{port}"]
}
workload "w" { requests = 2 }
experiment "e" {
  stack    = stack.s
  server   = server.m
  workload = workload.w
  assert "ok" { failed == 0 }
}
'''
UNFORMATTED = VALID.replace('  stack    = stack.s', 'stack=stack.s')


def _inputs(tmp: Path) -> dict[str, str]:
    (tmp / "ok.spec").write_text(VALID)
    (tmp / "bad.spec").write_text(VALID.replace("requests = 2", "requests = -2\n  bogus = 1"))
    (tmp / "bytes.spec").write_bytes(b"\xff\xfe\x00stack {")
    (tmp / "empty.spec").write_text("")
    (tmp / "folder.spec").mkdir()
    (tmp / "garbage.plan").write_text("not a plan \x00")
    (tmp / "notspec.txt").write_text("hello\n")
    return {"ok": "ok.spec", "bad": "bad.spec", "bytes": "bytes.spec", "empty": "empty.spec",
            "folder": "folder.spec", "missing": "missing.spec", "plan": "garbage.plan", "text": "notspec.txt"}


COMMANDS = [
    ["validate", "{f}"], ["validate", "--json", "{f}"], ["fmt", "--check", "{f}"], ["fmt", "--diff", "{f}"],
    ["plan", "{f}"], ["plan", "--json", "{f}"], ["plan", "{f}", "-o", "out.plan"], ["show", "{f}"], ["graph", "{f}"],
    ["state", "list", "{f}"], ["state", "show", "e", "{f}"], ["history", "t", "{f}"], ["report", "e", "{f}"],
    ["apply", "{f}", "--yes"], ["destroy", "{f}", "--yes"], ["diff", "e", "e", "{f}"], ["plan", "{f}", "--var", "x"],
    ["plan", "{f}", "--var-file", "missing.tfvars"], ["validate", "{f}", "--var-file", "bytes.spec"],
    ["search", "e", "{f}", "--yes"],
]
KINDS = ["bad", "bytes", "folder", "missing", "plan", "text"]


def _run(argv, capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_no_command_answers_a_bad_input_with_a_traceback(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPECDSL_ENV_ROOT", str(tmp_path / "envs"))
    names = _inputs(tmp_path)
    for kind in KINDS:
        argv = [a.replace("{f}", names[kind]) for a in command]
        code, text = _run(argv, capsys)
        assert "Traceback" not in text, (argv, text)
        if not (kind == "bad" and command[0] == "fmt"):  # fmt needs only the syntax to be right
            assert code != 0, (argv, text)  # a bad input is never a success
        assert text.strip(), (argv, "no message")


def test_a_corrupt_state_is_a_message_for_every_command_that_reads_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPECDSL_ENV_ROOT", str(tmp_path / "envs"))
    _inputs(tmp_path)
    (tmp_path / ".specdsl").mkdir()
    for content in (b"format_version = 99\n", b"\x00\xff not toml", b"[[runs]]\nstep = 3\n"):
        (tmp_path / ".specdsl" / "state.toml").write_bytes(content)
        for argv in (["plan", "ok.spec"], ["state", "list", "ok.spec"], ["state", "show", "e", "ok.spec"],
                     ["history", "t", "ok.spec"], ["report", "e", "ok.spec"], ["apply", "ok.spec", "--yes"]):
            code, text = _run(argv, capsys)
            assert "Traceback" not in text, (argv, text)
            assert code != 0 and text.strip(), (argv, content, text)


def _limit_size():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))


def test_fmt_of_a_file_it_cannot_write_is_a_located_error_and_leaves_the_file(tmp_path):
    spec = tmp_path / "u.spec"
    spec.write_text(UNFORMATTED)
    before = spec.read_bytes()
    proc = subprocess.run([sys.executable, "-m", "specdsl.cli.main", "fmt", "u.spec"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, preexec_fn=_limit_size)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("u.spec: error: cannot write the file: File too large"), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert spec.read_bytes() == before  # atomic: the old text, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["u.spec"]  # no temp file left


def test_fmt_keeps_the_mode_and_writes_through_a_symlink(tmp_path, capsys):
    real = tmp_path / "real.spec"
    real.write_text(UNFORMATTED)
    os.chmod(real, 0o640)
    link = tmp_path / "link.spec"
    link.symlink_to(real)
    assert main(["fmt", str(link)]) == 0
    assert link.is_symlink() and real.stat().st_mode & 0o777 == 0o640
    assert "  stack    = stack.s" in real.read_text()
    assert main(["fmt", "--check", str(real)]) == 0


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes a read-only file")
def test_fmt_of_a_read_only_file_is_an_error(tmp_path, capsys):
    spec = tmp_path / "ro.spec"
    spec.write_text(UNFORMATTED)
    os.chmod(spec, 0o444)
    assert main(["fmt", str(spec)]) == 1
    assert f"{spec}: error: cannot write the file: permission denied" in capsys.readouterr().err
    assert spec.read_text() == UNFORMATTED


def test_the_fuzz_covers_every_top_level_command():
    from test_cli import _parsers
    from specdsl.cli.main import build_parser

    tops = {prog.split()[1] for prog, _ in _parsers(build_parser()) if len(prog.split()) == 2}
    covered = {c[0] for c in COMMANDS} | {"force-unlock", "bisect", "calibrate", "diagnose"}
    assert tops <= covered | set(itertools.chain()), tops - covered
