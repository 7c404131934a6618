"""SGLang (`python -m sglang.launch_server`): its facts (see base.Engine).

Flag tables read from each release's package (specdsl/facts, their
headers name the wheel); log patterns per release: 0.5.6 says "Attention
backend not explicitly specified", 0.5.9 "not specified", 0.5.17 moved most
of the resolution lines to srt/arg_groups/.
"""

from __future__ import annotations

from specdsl.facts.client import ClientQuirks
from specdsl.facts.engines.base import Engine, size


def _gpus(args: dict[str, object]) -> int:
    """Tensor x pipeline x data parallel size, the data parallel size left
    out with `--enable-dp-attention` (attention DP runs inside the TP
    group), divided by `--nnodes`; expert parallelism is inside TP too."""
    need = size(args, "tensor_parallel_size") * size(args, "pipeline_parallel_size")
    if args.get("enable_dp_attention") is not True:
        need *= size(args, "data_parallel_size")
    return max(1, -(-need // size(args, "nnodes")))


ENGINE = Engine(
    name="sglang",
    label="SGLang",
    distributions=("sglang",),
    flag_tables=(("0.5.6", "sglang-v0.5.6-server-args.tsv"), ("0.5.9", "sglang-v0.5.9-server-args.tsv"),
                 ("0.5.17", "sglang-v0.5.17-server-args.tsv")),
    # the table of a stack that pins no release (the one every spec was
    # checked against before tables per release)
    default_release="0.5.9",
    pattern_sets=(("0.5.6", "sglang-v0.5.6-log-patterns.tsv"), ("0.5.9", "sglang-log-patterns.tsv"),
                  ("0.5.17", "sglang-v0.5.17-log-patterns.tsv")),
    # the facts its adapter reads from the log and /server_info beside the
    # table's dests
    effective_extra=("attention_backend", "decode_attention_backend", "prefill_attention_backend", "kv_cache_dtype",
                     "architecture", "dtype", "weights_mem_gb",
                     # ServerArgs' field names, which /server_info reports; the 0.5.9
                     # table has argparse dests `tensor_parallel_size` etc. for them
                     "tp_size", "dp_size", "ep_size", "pp_size"),
    quirks=ClientQuirks(exact_len="ignore_eos", token_ids=True),
    # set from the server block (model, port) or needed to reach it
    managed={"model-path": "model", "model": "model", "port": "port", "host": None},
    started_by=lambda argv: "sglang.launch_server" in " ".join(argv),
    gpus=_gpus,
)
