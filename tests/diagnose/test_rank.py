"""The ranking rule on arms built directly (docs/diagnose.md)."""

from specdsl.diagnose import compare_arms
from specdsl.diagnose.arms import Arm


def _arm(label, args, effective, declared, env=None, packages=None, warnings=()):
    return Arm(label=label, run_id=f"run-{label}", engine="transformers", effective=effective, declared=frozenset(declared),
               args=args, env=env or {}, packages=packages or {}, warnings=tuple(warnings))


def test_a_silent_default_of_an_impact_setting_ranks_first_then_its_flag():
    base = _arm("batched", {"continuous-batching": "true", "cb-max-memory-percent": "0.02"},
                {"continuous_batching": True, "cb_max_memory_percent": 0.02}, {"continuous_batching", "cb_max_memory_percent"},
                packages={"torch": "2.13.0", "rich": "13.0"})
    cand = _arm("tuned", {"cb-max-memory-percent": "0.02", "enable-cors": "true"},
                {"continuous_batching": False, "cb_max_memory_percent": 0.02, "enable_cors": True},
                {"cb_max_memory_percent", "enable_cors"}, env={"DEMO_NOTE": "candidate"},
                packages={"torch": "2.13.0", "rich": "14.0"})
    d = compare_arms(base, cand)
    assert [(x.category, x.key) for x in d.differences] == [
        ("effective", "continuous_batching"),  # tier 0: the server's own choice, an impact setting
        ("server_args", "continuous-batching"),  # tier 1: the flag behind it
        ("env", "DEMO_NOTE"),  # tier 4: the environment
        ("server_args", "enable-cors"),  # tier 8: declared
        ("stack", "resolved.rich"),  # tier 9: another package
    ]
    first = d.differences[0]
    assert first.silent_default and (first.baseline, first.candidate) == ("true", "false")
    assert "one request at a time" in first.why and "the spec of tuned does not set it" in first.why
    assert not any(x.key == "enable_cors" for x in d.differences)  # only what the candidate's spec asked: said once, as a flag
    assert [x.bisectable for x in d.differences] == [False, True, True, True, False]


def test_declared_impact_changes_rank_above_other_declared_ones():
    base = _arm("a", {"attn-implementation": "sdpa", "default-seed": "1"}, {}, {"attn_implementation", "default_seed"})
    cand = _arm("b", {"attn-implementation": "eager", "default-seed": "2"}, {}, {"attn_implementation", "default_seed"})
    assert [x.key for x in compare_arms(base, cand).differences] == ["attn-implementation", "default-seed"]


def test_identical_arms_have_no_differences():
    arm = _arm("a", {"x": "1"}, {"continuous_batching": True}, {"x"}, env={"A": "1"}, warnings=("RISK: w",))
    assert compare_arms(arm, arm).differences == ()


def test_noise_is_hidden_nested_values_compare_field_by_field_and_log_facts_count_their_launches():
    from specdsl.diagnose.arms import flatten

    assert flatten({"internal_states": [{"a": 1, "m": {"w": 2}}, {"a": 3}], "x": [1, 2], "e": {}}) == {
        "internal_states.a": 1, "internal_states.m.w": 2, "internal_states[1].a": 3, "x": [1, 2], "e": {}}
    risk = "RISK: w (log: said)"
    base = Arm(label="a", run_id="r", engine="sglang", effective={"port": 1, "random_seed": 7, "chunked_prefill_size": 8192,
                                                                    "gauge": 1.0}, launches=(0, 2, 4))
    cand = Arm(label="b", run_id="r", engine="sglang", effective={"port": 2, "random_seed": 9, "chunked_prefill_size": 4096,
                                                                    "gauge": 2.0},
               volatile=frozenset({"gauge"}), warnings=(risk,), warned={risk: (1, 5)}, launches=(1, 3, 5))
    d = compare_arms(base, cand)
    assert [x.line() for x in d.differences] == [
        "effective.chunked_prefill_size: 8192 -> 4096  [server default]  (prefill chunking trades TTFT for decode "
        "smoothness; chosen by the server: the spec of a and b does not set it)",
        "log (candidate only, 2 of 3 launches: 1, 5): RISK: w (log: said)  (only b's server log says so)"]
    # ports and seeds as SGLang's adapter declares them, a gauge as one arm's launches showed it
    assert {(x.key, x.hidden) for x in d.hidden} == {
        (k, "noise: differs between launches of one configuration") for k in ("port", "random_seed", "gauge")}
    assert not [x for x in d.bisectable() if x.key in ("port", "random_seed", "gauge")]
