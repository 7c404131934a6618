"""A server whose first launch finds its port taken, as real SGLang 0.5.17
did on an H200 (tests/servers/data/sglang-0.5.17-port-in-use.log).

    python taken_once_double.py MARKER PORT COMMAND...

The first time (no MARKER yet) it makes MARKER, logs uvicorn's bind error
for PORT and the start of its shutdown, and hangs; every later time it
execs COMMAND (the real server double).
"""

import os
import sys
import time

MARKER, PORT, COMMAND = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

if os.path.exists(MARKER):
    os.execvp(COMMAND[0], COMMAND)
open(MARKER, "w").close()
stamp = time.strftime("[%Y-%m-%d %H:%M:%S]")
print(f"{stamp} ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', {PORT}): "
      "address already in use", flush=True)
print(f"{stamp} INFO:     Waiting for application shutdown.", flush=True)
time.sleep(600)
