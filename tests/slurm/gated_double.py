"""A test double for the Slurm tests: holds before it serves.

    python gated_double.py PORT GATE_DIR [--fail-completions]

While GATE_DIR/hold-$CELL exists it does not listen (a launch waits for
it); then it serves on PORT: the streaming server of known timing of
tests/bench (ready at /metrics), or, with --fail-completions, the OpenAI
double of tests/servers answering every completion with HTTP 500. A test
holds one matrix cell's server this way to fault its job while it runs.
"""

import os
import runpy
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent

port, gate_dir = sys.argv[1], Path(sys.argv[2])
gate = gate_dir / f"hold-{os.environ.get('CELL', '')}"
print(f"gated on {gate}", flush=True)
while gate.exists():
    time.sleep(0.2)
if "--fail-completions" in sys.argv:
    script = TESTS / "servers" / "openai_double.py"
    sys.argv = [str(script), port, "--fail-completions"]
else:
    script = TESTS / "bench" / "timed_server.py"
    sys.argv = [str(script), "--port", port, "--ttft-ms", "5", "--itl-ms", "1"]
runpy.run_path(str(script), run_name="__main__")
