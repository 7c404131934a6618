"""A random Llama of about 800M parameters (bf16) with the quickstart's
tokenizer, for the GPU run (`benchmarks/gpu/run.sh`). Random weights: the
figures measure the serving stack, not the model's answers.

    python make_model.py OUT_DIR
"""

import shutil
import sys
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

TINY = Path(__file__).resolve().parents[2] / "examples" / "quickstart" / "tiny-llama"


def main(out: Path) -> None:
    config = LlamaConfig.from_pretrained(TINY)
    config.hidden_size, config.intermediate_size = 2048, 5632
    config.num_hidden_layers, config.num_attention_heads, config.num_key_value_heads = 16, 16, 16
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
    main(Path(sys.argv[1]))
