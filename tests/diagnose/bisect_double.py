"""A test double of an OpenAI-compatible server (stdlib only) whose speed
depends on how it was started: bisect's fast tests run real experiments
against it in seconds.

    python bisect_double.py PORT --causes JSON [--noise CV --seed N] [--NAME VALUE ...]

Its markers are every `--NAME VALUE` flag after the options above (as
`NAME=VALUE`) and every environment variable `BD_*` (as `env:NAME=VALUE`).
`--causes` is a JSON list of groups of markers; the server runs at half
speed when every marker of some group is present (a group of one: one
cause; of two: two causes that act only together), else at 100 tok/s.
`--vague` (the same form) names the groups at which, not slow, it runs at
90 tok/s: right at a `>= baseline * 0.9` threshold, with noise of its own,
so that the few runs of a test do not decide it (INCONCLUSIVE).
`GET /speed` answers `{"tps": ...}` with a seeded Gaussian noise of CV
`--noise` (seeded by `--seed`, how many servers of its kind started
before it and the request count: reproducible, each launch its own draws);
`/health` 200; POST answers a completion. The server is
tests/http_double.py's; this file is its speed model.
"""

import json
import os
import random
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from http_double import JSON, Double  # noqa: E402  (tests/http_double.py)

PORT = int(sys.argv[1])
OWN = {"--causes", "--vague", "--noise", "--seed"}
rest = sys.argv[2:]
opts, markers = {}, set()
i = 0
while i < len(rest):
    word = rest[i]
    has_value = i + 1 < len(rest) and not rest[i + 1].startswith("--")
    value = rest[i + 1] if has_value else "true"
    if word in OWN:
        opts[word] = value
    elif word.startswith("--"):
        markers.add(f"{word[2:]}={value}")
    i += 2 if has_value else 1
markers |= {f"env:{k}={v}" for k, v in os.environ.items() if k.startswith("BD_")}
CAUSES = [set(group) for group in json.loads(opts.get("--causes", "[]"))]
SLOW = any(group <= markers for group in CAUSES)
VAGUE = not SLOW and any(set(group) <= markers for group in json.loads(opts.get("--vague", "[]")))
NOISE = float(opts.get("--noise", 0.0))
# how many servers of this kind the test started before this one (a count
# in a file of its working folder, the test's own) joins the seed: every
# launch of a pair draws its own noise, and the same test draws the same on
# every machine (launches of one kind come one after the other)
_KIND = "slow" if SLOW else "vague" if VAGUE else "plain"
_COUNT = os.path.join(os.getcwd(), f".bisect-double-{_KIND}.launches")
try:
    with open(_COUNT) as f:
        LAUNCH = len(f.read())
except FileNotFoundError:
    LAUNCH = 0
with open(_COUNT, "a") as f:
    f.write("x")
RNG = random.Random(int(opts.get("--seed", 0)) * 7919 + (1 if SLOW else 2 if VAGUE else 0) + 104729 * LAUNCH)


def speed() -> float:
    value = 50.0 if SLOW else (90.0 if VAGUE else 100.0)
    return value * (1 + NOISE * RNG.gauss(0, 1)) if NOISE else value


signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
print(f"bisect double on {PORT}: markers {sorted(markers)}, slow={SLOW}, vague={VAGUE}", flush=True)
# not a streaming server: every POST answers one completion, HTTP/1.0 (a connection a request)
Double(timing=None, plain=json.dumps({"choices": [{"text": " hi", "index": 0}]}).encode(), protocol="HTTP/1.0",
       get={"/health": lambda: (200, b"{}", JSON), "/speed": lambda: (200, json.dumps({"tps": speed()}).encode(), JSON)},
       ).serve(PORT, announce=None)
