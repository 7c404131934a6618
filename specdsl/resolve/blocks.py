"""Named blocks: collection (unknown kinds, missing names, duplicates),
variables (defaults, `-var`, `--var-file`), `extends` chains (merged
parent-first, cycles reported), and the typed build of hosts, stacks,
servers and workloads from their merged attributes.
"""

from __future__ import annotations

from typing import Any, Mapping

import attrs

from specdsl import secrets
from specdsl.diag import Diagnostic, Span, did_you_mean
from specdsl.model import ast
from specdsl.resolve.values import BLOCK_KINDS, INVALID, BlockRef, OverrideValue, Scope, V, evaluate, merge
from specdsl.validate import schema
from specdsl.validate.engine_args import check_args


@attrs.define
class Raw:
    """A block's attributes after `extends`: name -> V, where each name was
    written, nested blocks, and assertions (experiments)."""

    values: dict[str, V]
    names: dict[str, Span | None]
    nested: list[ast.Block]
    asserts: list[ast.Assert]
    span: Span | None


def collect(files: list[ast.File], diags: list[Diagnostic]) -> dict[str, dict[str, ast.Block]]:
    blocks: dict[str, dict[str, ast.Block]] = {kind: {} for kind in BLOCK_KINDS}
    for file in files:
        for stmt in file.statements:
            if not isinstance(stmt, ast.Block):
                continue
            if stmt.kind not in blocks:
                hint = did_you_mean(stmt.kind, BLOCK_KINDS) or "block types: " + ", ".join(BLOCK_KINDS)
                diags.append(Diagnostic.error(f"Unknown block type `{stmt.kind}`", stmt.kind_span, hint))
                continue
            if stmt.label is None:
                diags.append(Diagnostic.error(f"A {stmt.kind} block needs a name", stmt.kind_span, f'write `{stmt.kind} "NAME" {{ ... }}`'))
                continue
            if not stmt.label:
                diags.append(Diagnostic.error(f"A {stmt.kind} name cannot be empty", stmt.label_span))
                continue
            prior = blocks[stmt.kind].get(stmt.label)
            if prior is not None:
                diags.append(
                    Diagnostic.error(
                        f"Duplicate {stmt.kind} `{stmt.label}`",
                        stmt.label_span,
                        f"first declared at {prior.label_span}; names must be unique per block type",
                    )
                )
                continue
            if stmt.extends is not None and stmt.kind == "variable":
                diags.append(Diagnostic.error("A variable cannot extend anything", stmt.extends.span))
            blocks[stmt.kind][stmt.label] = stmt
    return blocks


ENV_PREFIX = "SPECDSL_VAR_"


def sensitive_variables(blocks: dict[str, ast.Block]) -> set[str]:
    """The variables declared `sensitive = true`, and those whose name says
    they hold a secret (`hf_token`: specdsl.secrets) unless declared
    `sensitive = false`."""
    out = set()
    for name, block in blocks.items():
        attr = block.attr("sensitive")
        declared = attr.value.value if attr is not None and isinstance(attr.value, ast.Bool) else None
        if declared or (declared is None and secrets.is_sensitive_name(name)):
            out.add(name)
    return out


def variables(
    blocks: dict[str, ast.Block],
    given: dict[str, str],
    from_files: list[ast.Attribute],
    diags: list[Diagnostic],
    environ: Mapping[str, str] | None = None,
) -> dict[str, V]:
    """Each variable's value: -var beats --var-file beats the environment
    (`SPECDSL_VAR_NAME`) beats the default."""
    hidden = sensitive_variables(blocks)
    empty = Scope(variables={}, blocks={})
    out: dict[str, V] = {}
    decl_types: dict[str, str | None] = {}
    for name, block in blocks.items():
        values: dict[str, V] = {}
        for item in block.body:
            if isinstance(item, ast.Attribute):
                values[item.name] = evaluate(item.value, empty, diags)
            else:
                diags.append(Diagnostic.error("A variable holds only attributes", item.span))
        names = {i.name: i.name_span for i in block.body if isinstance(i, ast.Attribute)}
        checked = schema.check_attrs("variable", values, names, block.span, diags) or {}
        decl_types[name] = checked.get("type")
        if "default" in values and values["default"].value is not INVALID:
            out[name] = values["default"]
    for name in blocks:
        raw = (environ or {}).get(ENV_PREFIX + name)
        if raw is not None:
            value = _coerce(name, raw, decl_types.get(name), out.get(name), diags, f"{ENV_PREFIX}{name}", name in hidden)
            if value is not INVALID:
                out[name] = V(value, None)
    for attr in from_files:
        if attr.name not in blocks:
            diags.append(Diagnostic.error(f"Unknown variable `{attr.name}`", attr.name_span, did_you_mean(attr.name, blocks)))
            continue
        value = evaluate(attr.value, empty, diags)
        if value.value is not INVALID:
            out[attr.name] = value
    for name, raw in given.items():
        if name not in blocks:
            hint = did_you_mean(name, blocks) or ("declared variables: " + ", ".join(sorted(blocks)) if blocks else "this spec declares no variables")
            diags.append(Diagnostic.error(f"Unknown variable `{name}` given with -var", None, hint))
            continue
        value = _coerce(name, raw, decl_types.get(name), out.get(name), diags, f"-var {name}", name in hidden)
        if value is not INVALID:
            out[name] = V(value, None)
    for name, block in blocks.items():
        if name not in out:
            diags.append(
                Diagnostic.error(
                    f"Variable `{name}` has no value",
                    block.label_span,
                    f"give it a default, or pass `-var {name}=VALUE`, a --var-file, or set {ENV_PREFIX}{name} "
                    "in the environment" + (" (how a saved plan gets a sensitive variable: the plan does not keep it)"
                                            if name in hidden else ""),
                )
            )
    return out


