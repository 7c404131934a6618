"""`specdsl destroy` and `state list --servers` on servers a killed apply
left: listed with what their host says now, stopped by process group
after a plan-style confirmation, records dropped only once they are gone."""

import os
import signal

from faults_helpers import state_now, wait_for


def test_destroy_stops_every_recorded_server(folder):
    folder.write(sleep=60)
    proc = folder.start("apply", "f.spec", "--yes")
    wait_for(lambda: (s := state_now(folder)) is not None and s.servers and s.servers[0].status == "ready", 60,
             "a ready server")
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    [record] = folder.state().servers
    listed = folder.run("state", "list", "f.spec", "--servers")
    assert listed.returncode == 0, listed.out
    assert f"server.launch.s  (pid {record.pid}" in listed.out and ": answering" in listed.out
    refused = folder.run("destroy", "f.spec")  # stdin is not a terminal: confirmation needed
    assert refused.returncode == 1 and "--yes" in refused.out
    assert "- server.launch.s" in refused.out and "Destroy: 1 server to stop" in refused.out
    assert "broke a stale lock" in refused.out  # the killed apply's
    assert record.pgid in folder.groups_alive()
    done = folder.run("destroy", "f.spec", "--yes")
    assert done.returncode == 0, done.out
    assert "server.launch.s: stopped" in done.out
    state = folder.state()
    assert not state.servers and folder.groups_alive() == []
    assert any(r.step == "launch.s" and r.status == "completed" for r in state.runs), "runs are kept"
    again = folder.run("destroy", "f.spec", "--yes")
    assert again.returncode == 0 and "Nothing to destroy" in again.out
