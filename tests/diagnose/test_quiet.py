"""A diagnosis without noise: the flags a release added at their defaults
in one line, an engine's internal record of a flag never a second line, a
log quote cut to the fragment that says the fact."""

from __future__ import annotations

from specdsl.diagnose.arms import Arm
from specdsl.diagnose.compare import QUOTE_MAX, compare_arms, fragment

DUMP = ("server_args=ServerArgs(model_path='moonshotai/Kimi-K2.5', tp_size=8, attention_backend=None, "
        "kv_cache_dtype='auto', json_model_override_args='{\"a\": [1, 2]}', lora_paths=['x', 'y'], "
        + ", ".join(f"flag_{i}=False" for i in range(60)) + ", fp8_gemm_runner_backend='auto', mamba_backend='triton')")


def test_a_quote_is_the_fragment_that_says_the_fact():
    assert len(DUMP) > 1000
    assert fragment(DUMP, "fp8_gemm_runner_backend") == "…fp8_gemm_runner_backend='auto'…"
    assert fragment(DUMP, "lora_paths") == "…lora_paths=['x', 'y']…"  # brackets kept whole
    assert fragment(DUMP, "json_model_override_args") == "…json_model_override_args='{\"a\": [1, 2]}'…"
    assert fragment(DUMP, "mamba_backend") == "…mamba_backend='triton'…"  # the last item: up to the dump's `)`
    assert fragment(DUMP, "internal_states.tp_size") == "…tp_size=8…"
    # a short message is quoted whole; a long one without the key is cut, never over QUOTE_MAX
    short = "Attention backend not specified. Use triton backend by default."
    assert fragment(short, "attention_backend") == short
    cut = fragment("x" * 500, "nothing")
    assert len(cut) == QUOTE_MAX and cut.endswith("…")
    assert len(fragment("k=" + "v" * 500, "k")) <= QUOTE_MAX


ADDED = {"disable_flashinfer_autotune": False, "enable_dynamic_chunking": False, "fp8_gemm_runner_backend": "auto",
         "enable_fused_qk_norm_rope": False, "mamba_backend": "triton", "pp_async_batch_depth": 0}


def _arms(**cand_extra):
    base = Arm(label="baseline", run_id="r1", engine="sglang",
               effective={"version": "0.5.6", "attention_backend": "flashinfer", "internal_states.avg_spec_accept_length": 2.7})
    cand_eff = {"version": "0.5.9", "attention_backend": "triton", "internal_states.avg_spec_accept_length": 2.7,
                **ADDED, **{f"internal_states.{k}": v for k, v in ADDED.items()}, **cand_extra}
    cand = Arm(label="upgrade", run_id="r2", engine="sglang", effective=cand_eff,
               sources={"fp8_gemm_runner_backend": DUMP, "attention_backend": DUMP})
    return base, cand


def test_flags_a_release_added_at_their_defaults_are_one_line():
    d = compare_arms(*_arms())
    lines = [x.line() for x in d.differences]
    assert lines[0].startswith("effective.attention_backend: flashinfer -> triton  [server default]  log: \"…attention_backend=None…\"")
    grouped = [x for x in d.differences if x.members]
    assert len(grouped) == 1 and len(d.differences) == 2
    assert grouped[0].line().startswith(
        "sglang 0.5.9 adds 6 flags, all at their defaults: disable_flashinfer_autotune=false, enable_dynamic_chunking=false, "
        "enable_fused_qk_norm_rope=false, fp8_gemm_runner_backend=auto, mamba_backend=triton, pp_async_batch_depth=0")
    assert grouped[0].to_json()["members"][0] == {"key": "disable_flashinfer_autotune", "value": "false"}
    # each flag's internal_states record is the same fact: hidden, said by the flag
    hidden = {x.key: x.hidden for x in d.hidden}
    assert hidden["internal_states.mamba_backend"] == "said by effective.mamba_backend"
    assert not any(x.key.startswith("internal_states.") for x in d.differences)


def test_a_new_flag_off_its_default_and_a_different_internal_record_stay_their_own_lines():
    base, cand = _arms(fp8_gemm_runner_backend="deep_gemm")
    d = compare_arms(base, cand)
    own = next(x for x in d.differences if x.key == "fp8_gemm_runner_backend")
    assert own.change() == "(unset) -> deep_gemm" and not own.members
    assert next(x for x in d.differences if x.members).line().startswith("sglang 0.5.9 adds 5 flags, all at their defaults")
    # internal_states.fp8_gemm_runner_backend says auto, the flag deep_gemm: two facts, two lines
    assert any(x.key == "internal_states.fp8_gemm_runner_backend" for x in d.differences)


def test_one_release_adds_nothing():
    base, cand = _arms()
    same = Arm(label="b", run_id="r3", engine="sglang", effective={**cand.effective, "attention_backend": "flashinfer"})
    d = compare_arms(same, cand)
    assert not any(x.members for x in d.differences)
