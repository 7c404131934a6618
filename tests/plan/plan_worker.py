"""A planning worker for the cross-process determinism property: reads one
JSON request per line on stdin, {"spec": TEXT, "state": TOML or null},
and answers each with the plan's JSON text, as one JSON string per line.
Started under a chosen PYTHONHASHSEED, so two workers with different seeds
show whether a plan depends on string hashing (set order, dict order of
hashed keys)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan_helpers import plan_for, resolve_text  # noqa: E402
from specdsl.plan.render import render_json  # noqa: E402
from specdsl.state import decode_state  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for line in sys.stdin:
            request = json.loads(line)
            cfg = resolve_text(Path(folder), request["spec"])
            state = decode_state(request["state"], Path(folder) / "state.toml") if request.get("state") else None
            _, plan = plan_for(cfg, state)
            sys.stdout.write(json.dumps(render_json(plan)) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
