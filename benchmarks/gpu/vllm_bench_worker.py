"""`vllm bench serve` without its 25-30 s of imports per run: one process
per launch imports vLLM's benchmark once, then runs it once per line of
arguments read from stdin (the same arguments the CLI takes) and answers
each with one line `RESULT <json>` (the dict `vllm bench serve` saves with
`--save-result`). Used by benchmarks/gpu/noise.py; the figures are the
engine's own client's, computed by its own code.
"""

import json
import shlex
import sys

from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser


def serve() -> None:
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    print("READY", flush=True)
    for line in sys.stdin:
        try:
            result = main(parser.parse_args(shlex.split(line)))
            keep = {k: v for k, v in result.items() if isinstance(v, (int, float, str)) or v is None}
            print("RESULT " + json.dumps(keep), flush=True)
        except BaseException as exc:  # a failed run is one answer, not the worker's end
            print("RESULT " + json.dumps({"error": repr(exc)[:600]}), flush=True)


if __name__ == "__main__":
    serve()
