"""A realistic SGLang double (stdlib only), installed as the module
`sglang.launch_server` of a wheel named sglang at 0.5.6 or 0.5.9 (see
test_sglang_replay.py): started as SGLang is, it writes the startup lines
that release writes (their wording as in specdsl/facts: 0.5.6's
read from its release wheel, without level name or file:line; the story's lines
verbatim for 0.5.9), chooses its attention backend as the story's servers
did when none is given (0.5.6: flashinfer; 0.5.9 on Blackwell: triton),
serves `/health`, one completion, `/server_info` (unresolved values, as
SGLang reports them, and `internal_states` as 0.5.9 nests them: a list of
one object per data-parallel rank) and `/speed` (100 tok/s with
flashinfer, 85 with triton, seeded noise of 1%). As SGLang does, each
launch logs with the clock's time and draws its own NCCL port and random
seed: what differs between two launches of one configuration. 0.5.9
prints six flags that release added, at their defaults, in its
`server_args=` dump, its `/server_info` and each rank's `internal_states`
(as a real 0.5.9 does, with dozens).
"""

import json
import os
import random
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sglang import VERSION

argv = sys.argv[1:]
PORT = int(argv[argv.index("--port") + 1])
ASKED = argv[argv.index("--attention-backend") + 1] if "--attention-backend" in argv else None
OLD = VERSION.startswith("0.5.6")
BACKEND = ASKED or ("flashinfer" if OLD else "triton")
# seeded by the version and how many servers of this version the test
# started before (a count in a file of its working folder, the test's own):
# the same noise on every machine, and each launch of a pair its own draws
_COUNT = os.path.join(os.getcwd(), f".sglang-double-{VERSION}.launches")
try:
    with open(_COUNT) as f:
        _LAUNCH = len(f.read())
except FileNotFoundError:
    _LAUNCH = 0
with open(_COUNT, "a") as f:
    f.write("x")
RNG = random.Random((7 if OLD else 9) + 1009 * _LAUNCH)
DRAWN = random.SystemRandom()  # a launch's own: differs between any two launches, as SGLang's
NCCL_PORT, SEED = DRAWN.randrange(20000, 60000), DRAWN.randrange(1, 2**30)
# flags 0.5.9 added (in its flag table, not in 0.5.6's), at their defaults:
# its server_args= dump and /server_info (and each rank's internal_states) say them
ADDED = {} if OLD else {"disable_flashinfer_autotune": False, "enable_dynamic_chunking": False,
                        "fp8_gemm_runner_backend": "auto", "enable_fused_qk_norm_rope": False, "mamba_backend": "triton",
                        "pp_async_batch_depth": 0}
ARGS = (f"model_path='m', tp_size=1, attention_backend={ASKED!r}, kv_cache_dtype='auto', port={PORT}, "
        f"nccl_port={NCCL_PORT}, random_seed={SEED}" + "".join(f", {k}={v!r}" for k, v in ADDED.items()))


def log(line: str) -> None:
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {line}", flush=True)


if OLD:  # 0.5.6 logs no level name and no file:line (its configure_logger)
    log(f"server_args=ServerArgs({ARGS})")
    if ASKED is None:
        log("Attention backend not explicitly specified. Use flashinfer backend by default.")
    log("Init torch distributed ends. mem usage=0.00 GB")
    log("Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=70.10 GB, mem usage=1.52 GB.")
else:
    log(f"INFO server_args.py:1: server_args=ServerArgs({ARGS})")
    log("WARNING model_config.py:955: DeepGemm is enabled but the scale_fmt of checkpoint is not ue8m0. This might cause accuracy degradation on Blackwell.")
    if ASKED is None:
        log("INFO server_args.py:1835: Attention backend not specified. Use triton backend by default.")
    log("Init torch distributed ends. elapsed=0.41 s, mem usage=0.00 GB")
    log("Load weight end. elapsed=1.20 s, type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=70.10 GB, mem usage=1.52 GB.")
log("Using KV cache dtype: torch.bfloat16")
INFO = {"attention_backend": ASKED, "kv_cache_dtype": "auto", "version": VERSION, "tp_size": 1, "port": PORT,
        "nccl_port": NCCL_PORT, "random_seed": SEED,
        "internal_states": [{"avg_spec_accept_length": 2.71, "memory_usage": {"weight": 1.52, "kvcache": 60.2},
                             "last_gen_throughput": round(DRAWN.uniform(80, 100), 2), **ADDED}], **ADDED}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self._send(200, {})
        elif self.path == "/speed":
            base = 100.0 if BACKEND == "flashinfer" else 85.0
            self._send(200, {"tps": base * (1 + 0.01 * RNG.gauss(0, 1))})
        elif self.path == "/server_info":
            self._send(200, INFO)
        else:
            self._send(404, {})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self._send(200, {"choices": [{"text": " hi", "index": 0}]})


signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
log("The server is fired up and ready to roll!")
server.serve_forever()