def _coerce(name: str, raw: str, decl: str | None, prior: V | None, diags, source: str = "", hidden: bool = False) -> Any:
    """A variable's value given as text (`-var`, the environment) as its type.
    The text of a sensitive variable is never echoed in an error."""
    source = source or f"-var {name}"
    shown = f"{source}=(sensitive)" if hidden else f"{source}={raw}"
    like = prior.value if prior is not None else None
    want = decl or ("bool" if isinstance(like, bool) else "number" if isinstance(like, (int, float)) else "string")
    if want == "bool":
        if raw in ("true", "false"):
            return raw == "true"
        diags.append(Diagnostic.error(f"{shown}: expected true or false", None))
        return INVALID
    if want == "number":
        for conv in (int, float):
            try:
                return conv(raw)
            except ValueError:
                pass
        diags.append(Diagnostic.error(f"{shown}: expected a number", None))
        return INVALID
    if isinstance(like, ast.Quantity):  # a duration or a percentage default: the same kind, in spec syntax
        kind = "a percentage such as 5%" if like.unit == "%" else "a duration such as 30s or 2m"
        got = _spec_value(name, raw)
        if isinstance(got, ast.Quantity) and (got.unit == "%") == (like.unit == "%"):
            return got
        diags.append(Diagnostic.error(f"{shown}: expected {kind}", None))
        return INVALID
    if want in ("list", "map"):
        from specdsl.model.build import parse

        file, errors = parse(f"v = {raw}\n", f"-var {name}", start="varfile")
        if hidden and errors:
            errors = [Diagnostic.error(f"{shown}: not a valid {want}", None, "write it in spec syntax, e.g. [\"a\", \"b\"]")]
        diags.extend(errors)
        if file is None or not file.statements:
            return INVALID
        value = evaluate(file.statements[0].value, Scope(variables={}, blocks={}), diags)
        return value.value
    return raw


def _spec_value(name: str, raw: str) -> Any:
    """`raw` read as one spec value (None when it is not one)."""
    from specdsl.model.build import parse

    file, errors = parse(f"v = {raw}\n", f"-var {name}", start="varfile")
    if errors or file is None or not file.statements:
        return None
    return evaluate(file.statements[0].value, Scope(variables={}, blocks={}), []).value


def raw_block(kind: str, name: str, blocks, scope: Scope, diags, memo: dict) -> Raw | None:
    """Attributes of a block with its `extends` chain merged (parent first).

    The chain is walked without recursion, so a 5,000-long chain of
    `extends` is no problem; each block is evaluated once (memo)."""
    key = (kind, name)
    if key in memo:
        return memo[key]
    path = [name]  # this block, its parent, its grandparent, ...
    parent_raw = None
    while True:
        block = blocks[kind][path[-1]]
        if block.extends is None:
            break
        ref = block.extends
        target = evaluate(ref, scope, diags).value
        if not isinstance(target, BlockRef):
            break  # reported by evaluate
        if target.kind != kind:
            diags.append(Diagnostic.error(f"A {kind} can only extend a {kind}, not a {target.kind}", ref.span, f"write `extends {kind}.NAME`"))
            break
        if target.name in path:
            loop = path[path.index(target.name):] + [target.name]
            cycle = " -> ".join(f"{kind}.{n}" for n in loop)
            diags.append(Diagnostic.error("`extends` cycle", ref.span, f"{cycle}: a block cannot extend itself"))
            break
        if (kind, target.name) in memo:
            parent_raw = memo[(kind, target.name)]
            break
        path.append(target.name)
    for n in reversed(path):
        parent_raw = memo[(kind, n)] = _own_attrs(kind, blocks[kind][n], parent_raw, scope, diags)
    return memo[key]


