"""TEST DOUBLE wrapper: record how a server was started, then become the
streaming double of known timing (tests/bench/timed_server.py).

    python recording_server.py RECORD_JSON PORT ARG...

Writes {"argv": [ARG...], "env": $SPECDSL_HOSTILE} to RECORD_JSON, then
execs the double on PORT, so a test can compare what arrived with what the
spec said, byte for byte.
"""

import json
import os
import sys
from pathlib import Path

DOUBLE = Path(__file__).resolve().parents[2] / "bench" / "timed_server.py"

record, port, *rest = sys.argv[1:]
with open(record, "w", encoding="utf-8") as f:
    json.dump({"argv": rest, "env": os.environ.get("SPECDSL_HOSTILE")}, f)
os.execv(sys.executable, [sys.executable, str(DOUBLE), "--port", port, "--ttft-ms", "5", "--itl-ms", "1"])
