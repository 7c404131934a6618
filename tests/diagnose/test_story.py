"""The story's diagnosis from recorded data, and the log facts it stands on
(SGLang's patterns per release, resolved values over unresolved ones, the
`/get_server_info` fallback)."""

from __future__ import annotations

import json

from specdsl.cli.main import main
from specdsl.facts import pattern_set
from specdsl.servers import scan_log
from story import DATA, ServerInfoDouble, make_story_state, read_effective


def test_each_release_is_read_with_its_own_patterns():
    old = (DATA / "story-v0.5.6.log").read_text()
    facts, warnings = scan_log("sglang", old, version="0.5.6")
    assert facts["attention_backend"] == "flashinfer"
    assert facts["architecture"] == "KimiK25ForConditionalGeneration"  # weight loading without elapsed=
    assert facts["log_patterns"] == "sglang 0.5.6"
    assert warnings == ["attention backend not specified: flashinfer chosen by default"]
    # 0.5.9's patterns do not know 0.5.6's wording: what the per-release sets fix
    facts_new, warnings_new = scan_log("sglang", old, version="0.5.9")
    assert facts_new.get("attention_backend") is None and "architecture" not in facts_new and not warnings_new

    new = (DATA / "story-v0.5.9.log").read_text()
    facts, warnings = scan_log("sglang", new, version="0.5.9+cu130")
    assert facts["attention_backend"] == "triton" and facts["architecture"] == "KimiK25ForConditionalGeneration"
    assert facts["log_patterns"] == "sglang 0.5.9"
    assert any(w.startswith("RISK: Blackwell + DeepGEMM") for w in warnings)
    assert "attention backend not specified: triton chosen by default" in warnings


def test_pattern_set_by_version():
    assert pattern_set("sglang", "0.5.6") == "sglang 0.5.6"
    assert pattern_set("sglang", "0.5.7.post1") == "sglang 0.5.6"  # between releases: the older set
    assert pattern_set("sglang", "0.5.10") == "sglang 0.5.9"
    assert pattern_set("sglang", None) == "sglang 0.5.9"  # unknown: the newest
    assert pattern_set("sglang", "0.4.0") == "sglang 0.5.6"  # older than any: the oldest
    assert pattern_set("transformers", "5.19.0") == ""


def test_resolved_log_values_win_and_get_server_info_is_tried_after_a_connection_error():
    with ServerInfoDouble(drop_server_info=True) as double:
        effective, warnings = read_effective(DATA / "story-v0.5.9.log", "0.5.9", double.port)
    assert double.paths == ["/server_info", "/get_server_info"]
    assert effective["kv_cache_dtype"] == "torch.bfloat16"  # the log's, not /server_info's 'auto'
    assert effective["attention_backend"] == "triton"  # the log's, not /server_info's null
    assert effective["internal_states.avg_spec_accept_length"] == 2.71  # the report still counts
    assert effective["mem_fraction_static"] == 0.82
    assert any("DeepGEMM" in w for w in warnings)


def test_story_diagnosis_ranks_the_attention_backend_default_first(tmp_path, capsys):
    name = make_story_state(tmp_path / "state")
    assert main(["diagnose", name, "--state", str(tmp_path / "state"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    first = doc["differences"][0]
    assert (first["category"], first["key"], first["baseline"], first["candidate"]) == (
        "effective", "attention_backend", "flashinfer", "triton")
    assert first["silent_default"] is True and first["rank"] == 0
    logs = [d["key"] for d in doc["differences"] if d["category"] == "log"]
    assert any("DeepGemm is enabled but the scale_fmt of checkpoint is not ue8m0" in k for k in logs)
    # the server's own words for its choice are quoted on that line; its warning is not said twice
    assert first["quote"] == "Attention backend not specified. Use triton backend by default."
    assert "attention backend not specified: triton chosen by default" not in logs
    hidden = {d["key"]: d["hidden"] for d in doc["hidden"]}
    assert hidden["attention backend not specified: triton chosen by default"] == "said by effective.attention_backend"
    keys = {(d["category"], d["key"]) for d in doc["differences"]}
    assert {("stack", "resolved.torch.nccl"), ("stack", "resolved.sglang"), ("stack", "resolved.torch")} <= keys
    assert ("effective", "kv_cache_dtype") not in keys  # resolved the same on both sides (the log's value)
    assert ("stack", "resolved.numpy") not in keys  # the same version: not a difference
    assert [d["rank"] for d in doc["differences"]] == list(range(len(doc["differences"])))
    assert {m["name"]: (m["baseline"], m["candidate"]) for m in doc["metrics"]}["output_throughput"] == (89.3, 83.7)  # medians of each arm's runs
    assert doc["metrics_are"] == ("baseline: median of the arm's runs (arm A: 2 runs of paired benchmark run 20260227T152000Z-upgrade1); "
                                  "candidate: median of the arm's runs (arm B: 2 runs of paired benchmark run 20260227T152000Z-upgrade1)")

    assert main(["diagnose", name, "--state", str(tmp_path / "state")]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == "upgrade against baseline, the two arms of paired run 20260227T152000Z-upgrade1"
    assert lines[1:4] == ["  metric                       baseline    candidate",
                          "  output_throughput                89.3         83.7",
                          "  (each figure: " + doc["metrics_are"] + ")"]
    first_line = next(l for l in lines if l.strip().startswith("1."))
    assert first_line.startswith('  1. effective.attention_backend: flashinfer -> triton  [server default]  '
                                 'log: "Attention backend not specified. Use triton backend by default."')


def test_diff_of_the_two_arms_by_name(tmp_path, capsys):
    make_story_state(tmp_path / "state")
    assert main(["diff", "baseline", "upgrade", "--state", str(tmp_path / "state"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["differences"][0]["key"] == "attention_backend"
    assert main(["diff", "upgrade", "upgrade", "--state", str(tmp_path / "state")]) == 0
    assert "No differences recorded" in capsys.readouterr().out


def test_bad_input_says_what_is_missing(tmp_path, capsys):
    assert main(["diagnose", "upgrade", "--state", str(tmp_path / "none")]) == 1
    assert "nothing is recorded" in capsys.readouterr().err
    make_story_state(tmp_path / "state")
    assert main(["diagnose", "nosuch", "--state", str(tmp_path / "state")]) == 1
    err = capsys.readouterr().err
    assert "no recorded results" in err and "specdsl apply" in err and "Traceback" not in err
    assert main(["diff", "baseline", "nosuch", "--state", str(tmp_path / "state")]) == 1
    assert "no experiment or run 'nosuch'" in capsys.readouterr().err
