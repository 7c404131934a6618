"""What validation accepts as `effective.NAME` (facts.effective_names) covers
every name an adapter sets from the log, so a name a server does report is
never refused: the adapters and the facts' list stay in step."""

from __future__ import annotations

import pytest

from specdsl.facts import EFFECTIVE_EXTRA, effective_names, flag_releases
from specdsl.servers import adapter_for


@pytest.mark.parametrize("engine", ["sglang", "vllm", "transformers"])
def test_every_name_an_adapter_reads_from_the_log_is_known(engine):
    adapter = adapter_for(engine)
    from_log = {key for keys in adapter.keyed.values() for key in keys if key}
    for release in flag_releases(engine):
        assert from_log <= effective_names(engine, release), (release, from_log - effective_names(engine, release))
    assert set(adapter.impact) <= effective_names(engine)  # what diagnose explains is reportable


def test_effective_names_hold_the_tables_dests_and_the_log_facts():
    names = effective_names("sglang", "0.5.17")
    assert {"attention_backend", "mem_fraction_static", "cuda_graph_max_bs_decode"} <= names
    assert "continuous_batching" in effective_names("transformers")
    assert set(EFFECTIVE_EXTRA) == {"sglang", "vllm", "transformers"}
    assert effective_names("command") == frozenset()
