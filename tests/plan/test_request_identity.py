"""A benchmark's identity holds the request its client sends (issue 10:
request settings recorded and locked): the body as a template (prompt and
length as placeholders) and the client settings beside it (the engine's
quirks), derived without running anything (specdsl.facts.client). A change
of either reruns the benchmark and the plan names the field; the same
template keeps the recorded result."""

from __future__ import annotations

import json

import attrs
import pytest

from specdsl.bench.datasets import Prompt
from specdsl.bench.loadgen import request_body
from specdsl.facts import ENGINES, client, engines
from specdsl.plan.model import Action
from specdsl.servers import ADAPTERS
from specdsl.state import StepRecord

from tests.plan.plan_helpers import SPEC, applied_state, plan_for, resolve_text

TRANSFORMERS = SPEC.replace('engine = "sglang"', 'engine = "transformers"').replace(
    '  args   = { attention-backend = "triton" }\n', "").replace(
    'args = { attention-backend = "flashinfer" }', 'args = { continuous-batching = true }')


def _fill(template: dict, prompt: Prompt) -> bytes:
    """The template with one request's values put in, as the client would send it."""
    body = {}
    for key, value in template.items():
        if value in (client.PROMPT_TEXT, client.PROMPT_IDS):
            value = prompt.prompt
        elif value == client.MESSAGES:
            value = prompt.messages
        elif value == client.MAX_TOKENS:
            value = prompt.output_len
        elif isinstance(value, str) and client.MAX_TOKENS in value:
            value = value.replace(client.MAX_TOKENS, str(prompt.output_len))
        body[key] = value
    return json.dumps(body, separators=(",", ":")).encode()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("ignore_eos", [None, True, False])
@pytest.mark.parametrize("endpoint, dataset", [("completions", "random"), ("completions", "p.jsonl"), ("chat", "random")])
def test_the_template_is_the_body_the_client_sends(engine, ignore_eos, endpoint, dataset):
    quirks = ADAPTERS[engine].quirks
    template = client.request_template(quirks, model="m", endpoint=endpoint, dataset=dataset, ignore_eos=ignore_eos)
    ids = template.get("prompt") == client.PROMPT_IDS
    # what specdsl.bench.datasets builds for this endpoint, dataset and server
    assert ids == (quirks.token_ids and endpoint == "completions" and dataset == "random")
    if endpoint == "chat":
        prompt = Prompt(None, [{"role": "user", "content": "a b"}], 0, 17)
    else:
        prompt = Prompt([11, 12] if ids else "a b", None, 2, 17)
    assert _fill(template, prompt) == request_body(prompt, "m", quirks, ignore_eos)


def test_each_adapter_takes_its_quirks_from_the_one_table():
    # so a quirk changed in the adapter is a quirk changed for planning too
    for name, adapter in ADAPTERS.items():
        assert adapter.quirks is engines.QUIRKS[name], name


def _bench_change(plan, addr="benchmark.base"):
    return next(c for c in plan.changes if c.addr == addr)


def test_an_unchanged_template_keeps_the_result(tmp_path):
    graph, _ = plan_for(resolve_text(tmp_path, TRANSFORMERS))
    body = graph.steps["benchmark.base"].content["request"]["body"]
    assert body["generation_config"] == '{"max_new_tokens":{max_tokens},"min_new_tokens":{max_tokens}}'
    assert "stream_options" not in body and graph.steps["benchmark.base"].content["request"]["client"]["stream_usage"] is False
    state = applied_state(graph)
    _, again = plan_for(resolve_text(tmp_path, TRANSFORMERS), state)
    # nothing runs or starts (the promotion waits for its first verdict, as before)
    assert [c.addr for c in again.changes if c.action not in (Action.REUSE, Action.CHECK)] == ["promote.cand"]
    assert _bench_change(again).action is Action.REUSE and _bench_change(again).reason == "results recorded in run r1"


def test_a_workload_setting_that_changes_the_template_reruns(tmp_path):
    graph, _ = plan_for(resolve_text(tmp_path, TRANSFORMERS))
    state = applied_state(graph)
    changed = TRANSFORMERS.replace("  requests    = 16\n", "  requests    = 16\n  ignore_eos  = false\n")
    _, plan = plan_for(resolve_text(tmp_path, changed), state)
    bench = _bench_change(plan)
    assert bench.action is Action.RUN
    assert 'request.body.generation_config: "{\\"max_new_tokens\\":{max_tokens},\\"min_new_tokens\\":{max_tokens}}" -> (none)' \
        in bench.reason, bench.reason
    assert "ignore_eos: (none) -> false" in bench.reason


def test_a_quirk_changed_in_the_adapter_reruns(tmp_path, monkeypatch):
    graph, _ = plan_for(resolve_text(tmp_path, SPEC))
    state = applied_state(graph)
    _, same = plan_for(resolve_text(tmp_path, SPEC), state)
    assert _bench_change(same).action is Action.REUSE and _bench_change(same, "benchmark.cand").action is Action.REUSE
    # the sglang adapter stops asking for usage in the stream
    monkeypatch.setitem(engines.QUIRKS, "sglang", attrs.evolve(engines.QUIRKS["sglang"], stream_usage=False))
    assert ADAPTERS["sglang"].quirks is not engines.QUIRKS["sglang"]  # (the adapter class read it at import)
    _, plan = plan_for(resolve_text(tmp_path, SPEC), state)
    bench = _bench_change(plan)
    assert bench.action is Action.RUN
    assert bench.reason == "request.body.stream_options.include_usage: true -> (none), request.client.stream_usage: true -> false"
    # the candidate is paired with the base: its request is both arms'
    cand = _bench_change(plan, "benchmark.cand")
    assert cand.action is Action.RUN and "request.baseline.client.stream_usage: true -> false" in cand.reason
    assert "request.candidate.client.stream_usage: true -> false" in cand.reason
    launch = next(c for c in plan.changes if c.kind == "launch")
    assert launch.fields == ()  # the server is the same: only what the client sends changed


def test_a_result_recorded_before_the_template_reruns_once_and_says_why(tmp_path, monkeypatch):
    # what an older specdsl built and recorded: no `request` in a benchmark's content
    with monkeypatch.context() as m:
        m.setattr("specdsl.graph.build._request_once", lambda work, server, workload: None)
        old, _ = plan_for(resolve_text(tmp_path, SPEC))
    assert "request" not in old.steps["benchmark.base"].content
    state = applied_state(old)
    graph, plan = plan_for(resolve_text(tmp_path, SPEC), state)
    assert graph.steps["benchmark.base"].identity != old.steps["benchmark.base"].identity
    assert _bench_change(plan).action is Action.RUN
    assert _bench_change(plan).reason == "request: not in the recorded step (recorded before specdsl kept the request template)"
    assert _bench_change(plan, "benchmark.cand").reason.startswith("request: not in the recorded step")
    # the servers and environments recorded are still the same ones
    assert [c.action for c in plan.changes if c.kind == "provision"] == [Action.REUSE]
    # once rerun and recorded, it stays
    _, after = plan_for(resolve_text(tmp_path, SPEC), applied_state(graph, state))
    assert _bench_change(after).action is Action.REUSE


def test_a_benchmark_command_has_no_request_template(tmp_path):
    spec = SPEC.replace('  requests    = 16\n', '  requests    = 16\n  command     = ["bench", "--port", "{port}"]\n'
                                          '  metric "tps" { regex = "tps: ([0-9.]+)" }\n')
    graph, _ = plan_for(resolve_text(tmp_path, spec))
    assert "request" not in graph.steps["benchmark.base"].content
