"""A user's benchmark script for burst tests: like walk_probe.py (asks the
server its speed, prints `tps: N`), and its K-th invocation (counted in
`--count FILE`, from 0) is hit by a burst: it creates `--trigger FILE`,
waits until the burst generator (tests/apply/burst_load.py, a process the
test started, not one of apply's) has taken it, and reads the speed
`--hold S` seconds later, while the burst runs.

    python burst_probe.py BASE_URL --count FILE --burst-at K --trigger FILE [--hold S]
"""

import fcntl
import json
import os
import sys
import time
import urllib.request


def _arg(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def _count(path: str) -> int:
    """This invocation's number (0, 1, ...), counted under a lock."""
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        n = len(f.read().split())
        f.write(f"{n}\n")
        f.flush()
        fcntl.flock(f, fcntl.LOCK_UN)
    return n


if _count(_arg("--count")) == int(_arg("--burst-at")):
    trigger = _arg("--trigger")
    open(trigger, "w").close()
    deadline = time.monotonic() + 10
    while os.path.exists(trigger) and time.monotonic() < deadline:  # taken: the burst has begun
        time.sleep(0.01)
    time.sleep(float(_arg("--hold", "1.0")))
with urllib.request.urlopen(sys.argv[1] + "/speed", timeout=10) as resp:
    print(f"tps: {json.load(resp)['tps']}")