def _own_attrs(kind: str, block: ast.Block, parent_raw: Raw | None, scope: Scope, diags) -> Raw:
    """A block's own body merged over its parent's attributes."""
    raw = Raw({}, {}, [], [], block.span)
    if parent_raw is not None:
        raw.values.update(parent_raw.values)
        raw.names.update(parent_raw.names)
        raw.nested.extend(parent_raw.nested)
        raw.asserts.extend(parent_raw.asserts)
    seen: set[str] = set()
    seen_asserts: set[str] = set()
    for item in block.body:
        if isinstance(item, ast.Attribute):
            if item.name in seen:
                diags.append(Diagnostic.error(f"Duplicate attribute `{item.name}`", item.name_span, "set each attribute once"))
                continue
            seen.add(item.name)
            value = evaluate(item.value, scope, diags) if kind != "experiment" else V(item, item.span)
            if kind != "experiment" and item.name in raw.values:
                value = merge(raw.values[item.name], value)
            raw.values[item.name] = value
            raw.names[item.name] = item.name_span
        elif isinstance(item, ast.Assert):
            if kind != "experiment":
                diags.append(Diagnostic.error(f"`assert` belongs in an experiment, not a {kind}", item.span))
                continue
            if item.name in seen_asserts:
                diags.append(Diagnostic.error(f"Duplicate assertion `{item.name}`", item.span, "give each assertion its own name"))
                continue
            seen_asserts.add(item.name)
            raw.asserts = [a for a in raw.asserts if a.name != item.name] + [item]
        else:
            allowed = schema.NESTED.get(kind, ())
            if item.kind not in allowed:
                hint = f"a {kind} may contain: " + ", ".join(f"`{a}` blocks" for a in allowed) if allowed else f"a {kind} holds only attributes"
                diags.append(Diagnostic.error(f"Unknown block type `{item.kind}` in {kind}", item.kind_span, hint))
                continue
            raw.nested = [b for b in raw.nested if b.label != item.label] + [item]
    return raw


def build_typed(kind: str, name: str, raw: Raw, scope: Scope, diags, deferred_args: list | None = None) -> Any:
    """A host/stack/server/workload config object from merged attributes,
    or None when something was wrong (already reported). A server's flags
    are checked against its engine's default table, or, given
    `deferred_args`, left to the caller (which knows the release the
    experiment's stack pins): (server, engine, args) is appended there."""
    values = schema.check_attrs(kind, raw.values, raw.names, raw.span, diags)
    engine_args = None
    if kind == "server" and "engine" in raw.values and isinstance(raw.values["engine"].value, str):
        engine_args = (raw.values["engine"].value, raw.values.get("args"))
        if deferred_args is None:
            check_args(*engine_args, diags)
    metrics = []
    nested_ok = True
    for block in raw.nested:
        metric_values = {}
        for item in block.body:
            if isinstance(item, ast.Attribute):
                metric_values[item.name] = evaluate(item.value, scope, diags)
        names = {i.name: i.name_span for i in block.body if isinstance(i, ast.Attribute)}
        checked = schema.check_attrs("metric", metric_values, names, block.span, diags)
        if checked is not None:
            rule = schema.build_metric(block, checked, diags)
            if rule is not None:
                metrics.append(rule)
                continue
        nested_ok = False  # reported; checks that count metrics would only repeat it
    if values is None or not nested_ok:
        if engine_args is not None and deferred_args is not None:
            check_args(*engine_args, diags)  # no server to check later: against the default table now
        return None
    if kind == "host":
        return schema.build_host(name, values, raw.span)
    if kind == "stack":
        return schema.build_stack(name, values, raw.span)
    if kind == "server":
        server = schema.build_server(name, values, raw.span, raw.names, diags)
        if engine_args is not None and deferred_args is not None:
            if server is None:
                check_args(*engine_args, diags)
            else:
                deferred_args.append((server, *engine_args))
        return server
    command = raw.values.get("command")
    command_spans = tuple(item.span for item in command.value) if command is not None and isinstance(command.value, list) else ()
    return schema.build_workload(name, values, raw.span, tuple(metrics), raw.names, diags, command_spans)


def apply_override(override: OverrideValue, base: Raw) -> Raw:
    """A block's attributes with an override's changes merged in."""
    values = dict(base.values)
    names = dict(base.names)
    for attr, value in override.changes.items():
        values[attr] = merge(values[attr], value) if attr in values else value
        names[attr] = value.span
    nested = list(base.nested)
    for block in override.blocks:
        nested = [b for b in nested if b.label != block.label] + [block]
    return Raw(values, names, nested, [], base.span)


