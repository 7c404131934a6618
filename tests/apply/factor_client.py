"""TEST DOUBLE: a benchmark command (a workload's `command`) that reads the
launch factor of the decision double it is pointed at
(tests/apply/decision_double.py, GET /timings) and prints it as a
throughput with a little run noise, as JSON. Its numbers come from the
server's launch, not from a clock, so a verdict on them does not depend on
how busy the machine is.

    python factor_client.py BASE_URL [--noise CV]
    # prints {"output_throughput": 100 x factor x exp(CV z)}
"""

from __future__ import annotations

import argparse
import json
import math
import random
import urllib.request


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("base_url")
    ap.add_argument("--noise", type=float, default=0.005)
    args = ap.parse_args()
    with urllib.request.urlopen(args.base_url.rstrip("/") + "/timings", timeout=10) as answer:
        factor = float(json.loads(answer.read())["factor"])
    print(json.dumps({"output_throughput": 100.0 * factor * math.exp(args.noise * random.gauss(0.0, 1.0))}))


if __name__ == "__main__":
    main()
