"""Unit tests per language construct: syntax model (parse) and meaning
(resolve). The corpus (test_corpus.py) covers the invalid side."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from specdsl.model import ast
from specdsl.model.build import parse
from specdsl.model.printer import format_file
from specdsl.resolve.resolver import resolve_file
from specdsl.resolve.values import V, merge, plain

PRELUDE = """
stack "s" { python = "3.12" }
server "m" {
  engine = "sglang"
  model  = "m"
}
workload "w" { requests = 4 }
"""


def model(text: str) -> ast.File:
    file, diags = parse(textwrap.dedent(text), "t.spec")
    assert file is not None and not diags, diags
    return file


def value(expr: str) -> ast.Expr:
    return model(f'b "x" {{\n  v = {expr}\n}}\n').statements[0].body[0].value


def resolve(tmp_path: Path, text: str, **kw):
    path = tmp_path / "t.spec"
    path.write_text(textwrap.dedent(text))
    return resolve_file(path, **kw)


def ok(tmp_path: Path, text: str, **kw):
    resolved = resolve(tmp_path, text, **kw)
    assert resolved.ok, [f"{d.span}: {d.summary}" for d in resolved.diags]
    return resolved.config


# ---- syntax


def test_blocks_labels_extends_and_nesting():
    f = model('''
        host "gpu8" { gpus = 8 }
        stack "b" extends stack.a {}
        workload "w" {
          metric "tps" { regex = "(x)" }
        }
    ''')
    host, stack, wl = f.statements
    assert (host.kind, host.label, host.extends) == ("host", "gpu8", None)
    assert host.attr("gpus").value == ast.Number(8)
    assert stack.extends == ast.Ref(("stack", "a")) and stack.body == ()
    assert wl.body[0].kind == "metric" and wl.body[0].label == "tps"


def test_spans_point_at_the_text():
    f = model('host "h" {\n  gpus = 8\n}\n')
    attr = f.statements[0].body[0]
    assert (attr.name_span.line, attr.name_span.col) == (2, 3)
    assert (attr.value.span.line, attr.value.span.col, attr.value.span.end_col) == (2, 10, 11)


@pytest.mark.parametrize(
    "src, expected",
    [
        (r'"plain"', "plain"),
        (r'"a\"b"', 'a"b'),
        (r'"back\\slash"', "back\\slash"),
        (r'"tab\there"', "tab\there"),
        (r'"nl\nx"', "nl\nx"),
        (r'"cr\r"', "cr\r"),
        (r'"sl\/"', "sl/"),
        (r'"nul\0"', "nul\0"),
        (r'"\u00e9t\u00C9"', "étÉ"),
        ('"ünï €"', "ünï €"),
        ('""', ""),
        ('"# not a comment // nor this"', "# not a comment // nor this"),
    ],
)
def test_strings_and_escapes(src, expected):
    assert value(src) == ast.String(expected)


@pytest.mark.parametrize(
    "src, expected",
    [
        ("0", ast.Number(0)),
        ("42", ast.Number(42)),
        ("1.5", ast.Number(1.5)),
        ("1e3", ast.Number(1000.0)),
        ("2.5E-2", ast.Number(0.025)),
        ("-7", ast.Number(-7)),
        ("-0.5", ast.Number(-0.5)),
        ("true", ast.Bool(True)),
        ("false", ast.Bool(False)),
        ("200ms", ast.Quantity(200, "ms")),
        ("30s", ast.Quantity(30, "s")),
        ("20m", ast.Quantity(20, "m")),
        ("1.5h", ast.Quantity(1.5, "h")),
        ("3%", ast.Quantity(3, "%")),
    ],
)
def test_numbers_bools_units(src, expected):
    got = value(src)
    assert got == expected and type(got.value) is type(expected.value)


def test_units_mean_seconds_and_fractions():
    assert value("200ms").seconds() == pytest.approx(0.2)
    assert value("20m").seconds() == 1200 and value("2h").seconds() == 7200
    assert value("3%").fraction() == pytest.approx(0.03)


@pytest.mark.parametrize("src", ["[1, 2, 3]", "[1, 2, 3,]", "[\n  1,\n  2,\n  3,\n]", "[1,\n 2, 3]"])
def test_lists_commas_trailing_comma_lines(src):
    assert value(src).items == (ast.Number(1), ast.Number(2), ast.Number(3))


def test_empty_list_and_map():
    assert value("[]") == ast.ListExpr(()) and value("{}") == ast.MapExpr(())


@pytest.mark.parametrize(
    "src",
    ['{ a = 1, "b c" = 2 }', '{ a = 1, "b c" = 2, }', '{\n  a = 1,\n  "b c" = 2,\n}', '{ a = 1,\n "b c" = 2 }'],
)
def test_maps_commas_quoted_keys_lines(src):
    m = value(src)
    assert [(i.key, i.value) for i in m.items] == [("a", ast.Number(1)), ("b c", ast.Number(2))]


def test_map_keys_with_dashes():
    m = value("{ tp-size = 8, speculative-num-steps = 3 }")
    assert [i.key for i in m.items] == ["tp-size", "speculative-num-steps"]


def test_references_and_overrides():
    assert value("stack.cu128") == ast.Ref(("stack", "cu128"))
    assert value("var.model") == ast.Ref(("var", "model"))
    ov = value('server.kimi { args = { attention-backend = "flashinfer" } }')
    assert isinstance(ov, ast.Override) and ov.ref == ast.Ref(("server", "kimi"))
    assert ov.body[0].name == "args"


def test_dashes_are_part_of_names():
    """`a-b` is one name; `a - b` is a subtraction."""
    assert value("var.n-1") == ast.Ref(("var", "n-1"))
    assert value("var.n - 1") == ast.BinOp("-", ast.Ref(("var", "n")), ast.Number(1))


def _assert_expr(text: str) -> ast.Expr:
    f = model(f'experiment "e" {{\n  assert "a" {{ {text} }}\n}}\n')
    return f.statements[0].body[0].expr


def test_assert_precedence():
    e = _assert_expr("output_throughput >= baseline.output_throughput * 1.03 + 1")
    assert e == ast.BinOp(
        ">=",
        ast.Ref(("output_throughput",)),
        ast.BinOp("+", ast.BinOp("*", ast.Ref(("baseline", "output_throughput")), ast.Number(1.03)), ast.Number(1)),
    )
    e = _assert_expr("not a < 1 and b > 2 or c == 3")
    assert e.op == "or" and e.left.op == "and" and isinstance(e.left.left, ast.Not)
    assert _assert_expr("a - b - c == 0").left == ast.BinOp("-", ast.BinOp("-", ast.Ref(("a",)), ast.Ref(("b",))), ast.Ref(("c",)))
    assert _assert_expr("a / (b * c) != 1").left.right == ast.BinOp("*", ast.Ref(("b",)), ast.Ref(("c",)))
    assert _assert_expr("-x < 0").left == ast.Neg(ast.Ref(("x",)))


@pytest.mark.parametrize("func", ["p50", "p90", "p99", "median", "mean", "min", "max", "stddev"])
def test_assert_calls(func, tmp_path):
    e = _assert_expr(f"{func}(itl) <= {func}(baseline.itl) * 1.10")
    assert e.left == ast.Call(func, (ast.Ref(("itl",)),))
    ok(tmp_path, PRELUDE + f"""
    experiment "b" {{
      stack    = stack.s
      server   = server.m
      workload = workload.w
    }}
    experiment "e" {{
      stack    = stack.s
      server   = server.m
      workload = workload.w
      baseline = experiment.b
      assert "a" {{ {func}(itl) <= {func}(baseline.itl) * 1.10 }}
      assert "c" {{ {func}(itl) <= 40ms and (ttft < 200ms or not (e2el > 5s)) }}
      assert "b" {{ effective.attention_backend == "flashinfer" }}
    }}
    """)


def test_comments_hash_and_slashes_are_kept():
    f = model('''
        # leading hash
        // leading slashes
        host "h" { # trailing on the head
          gpus = 8 // trailing slashes
          # before the close
        }
        # at the end
    ''')
    out = format_file(f)
    for c in ("# leading hash", "// leading slashes", "# trailing on the head", "// trailing slashes", "# before the close", "# at the end"):
        assert c in out
    assert model(out) == f


def test_imports_parse():
    f = model('import "common.spec"\nimport "../x/y.spec"\n')
    assert [s.path for s in f.statements] == ["common.spec", "../x/y.spec"]


def test_layout_is_not_part_of_equality():
    a = model('host "h" { gpus = 8 }\n')
    b = model('# c\nhost "h" {\n\n  gpus   =   8   # c\n}\n')
    assert a == b


# ---- meaning


def test_imports_are_relative_to_the_importing_file(tmp_path):
    (tmp_path / "lib" / "deeper").mkdir(parents=True)
    (tmp_path / "lib" / "common.spec").write_text('import "deeper/more.spec"\nstack "s" { python = "3.12" }\n')
    (tmp_path / "lib" / "deeper" / "more.spec").write_text('import "../common.spec"\nworkload "w" { requests = 1 }\n')
    main = tmp_path / "main.spec"
    main.write_text('import "lib/common.spec"\nimport "lib/deeper/more.spec"\nserver "m" {\n  engine = "vllm"\n  model  = "m"\n}\n'
                    'experiment "e" {\n  stack    = stack.s\n  server   = server.m\n  workload = workload.w\n}\n')
    resolved = resolve_file(main)
    # common <-> more import each other: a cycle, reported once at the import that closes it
    assert [(Path(d.span.file).name, d.span.line, d.summary) for d in resolved.diags] == [("more.spec", 1, "Import cycle")]
    assert len(resolved.sources.files) == 3  # each file read once


def test_import_diamond_is_not_a_cycle(tmp_path):
    (tmp_path / "a.spec").write_text('import "c.spec"\n')
    (tmp_path / "b.spec").write_text('import "c.spec"\n')
    (tmp_path / "c.spec").write_text('stack "s" {}\n')
    (tmp_path / "main.spec").write_text('import "a.spec"\nimport "b.spec"\n')
    resolved = resolve_file(tmp_path / "main.spec")
    assert resolved.ok and len(resolved.config.stacks) == 1


VARS = """
variable "model" { default = "m1" }
variable "n" { default = 4 }
variable "flag" { default = true }
variable "packages" {
  type    = "list"
  default = ["a"]
}
variable "required" { type = "string" }
stack "s" { packages = var.packages }
server "m" {
  engine = "sglang"
  model  = var.model + "-x"
  args   = { tp-size = var.n * 2, enable-torch-compile = var.flag }
}
workload "w" { requests = var.n }
experiment "e" {
  stack    = stack.s
  server   = server.m
  workload = workload.w
}
"""


def test_variables_default_var_and_var_file(tmp_path):
    cfg = ok(tmp_path, VARS, variables={"required": "r"})
    e = cfg.experiment("e")
    assert e.server.model == "m1-x" and dict(e.server.args) == {"tp-size": 8, "enable-torch-compile": True}
    assert e.workload.requests == 4 and e.stack.packages == ("a",)
    assert dict(cfg.variables)["required"] == "r"

    var_file = tmp_path / "vars.spec"
    var_file.write_text('# values for the lab\nmodel = "m2"\nn = 2\nrequired = "from-file"\n')
    cfg = ok(tmp_path, VARS, var_files=[var_file])
    e = cfg.experiment("e")
    assert e.server.model == "m2-x" and e.workload.requests == 2 and dict(cfg.variables)["required"] == "from-file"

    # -var beats --var-file beats the default; -var text is converted to the default's type
    cfg = ok(tmp_path, VARS, variables={"n": "8", "flag": "false", "packages": '["x", "y"]'}, var_files=[var_file])
    e = cfg.experiment("e")
    assert e.workload.requests == 8 and dict(e.server.args)["enable-torch-compile"] is False
    assert e.stack.packages == ("x", "y") and e.server.model == "m2-x"


def test_variable_problems(tmp_path):
    r = resolve(tmp_path, VARS, variables={"nn": "1", "n": "many", "flag": "yes"})
    summaries = [d.summary for d in r.diags]
    assert "Unknown variable `nn` given with -var" in summaries
    assert "-var n=many: expected a number" in summaries
    assert "-var flag=yes: expected true or false" in summaries
    assert "Variable `required` has no value" in summaries
    assert not r.ok


def test_validate_cli_takes_var_and_var_file(tmp_path, capsys):
    from specdsl.cli.main import main

    spec = tmp_path / "t.spec"
    spec.write_text(VARS)
    var_file = tmp_path / "v.spec"
    var_file.write_text("n = 3\n")
    assert main(["validate", str(spec), "-var", "required=x", "--var-file", str(var_file)]) == 0
    assert main(["validate", str(spec)]) == 1
    assert "Variable `required` has no value" in capsys.readouterr().err
    assert main(["validate", str(spec), "-var", "oops"]) == 1


MERGE = PRELUDE + """
stack "base" {
  python   = "3.11"
  packages = ["torch==2.8.0", "sglang==0.5.6"]
  env      = { CUDA_HOME = "/usr/local/cuda-12.8", KEEP = "1" }
}
stack "child" extends stack.base {
  packages = ["torch==2.9.1"]
  env      = { CUDA_HOME = "/usr/local/cuda-13.0", NEW = "2" }
}
server "kimi" {
  engine = "sglang"
  model  = "m"
  args   = { tp-size = 8, speculative-algorithm = "EAGLE3", json-model-override-args = "{}" }
}
server "kimi2" extends server.kimi {
  args = { tp-size = 4 }
}
experiment "e" {
  stack    = stack.child {
    env    = { NEW = "3" }
    python = "3.12"
  }
  server   = server.kimi2 { args = { attention-backend = "flashinfer" } port = 9000 }
  workload = workload.w { requests = 16 }
}
"""


def test_extends_and_override_merge_maps_key_by_key(tmp_path):
    cfg = ok(tmp_path, MERGE)
    child = next(s for s in cfg.stacks if s.name == "child")
    assert child.python == "3.11"  # inherited
    assert child.packages == ("torch==2.9.1",)  # a list replaces
    assert dict(child.env) == {"CUDA_HOME": "/usr/local/cuda-13.0", "KEEP": "1", "NEW": "2"}  # a map merges
    e = cfg.experiment("e")
    assert e.stack.python == "3.12" and dict(e.stack.env) == {"CUDA_HOME": "/usr/local/cuda-13.0", "KEEP": "1", "NEW": "3"}
    assert e.server.args == (
        ("tp-size", 4),
        ("speculative-algorithm", "EAGLE3"),
        ("json-model-override-args", "{}"),
        ("attention-backend", "flashinfer"),
    )  # argv order: inherited keys first, in the order written
    assert e.server.port == 9000 and e.workload.requests == 16
    kimi = next(s for s in cfg.servers if s.name == "kimi")
    assert dict(kimi.args)["tp-size"] == 8  # the parent is unchanged


def test_merge_rules_on_values():
    def v(x):
        if isinstance(x, dict):
            return V({k: v(y) for k, y in x.items()})
        if isinstance(x, list):
            return V([v(y) for y in x])
        return V(x)

    base = v({"a": {"x": 1, "y": [1, 2]}, "b": 1, "l": [1, 2, 3]})
    change = v({"a": {"y": [3], "z": 2}, "l": [9]})
    assert plain(merge(base, change)) == {"a": {"x": 1, "y": [3], "z": 2}, "b": 1, "l": [9]}
    assert plain(merge(v(1), v({"k": 1}))) == {"k": 1}  # a scalar is replaced
    assert plain(merge(v({"k": 1}), v("s"))) == "s"


MATRIX = PRELUDE + """
experiment "backends" {
  matrix   = { backend = ["triton", "flashinfer", "fa3"] }
  stack    = stack.s
  server   = server.m { args = { attention-backend = matrix.backend } }
  workload = workload.w
  assert "b" { effective.attention_backend == matrix.backend }
}
experiment "grid" {
  matrix   = { backend = ["triton", "flashinfer"], c = [1, 8, 64], fast = [true, false] }
  stack    = stack.s
  server   = server.m { args = { attention-backend = matrix.backend } }
  workload = workload.w {
    concurrency = matrix.c
    ignore_eos  = matrix.fast
  }
}
"""


def test_matrix_cells_are_named_and_substituted(tmp_path):
    cfg = ok(tmp_path, MATRIX)
    names = [e.name for e in cfg.experiments]
    assert names[:3] == ["backends[backend=triton]", "backends[backend=flashinfer]", "backends[backend=fa3]"]
    cell = cfg.experiment("backends[backend=flashinfer]")
    assert dict(cell.server.args)["attention-backend"] == "flashinfer"
    assert cell.group == "backends" and cell.matrix == (("backend", "flashinfer"),)


def test_matrix_is_a_cartesian_product_in_written_order(tmp_path):
    cfg = ok(tmp_path, MATRIX)
    grid = [e for e in cfg.experiments if e.group == "grid"]
    assert len(grid) == 2 * 3 * 2
    assert [e.name for e in grid[:3]] == [
        "grid[backend=triton,c=1,fast=true]",
        "grid[backend=triton,c=1,fast=false]",
        "grid[backend=triton,c=8,fast=true]",
    ]
    assert grid[-1].name == "grid[backend=flashinfer,c=64,fast=false]"
    last = grid[-1]
    assert last.workload.concurrency == 64 and last.workload.ignore_eos is False
    assert len({e.name for e in grid}) == len(grid)


def test_baseline_and_promote(tmp_path):
    cfg = ok(tmp_path, PRELUDE + """
    experiment "b" {
      stack    = stack.s
      server   = server.m
      workload = workload.w
    }
    experiment "c" {
      stack    = stack.s
      server   = server.m { args = { attention-backend = "flashinfer" } }
      workload = workload.w
      baseline = experiment.b
      promote  = "kimi-prod"
      assert "faster" { output_throughput >= baseline.output_throughput * 1.03 }
    }
    experiment "t" {
      stack    = stack.s
      server   = server.m
      workload = workload.w
      baseline = track.kimi-prod
    }
    """)
    c, t = cfg.experiment("c"), cfg.experiment("t")
    assert (c.baseline.kind, c.baseline.name, c.promote) == ("experiment", "b", "kimi-prod")
    assert (t.baseline.kind, t.baseline.name) == ("track", "kimi-prod")
    assert [a.name for a in c.asserts] == ["faster"]


def test_durations_become_seconds(tmp_path):
    cfg = ok(tmp_path, PRELUDE + """
    server "t" {
      engine        = "sglang"
      model         = "m"
      ready_timeout = 20m
    }
    workload "d" {
      timeout  = 1.5h
      cooldown = 200ms
    }
    """)
    assert next(s for s in cfg.servers if s.name == "t").ready_timeout == 1200
    d = next(w for w in cfg.workloads if w.name == "d")
    assert d.timeout == 5400 and d.cooldown == pytest.approx(0.2)


def test_max_failed_is_a_count_or_a_fraction(tmp_path):
    cfg = ok(tmp_path, PRELUDE + """
    workload "none" {}
    workload "count" {
      max_failed = 3
    }
    workload "percent" {
      max_failed = 1%
    }
    workload "fraction" {
      max_failed = 0.25
    }
    """)
    got = {w.name: (w.max_failed, w.max_failed_fraction) for w in cfg.workloads}
    assert got["none"] == (None, None) and got["count"] == (3, None)
    assert got["percent"] == (None, pytest.approx(0.01)) and got["fraction"] == (None, 0.25)


def test_diagnostics_render_format(tmp_path, capsys):
    from specdsl.cli.main import main

    path = tmp_path / "t.spec"
    path.write_text('workload "w" {\n  output_lenn = 5\n}\n')
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0].endswith("t.spec:2:3: error: Unknown workload attribute `output_lenn`")
    assert lines[1] == "   2 |   output_lenn = 5"
    assert lines[2] == "     |   ^^^^^^^^^^^"
    assert lines[3] == "  = hint: did you mean `output_len`?"


def test_validate_json(tmp_path, capsys):
    import json

    from specdsl.cli.main import main

    path = tmp_path / "t.spec"
    path.write_text('workload "w" {\n  runs = 0\n}\n')
    assert main(["validate", "--json", str(path)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["valid"] is False and doc["format_version"] == 1
    [d] = doc["files"][0]["diagnostics"]
    assert d["summary"] == "`runs` must be >= 1, not 0" and d["range"]["line"] == 2 and d["range"]["col"] == 10


DURATION_VARS = """
variable "wait" { default = 8s }
variable "tol" { default = 1% }
host "h" {}
stack "s" { packages = ["x==1"] }
server "m" {
  engine = "vllm"
  model = "m"
}
workload "w" {
  warmup_time = var.wait
  warmup_tolerance = var.tol
}
experiment "e" {
  host = host.h
  stack = stack.s
  server = server.m
  workload = workload.w
}
"""


def test_var_of_a_duration_or_percentage_default_reads_the_same_kind(tmp_path):
    cfg = ok(tmp_path, DURATION_VARS, variables={"wait": "90s", "tol": "3%"})
    w = cfg.experiment("e").workload
    assert w.warmup_time == 90.0 and abs(w.warmup_tolerance - 0.03) < 1e-12
    r = resolve(tmp_path, DURATION_VARS, variables={"wait": "90", "tol": "3s"})
    summaries = [d.summary for d in r.diags]
    assert "-var wait=90: expected a duration such as 30s or 2m" in summaries
    assert "-var tol=3s: expected a percentage such as 5%" in summaries
