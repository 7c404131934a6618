"""The story as recorded data: a state folder whose paired result compares
SGLang 0.5.6 on CUDA 12.8 (baseline) with 0.5.9 on CUDA 13.0 (candidate),
with the servers' real log lines (data/) and effective configurations read
by the real adapter code from a `/server_info` double."""

from __future__ import annotations

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from specdsl.hosts import LocalHost
from specdsl.model.config import Server
from specdsl.servers import ServerHandle, effective_config
from specdsl.state import Environment, RunRecord, State, write_state

DATA = Path(__file__).parent / "data"
ARGS = (("tp-size", 8), ("speculative-algorithm", "EAGLE3"), ("speculative-num-steps", 3))
KIMI = Server(name="kimi", engine="sglang", model="moonshotai/Kimi-K2.5", args=ARGS)


class ServerInfoDouble:
    """A stdlib HTTP server answering `/get_server_info` with
    data/server_info.json and dropping the connection on `/server_info`
    (what a server that has no such route behind a proxy does)."""

    def __init__(self, drop_server_info: bool = True) -> None:
        body = (DATA / "server_info.json").read_bytes()
        drop = drop_server_info
        self.paths: list[str] = []
        seen = self.paths

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                seen.append(self.path)
                if self.path == "/server_info" and drop:
                    self.connection.shutdown(2)  # no answer at all: a connection error for the client
                    self.close_connection = True
                    return
                if self.path in ("/server_info", "/get_server_info"):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def read_effective(log: Path, version: str, port: int) -> tuple[dict, list[str]]:
    handle = ServerHandle(pid=0, pgid=0, port=port, bind="127.0.0.1", base_url=f"http://127.0.0.1:{port}",
                          log_path=str(log), argv=(), engine="sglang", model=KIMI.model, version=version)
    return effective_config(KIMI, handle, LocalHost())


def make_story_state(state_dir: Path) -> str:
    """Record the story in `state_dir`; returns the candidate experiment's name."""
    state_dir.mkdir(parents=True, exist_ok=True)
    envs = {
        "A": Environment(identity="prov-cu128", host="local", path="/opt/envs/cu128", python="/opt/envs/cu128/bin/python",
                         python_version="3.12.3",
                         packages={"sglang": "0.5.6", "torch": "2.8.0+cu128", "flashinfer-python": "0.5.3",
                                   "sgl-kernel": "0.3.16", "numpy": "2.1.0"},
                         torch={"version": "2.8.0+cu128", "cuda": "12.8", "nccl": "2.26.2"}),
        "B": Environment(identity="prov-cu130", host="local", path="/opt/envs/cu130", python="/opt/envs/cu130/bin/python",
                         python_version="3.12.3",
                         packages={"sglang": "0.5.9", "torch": "2.9.1+cu130", "flashinfer-python": "0.6.4",
                                   "sgl-kernel": "0.3.21+cu130", "numpy": "2.1.0"},
                         torch={"version": "2.9.1+cu130", "cuda": "13.0", "nccl": "2.27.7"}),
    }
    folder = state_dir / "runs" / "bench-upgrade"
    effective, launches = {}, []
    with ServerInfoDouble() as double:
        for letter, log, version in (("A", "story-v0.5.6.log", "0.5.6"), ("B", "story-v0.5.9.log", "0.5.9")):
            sub = folder / f"launch-{len(launches)}-{letter}"
            sub.mkdir(parents=True)
            shutil.copy(DATA / log, sub / "server.log")
            effective[letter], _ = read_effective(sub / "server.log", version, double.port)
            argv = [envs[letter].python, "-m", "sglang.launch_server", "--model-path", KIMI.model, "--host", "127.0.0.1",
                    "--port", "30000", "--tp-size", "8", "--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3"]
            launches.append({"arm": letter, "argv": argv, "log": f"runs/bench-upgrade/{sub.name}/server.log"})
    speeds = {"A": [89.5, 89.1, 89.9, 89.4], "B": [83.9, 83.5, 84.9, 84.0]}
    runs, pairs = [], []
    for i in range(2):
        blocks = []
        for letter in ("AB" if i % 2 == 0 else "BA"):
            index = len(runs)
            runs.append({"index": index, "metrics": {"output_throughput": speeds[letter][len([r for r in runs if r.get("arm") == letter])]},
                         "arm": letter})
            blocks.append({"arm": letter, "runs": [index], "launch": 0 if letter == "A" else 1})
        pairs.append({"pair": i, "blocks": blocks})
    doc = {"runs": runs, "pairs": pairs, "arms": {"A": "baseline", "B": "upgrade"}, "launches": launches,
           "effective": effective}
    (folder / "result.json").write_text(json.dumps(doc, default=str))
    run = RunRecord(id="20260227T152000Z-upgrade1", step="benchmark.upgrade", identity="bench-upgrade", experiment="upgrade",
                    status="completed", started="2026-02-27T15:20:00Z", finished="2026-02-27T15:40:00Z",
                    folder="runs/bench-upgrade", metrics={"output_throughput": 84.0}, runs=2)
    state = State.new().with_environment(envs["A"]).with_environment(envs["B"]).with_run(run)
    write_state(state_dir, state)
    return "upgrade"
