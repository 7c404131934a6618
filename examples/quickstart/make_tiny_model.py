"""Make the tiny random Llama that the quickstart and the end-to-end tests serve.

    python examples/quickstart/make_tiny_model.py [--out DIR] [--seed N]

Needs torch, transformers and tokenizers (any environment with
`transformers[serving]` has them). The result is a transformers-loadable
folder (config.json, model.safetensors, generation_config.json,
tokenizer.json, tokenizer_config.json with a chat template) well under 2 MB,
and byte-for-byte the same for the same seed: it is committed, this script
says how it was made.

The shape is chosen to load everywhere we test: head_dim 64 (a size every
vLLM CPU attention kernel supports), grouped-query attention (2 heads, 1 KV
head), tied embeddings, float32 weights, 4096 positions so a 1024+128 token
workload fits. The weights are random: it produces gibberish at a known cost.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SEED = 20261129
VOCAB_SIZE = 512
BOS, EOS, PAD = "<|begin_of_text|>", "<|end_of_text|>", "<|pad|>"
SPECIAL = [BOS, EOS, PAD, "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n"
    "{{ message['content'] }}<|eot_id|>"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)

# A fixed training text, so the byte-level BPE merges are the same every run.
CORPUS = """
The quick brown fox jumps over the lazy dog. A server answers requests; a
benchmark measures how fast. Throughput is tokens per second, latency is the
time to the first token and between tokens. The plan says what will change,
apply does it, and the state records what happened. Hello world! How are you
today? I am a tiny language model with random weights and I say nothing useful.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000. Code: def main(): return 0
""".strip()


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([CORPUS] * 8, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, tok.token_to_id(BOS))]
    )
    return tok


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "tiny-llama")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)

    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = build_tokenizer()
    config = LlamaConfig(
        # The trained BPE stops short of VOCAB_SIZE on this small corpus; the
        # embedding keeps a round size (rows past the tokenizer are unused).
        vocab_size=VOCAB_SIZE,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=64,
        max_position_embeddings=4096,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        bos_token_id=tok.token_to_id(BOS),
        eos_token_id=tok.token_to_id(EOS),
        pad_token_id=tok.token_to_id(PAD),
        torch_dtype="float32",
    )
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    model.generation_config = GenerationConfig(
        bos_token_id=config.bos_token_id,
        eos_token_id=config.eos_token_id,
        pad_token_id=config.pad_token_id,
        do_sample=False,
        max_new_tokens=128,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=BOS, eos_token=EOS, pad_token=PAD, model_max_length=4096
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(args.out)
    # save_pretrained may also write chat_template.jinja; keep the template in
    # tokenizer_config.json too, which every loader we target reads.
    cfg_path = args.out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["chat_template"] = CHAT_TEMPLATE
    # A class name transformers 4.x and 5.x both know (5.x writes TokenizersBackend).
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")

    total = sum(p.stat().st_size for p in args.out.iterdir())
    print(f"wrote {args.out} ({total / 1e6:.2f} MB, {sum(p.numel() for p in model.parameters())} params)")
    return args.out


if __name__ == "__main__":
    main()
