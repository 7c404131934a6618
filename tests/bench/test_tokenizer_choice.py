"""A workload's `tokenizer` (issue 34): the model's own or a local path;
with one, random and file prompts are exact in tokens on every endpoint."""

from __future__ import annotations

import json

import attrs

from specdsl.bench.datasets import build_prompts, load_tokenizer
from specdsl.bench.tokenizer_choice import missing_tokenizer, tokenizer_for
from specdsl.model.config import Workload


def test_which_tokenizer_a_workload_loads(tmp_path, tokenizer_dir):
    w = Workload(name="w")
    assert tokenizer_for(w, "org/hub-model", tmp_path) is None  # a hub id, nothing named: none
    assert tokenizer_for(w, str(tokenizer_dir), tmp_path) == str(tokenizer_dir)  # a local model: its own
    assert tokenizer_for(attrs.evolve(w, tokenizer="model"), "org/hub-model", tmp_path) == "org/hub-model"
    (tmp_path / "tok").mkdir()
    assert tokenizer_for(attrs.evolve(w, tokenizer="tok"), "org/hub-model", tmp_path) == str((tmp_path / "tok").resolve())
    assert "holds no tokenizer.json" in missing_tokenizer(attrs.evolve(w, tokenizer="tok"), tmp_path)
    assert "no such file or folder" in missing_tokenizer(attrs.evolve(w, tokenizer="nope"), tmp_path)
    assert missing_tokenizer(attrs.evolve(w, tokenizer=str(tokenizer_dir)), tmp_path) is None


def test_random_prompts_are_exact_in_tokens_on_chat_and_completions(tokenizer_dir):
    tok = load_tokenizer(str(tokenizer_dir))
    w = Workload(name="w", input_len=37, endpoint="chat")
    for chat, ids in ((True, False), (False, False), (False, True)):
        for p in build_prompts(w, 5, chat=chat, token_ids=ids, tokenizer=tok):
            assert p.prompt_len == 37
            if ids:
                assert len(p.prompt) == 37
            else:
                text = p.messages[0]["content"] if chat else p.prompt
                assert len(tok.encode(text)) == 37


def test_file_prompts_are_counted_in_tokens(tmp_path, tokenizer_dir):
    tok = load_tokenizer(str(tokenizer_dir))
    data = tmp_path / "p.jsonl"
    texts = ["hello there, how are you today?", "a much longer prompt than the first one, with more words in it"]
    data.write_text("".join(json.dumps({"prompt": t}) + "\n" for t in texts))
    w = Workload(name="w", dataset=str(data))
    counted = build_prompts(w, 2, chat=False, token_ids=False, tokenizer=tok)
    assert [p.prompt_len for p in counted] == [len(tok.encode(t)) for t in texts]
    chat = build_prompts(w, 2, chat=True, token_ids=False, tokenizer=tok)
    assert [p.prompt_len for p in chat] == [len(tok.encode(t)) for t in texts]
