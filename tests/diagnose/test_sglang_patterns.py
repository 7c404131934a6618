"""SGLang 0.5.6's log patterns against lines in that release's wording
(tests/diagnose/data/sglang-v0.5.6-lines.log: each message as the 0.5.6
wheel's source formats it, with sample values; the tsv names the file and
line of each). Every row must read at least one line, every line must be
read by a row, and each row must cite where in the release it comes from."""

from __future__ import annotations

import re

from specdsl.facts import log_patterns
from specdsl.servers import scan_log
from story import DATA

LINES = (DATA / "sglang-v0.5.6-lines.log").read_text().splitlines()


def test_every_row_reads_a_line_of_the_release_and_every_line_is_read():
    patterns = log_patterns("sglang", "0.5.6")
    unread_rows = [p.regex.pattern for p in patterns if not any(p.regex.search(l) for l in LINES)]
    unread_lines = [l for l in LINES if not any(p.regex.search(l) for p in patterns)]
    assert not unread_rows and not unread_lines
    for p in patterns:  # traceable: a file and line of the release, or the third-party library named
        assert re.fullmatch(r"python/sglang/srt/\S+\.py:[\d,-]+", p.source) or p.source == "uvicorn (third-party)", p.source


def test_lines_later_releases_added_are_not_in_the_set():
    texts = " ".join(p.regex.pattern for p in log_patterns("sglang", "0.5.6"))
    for later in ("DeepGemm is enabled but the scale_fmt", "All-reduce call path", "Spec v2", "elapsed="):
        assert later not in texts


def test_facts_read_from_the_release_lines():
    facts, warnings = scan_log("sglang", "\n".join(LINES), version="0.5.6")
    assert facts["architecture"] == "LlamaForCausalLM" and facts["kv_cache_dtype"] == "torch.bfloat16"
    assert (facts["decode_attention_backend"], facts["prefill_attention_backend"]) == ("triton", "flashinfer")
    assert "attention backend not specified: flashinfer chosen by default" in warnings
    assert any(w.startswith("RISK: FP8 KV cache") for w in warnings)
