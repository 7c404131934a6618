"""TEST DOUBLE: a burst of other work on the machine, on cue. Started by a
test (so none of its processes is one of apply's), it waits for `--trigger
FILE` to appear, removes it, and keeps `--procs N` processes busy burning
CPU for `--burn S` seconds, then exits (one burst). `--ready FILE` is
created once it waits.

    python burst_load.py --trigger FILE --ready FILE [--procs 2] [--burn 1.5] [--wait 120]
"""

import os
import sys
import time


def _arg(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def burn(until: float) -> None:
    x = 0
    while time.monotonic() < until:
        x += 1


def main() -> int:
    trigger, procs = _arg("--trigger"), int(_arg("--procs", "2"))
    open(_arg("--ready"), "w").close()
    give_up = time.monotonic() + float(_arg("--wait", "120"))
    while not os.path.exists(trigger):
        if time.monotonic() > give_up:
            return 1
        time.sleep(0.005)
    until = time.monotonic() + float(_arg("--burn", "1.5"))
    children = []
    for _ in range(procs - 1):
        pid = os.fork()
        if pid == 0:
            burn(until)
            os._exit(0)
        children.append(pid)
    os.remove(trigger)  # taken: the probe's hold begins now
    burn(until)
    for pid in children:
        os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
