"""Writing the SLO tests' specs: one experiment on the knee double."""

from __future__ import annotations

import sys
from pathlib import Path

KNEE = str(Path(__file__).resolve().parent / "knee_server.py")


def write_spec(folder, *, knee: int = 100, slow_ms: float = 120, itl_ms: float = 10, workload: str = "", experiment: str = "",
               asserts: str = "", requests: int = 24, concurrency: int = 4, warmup: int = 0) -> None:
    argv = [sys.executable, KNEE, "--port", "{port}", "--knee", str(knee), "--slow-ms", f"{slow_ms:g}", "--itl-ms", f"{itl_ms:g}",
            "--pids", str(folder.pids)]
    items = ", ".join(f'"{a}"' for a in argv)
    folder.spec.write_text(f'''stack "sys" {{
  python = "system"
}}
server "knee" {{
  engine  = "command"
  model   = "m"
  command = [{items}]
}}
workload "w" {{
  input_len   = 8
  output_len  = 4
  requests    = {requests}
  concurrency = {concurrency}
  runs        = 2
  warmup      = {warmup}
  timeout     = 5s
{workload}}}
experiment "e" {{
  stack    = stack.sys
  server   = server.knee
  workload = workload.w
{experiment}{asserts}}}
''')
