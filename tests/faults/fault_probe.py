"""A user's benchmark script for the fault suite: asks the server its speed
(no client timeout: the workload's own timeout is what ends a hung
request) and prints it as a metric (`tps: N`).

    python fault_probe.py BASE_URL [--sleep S] [--fill FILE]

`--sleep S` first waits S seconds (a benchmark under way, to interrupt);
`--fill FILE` first writes FILE until its file system is full (disk full
while a server runs)."""

import json
import sys
import time
import urllib.request

if "--fill" in sys.argv:
    path = sys.argv[sys.argv.index("--fill") + 1]
    try:
        with open(path, "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
    except OSError:
        pass
if "--sleep" in sys.argv:
    time.sleep(float(sys.argv[sys.argv.index("--sleep") + 1]))
with urllib.request.urlopen(sys.argv[1] + "/speed") as resp:
    print(f"tps: {json.load(resp)['tps']}")
