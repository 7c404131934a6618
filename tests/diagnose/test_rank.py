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
        ("server_args", "enable-cors"),  # tier 6: declared
        ("env", "DEMO_NOTE"),
        ("stack", "resolved.rich"),  # tier 7: another package
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
