"""A user's benchmark script for walk tests: asks the server its speed and
prints it as a metric (`tps: N`); `--sleep S` first waits S seconds."""

import json
import sys
import time
import urllib.request

if "--sleep" in sys.argv:
    time.sleep(float(sys.argv[sys.argv.index("--sleep") + 1]))
with urllib.request.urlopen(sys.argv[1] + "/speed", timeout=10) as resp:
    print(f"tps: {json.load(resp)['tps']}")
