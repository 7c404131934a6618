"""A random Llama (bf16) with the quickstart's tokenizer, for the GPU run
(`benchmarks/gpu/run.sh`). Random weights: the figures measure the serving
stack, not the model's answers.

    python make_model.py OUT_DIR [800m|8b]

`800m` (the default) is small enough that vLLM's host-side loop, not the
GPU, limits its speed on the H200 (the GPU draws a third of its power: the
figures follow the host's CPU, docs/gpu-run.md); `8b` has Llama-3-8B's
shapes, so the GPU limits a decode step, as it does for the story's models.
"""

import shutil
import sys
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

TINY = Path(__file__).resolve().parents[2] / "examples" / "quickstart" / "tiny-llama"


SHAPES = {  # hidden, intermediate, layers, heads, kv heads
    "800m": (2048, 5632, 16, 16, 16),
    "8b": (4096, 14336, 32, 32, 8),
}


def main(out: Path, size: str = "800m") -> None:
    config = LlamaConfig.from_pretrained(TINY)
    (config.hidden_size, config.intermediate_size, config.num_hidden_layers,
     config.num_attention_heads, config.num_key_value_heads) = SHAPES[size]
    config.head_dim = 128
    config.dtype = "bfloat16"
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json"):
        if (TINY / name).exists():
            shutil.copy(TINY / name, out / name)
    print(f"{sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters written to {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), *sys.argv[2:3])
