"""A workload's `prefix_cache` (specdsl/model/prefix_cache.py,
specdsl/validate/prefix_cache.py): its values, the engine flag `off` adds
to the server in the release's spelling (and to a paired baseline's), its
place in the benchmark's identity, and the located errors."""

from __future__ import annotations

from specdsl.graph.build import build_graph
from specdsl.model import config
from specdsl.model.prefix_cache import cache_setting, off_arg, server_for
from specdsl.resolve.resolver import resolve_file


def resolve(tmp_path, text):
    spec = tmp_path / "p.spec"
    spec.write_text(text)
    return resolve_file(spec)


def spec(prefix_cache: str | None, engine: str = "vllm", packages: str = '"vllm==0.26.0"', args: str = "",
         command: str = "", env: str = "") -> str:
    setting = f"\n  prefix_cache = \"{prefix_cache}\"" if prefix_cache else ""
    return f'''stack "s" {{
  packages = [{packages}]
}}
server "v" {{
  engine = "{engine}"
  model  = "m"{args}{env}
}}
workload "w" {{
  requests = 8{setting}{command}
}}
experiment "e" {{
  stack    = stack.s
  server   = server.v
  workload = workload.w
}}
'''


def errors(resolved):
    return [(d.severity, d.summary, d.span.line, d.span.col) for d in resolved.diags]


def test_off_starts_the_server_without_its_cache_in_the_release_spelling(tmp_path):
    old = resolve(tmp_path, spec("off"))
    assert old.ok, errors(old)
    assert old.config.experiments[0].server.args == (("no-enable-prefix-caching", True),)
    new = resolve(tmp_path, spec("off", packages='"vllm==0.33.0"'))
    assert new.config.experiments[0].server.args == (("disable-prefix-caching", True),)
    sglang = resolve(tmp_path, spec("off", engine="sglang", packages='"sglang==0.5.17"'))
    assert sglang.config.experiments[0].server.args == (("disable-radix-cache", True),)
    # the server's own args already off: nothing added
    own = resolve(tmp_path, spec("off", args="\n  args   = { enable-prefix-caching = false }"))
    assert own.config.experiments[0].server.args == (("enable-prefix-caching", False),)
    for name in ("reset", "warm", None):
        assert resolve(tmp_path, spec(name)).config.experiments[0].server.args == ()


def test_the_setting_is_part_of_the_identity_only_when_written(tmp_path):
    def identities(text):
        graph = build_graph(resolve(tmp_path, text).config, spec_dir=tmp_path)
        return {a.split(".")[0]: s.identity for a, s in graph.steps.items() if a.split(".")[0] in ("launch", "benchmark")}

    unset, reset, warm, off = (identities(spec(m)) for m in (None, "reset", "warm", "off"))
    assert unset["benchmark"] != reset["benchmark"] and reset["benchmark"] != warm["benchmark"]
    assert unset["launch"] == reset["launch"] == warm["launch"] != off["launch"]  # only `off` starts another server


def test_located_errors_and_the_dev_mode_warning(tmp_path):
    bad = resolve(tmp_path, spec("of"))
    [(severity, summary, line, col)] = errors(bad)
    assert (severity, summary, line, col) == ("error", 'Unknown prefix_cache "of"', 10, 18)
    assert bad.diags[0].detail == 'did you mean `off`?'
    command = resolve(tmp_path, spec("off", engine="command", packages="",
                                     args='\n  command = ["srv", "{port}"]'))
    assert errors(command) == [("error", '`prefix_cache = "off"` needs an engine whose prefix cache specdsl can turn off', 11, 18)]
    assert 'say `prefix_cache = "warm"`' in command.diags[0].detail
    on = resolve(tmp_path, spec("off", args="\n  args   = { enable-prefix-caching = true }"))
    assert errors(on) == [("error", '`prefix_cache = "off"` contradicts the args of server `v`', 11, 18)]
    script = resolve(tmp_path, spec("reset", command='\n  command = ["b", "{base_url}"]\n  metric "x" { regex = "x: (.*)" }'))
    assert ('error', '`prefix_cache = "reset"` is for the built-in client', 10, 18) in errors(script)
    dev = resolve(tmp_path, spec("reset"))
    assert errors(dev) == [("warning", "vLLM serves its prefix-cache reset only with VLLM_SERVER_DEV_MODE=1", 10, 18)]
    quiet = resolve(tmp_path, spec("reset", env='\n  env    = { VLLM_SERVER_DEV_MODE = "1" }'))
    assert errors(quiet) == []
    assert errors(resolve(tmp_path, spec(None))) == []  # the default says nothing


PAIRED = '''stack "s" {
  packages = ["vllm==0.26.0"]
}
server "v" {
  engine = "vllm"
  model  = "m"
}
workload "cold" {
  prefix_cache = "off"
}
workload "hot" {
  prefix_cache = "%s"
}
experiment "base" {
  stack    = stack.s
  server   = server.v
  workload = workload.%s
}
experiment "cand" {
  stack    = stack.s
  server   = server.v { args = { block-size = 32 } }
  workload = workload.%s
  baseline = experiment.base
}
'''


def test_a_paired_baseline_runs_the_candidates_setting(tmp_path):
    ok = resolve(tmp_path, PAIRED % ("warm", "hot", "cold"))
    assert ok.ok, errors(ok)
    graph = build_graph(ok.config, spec_dir=tmp_path)
    step = graph.steps["benchmark.cand"]
    assert step.payload["paired"].server.args == (("no-enable-prefix-caching", True),)  # the baseline's arm, off too
    assert step.payload["experiment"].server.args == (("block-size", 32), ("no-enable-prefix-caching", True))
    clash = resolve(tmp_path, PAIRED % ("warm", "cold", "hot"))
    [(severity, summary, line, col)] = [e for e in errors(clash) if e[0] == "error"]
    assert (summary, line, col) == ("Baseline `base` is measured with its prefix cache off", 23, 14)


def test_the_flag_helpers():
    assert off_arg("vllm", "0.26.0") == ("no-enable-prefix-caching", True) and off_arg("transformers") is None
    assert cache_setting("vllm", (("no-enable-prefix-caching", True),), "0.26.0") is False
    assert cache_setting("sglang", (("disable-radix-cache", False),), "0.5.17") is True
    assert cache_setting("vllm", (("max-num-seqs", 8),), "0.26.0") is None
    server = config.Server(name="v", engine="vllm", model="m")
    assert server_for(server, config.Workload(name="w")) is server
