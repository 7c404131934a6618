"""`transformers serve` (Hugging Face transformers 5.x): its facts (see base.Engine).

Flag tables: `transformers serve --help` of each release; no log patterns
(the adapter reads `continuous_batching` from its per-request `CB:` lines).
"""

from __future__ import annotations

from pathlib import PurePath

from specdsl.facts.client import ClientQuirks
from specdsl.facts.engines.base import Engine

IMPACT = {
    "continuous_batching": "without continuous batching the server answers one request at a time",
    "cb_num_blocks": "the KV cache size of continuous batching bounds how many requests run together",
    "cb_max_memory_percent": "the KV cache size of continuous batching bounds how many requests run together",
    "attn_implementation": "the attention kernel sets the speed of every step",
    "dtype": "the weights' precision sets the cost of every matrix product",
    "device": "the device the model runs on",
    "quantization": "quantized weights change the kernels and the precision",
}
IMPACT_PACKAGES = {
    "transformers": "the serving engine itself",
    "torch": "the kernels every step runs",
    "kernels": "the attention and matmul kernels transformers loads",
}


ENGINE = Engine(
    name="transformers",
    label="transformers",
    distributions=("transformers",),
    flag_tables=(("5.17", "transformers-5.17-serve-help.txt"), ("5.19", "transformers-5.19-serve-help.txt")),
    default_release="5.17",
    effective_extra=("continuous_batching",),
    # 5.19 rejects unknown fields (ignore_eos: HTTP 422), takes text prompts
    # only and sends no usage in the stream; an exact length is its own
    # `generation_config` field
    quirks=ClientQuirks(exact_len="generation_config", token_ids=False, stream_usage=False),
    managed={"port": "port", "host": None},  # the model is `serve`'s argument
    started_by=lambda argv: (len(argv) > 1 and PurePath(argv[0]).name == "transformers")
    or "transformers.cli" in " ".join(argv),
    gpus=lambda args: 1,  # one process, one device
    impact_packages=IMPACT_PACKAGES,
    impact=IMPACT,
)
