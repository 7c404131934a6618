"""`specdsl plan` shows the recorded servers apply will stop or drop before
its walk (left by a killed apply, or no longer in the spec), in text and
JSON, and counts them as pending for `--detailed-exitcode`; apply then does
what the plan said. Real server doubles in their own sessions, recorded in
a real state file."""

import contextlib
import io
import json
import os
import socket
import subprocess
import sys

from faults_helpers import DOUBLE, group_pids, wait_for

from specdsl.state import ServerRecord, State, load_state, locked, write_state

STACK_ONLY = 'stack "sys" {\n  python = "system"\n}\n'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def start_double(folder) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, DOUBLE, str(port), "--pids", str(folder.pids)], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: answers(port), 30, f"the server double on port {port}")
    return proc, port


def record(identity, addr, proc_or_pid, port, host="local") -> ServerRecord:
    pid = proc_or_pid if isinstance(proc_or_pid, int) else proc_or_pid.pid
    return ServerRecord(identity, addr, host, pid, pid, port, f"http://127.0.0.1:{port}", status="starting",
                        argv=("python", "serve.py"), spec="f.spec")


def record_servers(folder, *records) -> None:
    state = load_state(folder.state_dir) or State.new()
    for r in records:
        state = state.with_server(r)
    write_state(folder.state_dir, state)


class Planned:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.out = returncode, stdout, stdout + stderr


def plan(folder, *args):
    """`specdsl plan` in this process (the CLI's own `main`; only apply, which
    stops servers, runs as a subprocess): fast, and as a user runs it."""
    from specdsl.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", str(folder.path / args[0]), *args[1:]])
    done = Planned(code, out.getvalue(), err.getvalue())
    assert "Traceback" not in done.out, done.out
    return done


def test_plan_lists_the_stale_servers_apply_will_stop_and_apply_does(folder):
    folder.write()
    first = plan(folder, "f.spec", "--json")
    launch = next(c["identity"] for c in json.loads(first.stdout)["changes"] if c["kind"] == "launch")
    assert json.loads(first.stdout)["stale_servers"] == []
    current, current_port = start_double(folder)  # the spec's own server, left by a killed apply: reused
    old, old_port = start_double(folder)  # a server of a launch no longer in the spec: stopped
    gone = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    gone.wait()  # a recorded server that has died since: its record dropped
    record_servers(folder, record(launch, "s", current, current_port), record("old-id", "old", old, old_port),
                   record("gone-id", "gone", gone.pid, free_port()),
                   record("far-id", "far", 4242, 8000, host="gpu-box"))  # a host this spec does not declare: kept

    text = plan(folder, "f.spec")
    assert text.returncode == 0, text.out
    listed = text.stdout.split("Servers recorded by an earlier apply", 1)[1]
    assert f"server.old  (pid {old.pid}, process group {old.pid}, port {old_port} on local; recorded starting, " \
           "from f.spec): answering" in listed
    assert "no apply uses it now: it is stopped" in listed
    assert "server.gone" in listed and "not running" in listed and "the record is dropped" in listed
    assert "server.far" in listed and "apply keeps its record and reports it" in listed
    assert "server.s " not in listed, "the spec's own answering server is reused, not stale"

    assert "the state is locked" not in listed
    with locked(folder.state_dir, "apply"):  # an apply running now: its servers look stale, and plan says why
        held = plan(folder, "f.spec").stdout
    assert f"the state is locked by `apply`, pid {os.getpid()}" in held and "these may be its servers" in held

    doc = json.loads(plan(folder, "f.spec", "--json").stdout)
    by_addr = {s["addr"]: s for s in doc["stale_servers"]}
    assert sorted(by_addr) == ["server.far", "server.gone", "server.old"]
    assert (by_addr["server.old"]["action"], by_addr["server.old"]["condition"], by_addr["server.old"]["pid"]) == (
        "stop", "answering", old.pid)
    assert (by_addr["server.gone"]["action"], by_addr["server.far"]["action"]) == ("drop", "keep")

    # --no-refresh contacts nothing: every record the plan does not reuse is to be stopped
    offline = json.loads(plan(folder, "f.spec", "--json", "--no-refresh").stdout)
    assert {s["addr"]: (s["action"], s["condition"]) for s in offline["stale_servers"]} == {
        a: ("stop", "not checked (--no-refresh)") for a in ("server.far", "server.gone", "server.old")}

    # a spec with nothing to run: the stale servers alone make the plan pending
    (folder.path / "g.spec").write_text(STACK_ONLY)
    pending = plan(folder, "g.spec", "--detailed-exitcode")
    assert pending.returncode == 2, pending.out
    assert "No changes" in pending.stdout and "server.s " in pending.stdout  # not in g.spec: stale there

    # apply does what the plan said: stops both live ones, drops the dead record, keeps the far one
    applied = folder.run("apply", "g.spec", "--yes")
    assert applied.returncode == 0, applied.out
    assert [r.addr for r in folder.state().servers] == ["far"]
    for proc in (current, old):
        proc.wait(timeout=10)
        assert not group_pids(proc.pid)
    # only a record apply can do nothing about is left: nothing pending
    after = plan(folder, "g.spec", "--detailed-exitcode")
    assert after.returncode == 0, after.out
    assert "server.far" in after.stdout and "apply keeps its record and reports it" in after.stdout
