"""Spec files -> resolved `Config` (or diagnostics): imports, variables,
`extends`, overrides, matrix expansion, and every validation, all problems
of all files reported at once.

`resolve_file(path, variables, var_files)` is the entry point.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any, Mapping

import attrs

from specdsl import secrets
from specdsl.diag import Diagnostic, Diagnostics, Span, did_you_mean
from specdsl.model import ast, config
from specdsl.model.printer import number_text
from specdsl.resolve import blocks as blk
from specdsl.resolve.loader import Sources, load_tree, load_var_file
from specdsl.resolve.values import INVALID, BlockRef, OverrideValue, Scope, V, evaluate, type_name
from specdsl.validate import schema
from specdsl.facts import flag_table, pinned_version
from specdsl.validate.asserts import check_assert
from specdsl.validate.engine_args import check_args, check_effective, table_warning
from specdsl.validate.gpus import check_gpus
from specdsl.validate.prefix_cache import check_prefix_cache
from specdsl.validate.cuda_index import check_cuda_index
from specdsl.validate.decidable import check_decidable
from specdsl.validate.promotion import check_promotion
from specdsl.validate.slurm import check_experiments_on_slurm

LOCAL_HOST = config.Host(name="local")
# the stack of an experiment whose server is already running (`url`) and that names none: nothing is provisioned
NO_STACK = config.Stack(name="(none)")
TRACK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
MAX_CELLS = 10_000  # matrix cells of all experiments together: a small file can ask for millions
_BLOCK_ATTRS = ("host", "stack", "server", "workload")


@attrs.frozen
class Resolved:
    config: config.Config | None
    diags: list[Diagnostic]
    sources: Sources

    @property
    def ok(self) -> bool:
        return self.config is not None


def resolve_file(path: Path, variables: dict[str, str] | None = None, var_files: list[Path] | None = None,
                 environ: Mapping[str, str] | None = None) -> Resolved:
    """`environ` (the CLI passes os.environ) gives variables as
    `SPECDSL_VAR_NAME`, below --var-file and -var."""
    diags: list[Diagnostic] = []
    sources = load_tree(Path(path), diags)
    from_files: list[ast.Attribute] = []
    for var_file in var_files or ():
        from_files.extend(load_var_file(Path(var_file), sources, diags))
    resolver = _Resolver(sources, diags)
    cfg = resolver.run(variables or {}, from_files, environ or {})
    # Registered even when the spec is invalid: diagnostics must not show them either.
    secrets.register(resolver.sensitive)
    ordered = Diagnostics(diags).sorted()
    if any(d.severity == "error" for d in ordered):
        cfg = None
    return Resolved(cfg, ordered, sources)


class _Resolver:
    def __init__(self, sources: Sources, diags: list[Diagnostic]) -> None:
        self.sources = sources
        self.diags = diags
        self.memo_raw: dict = {}
        self.memo_typed: dict = {}
        self.cells_left = MAX_CELLS
        self.memo_override: dict = {}  # matrix cells repeat the same overrides: build each once
        self.asserts_checked: set = set()
        self.sensitive: tuple[str, ...] = ()
        # servers whose flags wait for the release their experiments' stacks pin
        self.deferred_args: list = []  # (server, engine, args V)
        self._deferred_index: dict[int, tuple] = {}  # id(server) -> its first entry (_first_deferred)
        self._deferred_indexed = 0
        self.engine_checked: set = set()

    def run(self, given: dict[str, str], from_files: list[ast.Attribute], environ: Mapping[str, str]) -> config.Config | None:
        self.blocks = blk.collect(self.sources.files, self.diags)
        hidden = blk.sensitive_variables(self.blocks["variable"])
        self.vars = blk.variables(self.blocks["variable"], given, from_files, self.diags, environ=environ)
        self.sensitive = tuple(sorted(set(_strings(_plain(v) for k, v in self.vars.items() if k in hidden))))
        secrets.register(self.sensitive)
        self.scope = Scope(variables=self.vars, blocks=self.blocks)
        typed: dict[str, list] = {kind: [] for kind in _BLOCK_ATTRS}
        for kind in _BLOCK_ATTRS:
            for name in self.blocks[kind]:
                obj = self.typed(kind, name)
                if obj is not None:
                    typed[kind].append(obj)
        experiments: list[config.Experiment] = []
        for name in self.blocks["experiment"]:
            experiments.extend(self.experiment(name))
        self.unpinned_engine_checks()
        self.cross_checks(experiments)
        experiments = cache_servers(experiments)
        searches = [e for e in experiments if e.search is not None]
        experiments = [e for e in experiments if e.search is None]
        objects = typed["stack"] + typed["server"] + typed["workload"]
        objects += [x for e in experiments + searches for x in (e.stack, e.server, e.workload)]
        self.sensitive = tuple(sorted(set(self.sensitive) | sensitive_values(objects)))
        return config.Config(
            experiments=tuple(experiments),
            searches=tuple(searches),
            hosts=tuple(typed["host"]),
            stacks=tuple(typed["stack"]),
            servers=tuple(typed["server"]),
            workloads=tuple(typed["workload"]),
            variables=config.pairs({k: _plain(v) for k, v in self.vars.items()}),
            sensitive=self.sensitive,
            sensitive_variables=tuple(sorted(hidden)),
        )

    # ---- named blocks
    def raw(self, kind: str, name: str) -> blk.Raw | None:
        return blk.raw_block(kind, name, self.blocks, self.scope, self.diags, self.memo_raw)

    def typed(self, kind: str, name: str) -> Any:
        key = (kind, name)
        if key not in self.memo_typed:
            raw = self.raw(kind, name)
            self.memo_typed[key] = None if raw is None else blk.build_typed(kind, name, raw, self.scope, self.diags,
                                                                            self.deferred_args)
        return self.memo_typed[key]

    def block_value(self, attr: str, v: V, scope: Scope) -> Any:
        """The object an experiment attribute (`server = ...`) names."""
        value = v.value
        if value is INVALID:
            return None
        if isinstance(value, BlockRef):
            if value.kind != attr:
                self.diags.append(Diagnostic.error(f"`{attr}` must name a {attr}, not a {value.kind}", v.span, f"write `{attr} = {attr}.NAME`"))
                return None
            return self.typed(attr, value.name)
        if isinstance(value, OverrideValue):
            if value.ref.kind != attr:
                self.diags.append(Diagnostic.error(f"`{attr}` must name a {attr}, not a {value.ref.kind}", v.span))
                return None
            key = _frozen((attr, value.ref.name, value.changes, tuple(id(b) for b in value.blocks)))
            if key is not None and key in self.memo_override:
                return self.memo_override[key]
            base = self.raw(attr, value.ref.name)
            if base is None:
                return None
            merged = blk.apply_override(value, base)
            built = blk.build_typed(attr, value.ref.name, merged, scope, self.diags, self.deferred_args)
            if key is not None:
                self.memo_override[key] = built
            return built
        self.diags.append(
            Diagnostic.error(
                f"`{attr}` must be a {attr} reference such as `{attr}.NAME`, not {type_name(value)}",
                v.span,
                f'declare `{attr} "NAME" {{ ... }}` and refer to it as `{attr}.NAME`',
            )
        )
        return None

    # ---- experiments
    def experiment(self, name: str) -> list[config.Experiment]:
        raw = self.raw("experiment", name)
        if raw is None:
            return []
        block = self.blocks["experiment"][name]
        attrs_ = {k: v.value for k, v in raw.values.items()}  # name -> ast.Attribute
        for attr_name, item in attrs_.items():
            if attr_name not in schema.EXPERIMENT_ATTRS:
                hint = did_you_mean(attr_name, schema.EXPERIMENT_ATTRS) or "experiment attributes: " + ", ".join(schema.EXPERIMENT_ATTRS)
                self.diags.append(Diagnostic.error(f"Unknown experiment attribute `{attr_name}`", item.name_span, hint))
        # a server already running (`url`) needs no stack: nothing is provisioned
        missing = [a for a in ("stack", "server", "workload") if a not in attrs_ and not (a == "stack" and self._existing(attrs_))]
        for attr_name in missing:
            self.diags.append(
                Diagnostic.error(
                    f"Experiment `{name}` needs a {attr_name}",
                    block.label_span,
                    f"add `{attr_name} = {attr_name}.NAME`",
                )
            )
        cells = self.matrix_cells(attrs_.get("matrix"))
        if cells is None:
            return []
        search = None
        if "search" in attrs_:
            search = self.search_of(attrs_, raw.asserts)
            if search is None:
                return []
        matrix_keys = tuple(cells[0].keys()) if cells and cells[0] else ()
        baseline = self.baseline_mode(self.baseline(name, attrs_.get("baseline")), attrs_.get("baseline_mode"))
        promote = self.promote(attrs_.get("promote"), bool(matrix_keys))
        if promote is not None:  # a track moves only on a gating assertion
            check_promotion(name, attrs_["promote"].value.span, raw.asserts, self.diags, has_baseline="baseline" in attrs_)
        out = []
        # Each attribute is evaluated once per distinct value of the matrix
        # keys it reads (once in all, for one that reads none), not per cell.
        used = {a: _matrix_refs(attrs_[a].value) for a in _BLOCK_ATTRS if a in attrs_}
        built: dict[tuple, Any] = {}
        asserts = tuple(config.Assertion(a.name, a.expr, a.span) for a in raw.asserts)
        plain_of: dict[int, Any] = {}
        for cell in cells:
            scope = None
            parts = {}
            for attr_name, keys in used.items():
                memo = (attr_name, tuple((k, _cell_value(cell[k].value)) for k in keys if k in cell))
                if memo not in built:
                    if scope is None:
                        scope = Scope(self.vars, self.blocks, matrix=cell if matrix_keys else None, matrix_keys=matrix_keys)
                    item = attrs_[attr_name]
                    built[memo] = self.block_value(attr_name, evaluate(item.value, scope, self.diags), scope)
                parts[attr_name] = built[memo]
            workload = parts.get("workload")
            user_metrics = tuple(m.name for m in workload.metrics) if workload else ()
            for a in raw.asserts:
                # vLLM's own client reports request_goodput under its `--goodput` (the preset reads it)
                has_slo = bool(workload and (getattr(workload, "slo", None) or workload.metrics_preset == "vllm-bench-serve"))
                key = (id(a), user_metrics, matrix_keys, "baseline" in attrs_, has_slo, search.over if search else None)
                if key in self.asserts_checked:
                    continue  # the same in every cell: check once
                self.asserts_checked.add(key)
                check_assert(
                    a,
                    # a `baseline` that failed to resolve is reported already
                    has_baseline="baseline" in attrs_,
                    matrix_keys=matrix_keys,
                    variables=tuple(self.vars),
                    user_metrics=user_metrics,
                    diags=self.diags,
                    has_slo=has_slo or workload is None,
                    search_over=search.over if search else None,
                )
            if parts.get("server") is not None and parts["server"].existing and "stack" not in parts:
                parts["stack"] = NO_STACK
            if parts.get("server") is not None and parts.get("stack") is not None and parts["server"].engine:
                self.engine_checks(parts["server"], parts["stack"], raw.asserts)
            if missing or any(v is None for v in parts.values()):
                continue
            out.append(
                config.Experiment(
                    name=cell_name(name, cell),
                    host=parts.get("host") or LOCAL_HOST,
                    stack=parts["stack"],
                    server=parts["server"],
                    workload=workload,
                    baseline=baseline,
                    asserts=asserts,
                    promote=promote,
                    matrix=tuple((k, plain_of[id(v)] if id(v) in plain_of else plain_of.setdefault(id(v), _plain(v)))
                                 for k, v in cell.items()),
                    group=name,
                    search=search,
                    span=block.span,
                )
            )
        return out

    def _existing(self, attrs_: dict) -> bool:
        """Whether an experiment's `server` names (or overrides) a server
        block with `url`: one already running, that needs no stack."""
        item = attrs_.get("server")
        if item is None:
            return False
        value = item.value
        ref = getattr(value, "ref", value)  # an override: the block it changes
        parts = getattr(ref, "parts", None)
        if not parts or len(parts) != 2 or parts[0] != "server" or parts[1] not in self.blocks.get("server", {}):
            return False  # no such server block: the reference's own error says so
        raw = self.raw("server", parts[1])
        if raw is None:
            return False
        body = getattr(value, "body", ()) or ()
        return "url" in raw.values or any(getattr(i, "name", None) == "url" for i in body)

    def search_of(self, attrs_: dict, asserts) -> config.Search | None:
        """The experiment's `search = { over = "concurrency", from = 1, to = 64 }`
        (`step`: the resolution, default 1), or None after saying why not."""
        item = attrs_["search"]
        span = item.value.span
        example = 'write `search = { over = "concurrency", from = 1, to = 64 }`'
        v = evaluate(item.value, self.scope, self.diags)
        if v.value is INVALID:
            return None
        if not isinstance(v.value, dict):
            self.diags.append(Diagnostic.error("`search` must be a map", span, example))
            return None
        for other in ("matrix", "baseline", "promote"):
            if other in attrs_:
                self.diags.append(Diagnostic.error(f"A search experiment cannot have `{other}`", attrs_[other].name_span,
                                                   "a search probes one experiment at each value of its own workload; "
                                                   "write the matrix, baseline or promotion in another experiment"))
                return None
        from specdsl.model.search import reads_search

        if not [a for a in asserts if not reads_search(a.expr)]:
            self.diags.append(Diagnostic.error("A search needs an assertion to meet", span,
                                               'the answer is the highest value at which every assertion passes: add '
                                               '`assert "slo" { goodput_ratio >= 0.99 }`'))
            return None
        values = v.value
        for key, x in values.items():
            if key not in ("over", "from", "to", "step"):
                hint = did_you_mean(key, ("over", "from", "to", "step")) or "search keys: over, from, to, step"
                self.diags.append(Diagnostic.error(f"Unknown search key `{key}`", x.span, hint))
                return None
        over = values.get("over")
        if over is None or over.value not in ("concurrency", "rate"):
            self.diags.append(Diagnostic.error("`search.over` must be \"concurrency\" or \"rate\"",
                                               over.span if over is not None else span, example))
            return None
        nums = {}
        for key in ("from", "to", "step"):
            x = values.get(key)
            if x is None:
                if key == "step":
                    continue
                self.diags.append(Diagnostic.error(f"`search` needs `{key}`", span, example))
                return None
            number = x.value
            if isinstance(number, bool) or not isinstance(number, (int, float)) or number <= 0:
                self.diags.append(Diagnostic.error(f"`search.{key}` must be a number above 0", x.span, example))
                return None
            if over.value == "concurrency" and number != int(number):
                self.diags.append(Diagnostic.error(f"`search.{key}` must be a whole number: a concurrency is a count of streams",
                                                   x.span, example))
                return None
            nums[key] = float(number)
        if nums["from"] >= nums["to"]:
            self.diags.append(Diagnostic.error("`search.from` must be below `search.to`", values["from"].span,
                                               f"the search looks between them: give `to` above {nums['from']:g}"))
            return None
        return config.Search(over.value, nums["from"], nums["to"], nums.get("step", 1.0), span=span)

    def engine_checks(self, server: config.Server, stack: config.Stack, asserts) -> None:
        """The server's flags and the experiment's `effective.*` against the
        table of the engine release the stack pins (once per server, table
        and assertion), with a warning when that release has no table."""
        choice = flag_table(server.engine, pinned_version(server.engine, stack.packages))
        if choice is None:
            return
        warn_key = ("table", stack.name, stack.span, choice)
        if warn_key not in self.engine_checked:
            self.engine_checked.add(warn_key)
            warning = table_warning(choice, stack.span)
            if warning is not None:
                self.diags.append(warning)
        if (id(server), choice.release) not in self.engine_checked:
            entry = self._first_deferred(server)
            if entry is not None:
                self.engine_checked.add((id(server), choice.release))
                check_args(entry[1], entry[2], self.diags, choice)
        for a in asserts:
            key = (id(a), server.engine, choice.release)
            if key not in self.engine_checked:
                self.engine_checked.add(key)
                check_effective(a.expr, server.engine, choice, self.diags)

    def _first_deferred(self, server: config.Server):
        """The first `deferred_args` entry of `server`, or None: an index
        by server kept up to date with the list (one look-up a server, not
        a scan of every server's entry: a 1,000-cell matrix has 1,000)."""
        for entry in self.deferred_args[self._deferred_indexed:]:
            self._deferred_index.setdefault(id(entry[0]), entry)
        self._deferred_indexed = len(self.deferred_args)
        return self._deferred_index.get(id(server))

    def unpinned_engine_checks(self) -> None:
        """Servers no experiment used: their flags against the default table."""
        checked = {k[0] for k in self.engine_checked if isinstance(k, tuple) and len(k) == 2}
        for server, engine, args in self.deferred_args:
            if id(server) not in checked:
                check_args(engine, args, self.diags)

    def matrix_cells(self, item: ast.Attribute | None) -> list[dict[str, V]] | None:
        if item is None:
            return [{}]
        v = evaluate(item.value, self.scope, self.diags)
        if v.value is INVALID:
            return None
        if not isinstance(v.value, dict) or not v.value:
            self.diags.append(
                Diagnostic.error("`matrix` must be a map of lists", item.value.span, 'write `matrix = { backend = ["triton", "flashinfer"] }`')
            )
            return None
        axes = []
        for key, values in v.value.items():
            if not isinstance(values.value, list) or not values.value:
                self.diags.append(
                    Diagnostic.error(f"`matrix.{key}` must be a non-empty list", values.span, f'write `{key} = ["a", "b"]`')
                )
                return None
            for x in values.value:
                if isinstance(x.value, (list, dict)) or x.value is INVALID or not isinstance(x.value, (str, int, float, bool)):
                    self.diags.append(Diagnostic.error(f"Values of `matrix.{key}` must be strings, numbers or bools", x.span))
                    return None
            names = [_cell_value(x.value) for x in values.value]
            if len(set(names)) != len(names):
                dup = next(n for n in names if names.count(n) > 1)
                self.diags.append(Diagnostic.error(f"`matrix.{key}` lists `{dup}` twice", values.span, "each value makes one cell"))
                return None
            axes.append([(key, x) for x in values.value])
        count = 1
        for axis in axes:
            count *= len(axis)
        if count > self.cells_left:
            self.diags.append(
                Diagnostic.error(
                    f"The matrix expands to {count:,} cells",
                    item.value.span,
                    f"specdsl expands at most {MAX_CELLS:,} matrix cells per spec; split the sweep into smaller matrices or files",
                )
            )
            return None
        self.cells_left -= count
        return [dict(combo) for combo in itertools.product(*axes)]

    def baseline(self, name: str, item: ast.Attribute | None) -> config.BaselineRef | None:
        if item is None:
            return None
        scope = Scope(self.vars, self.blocks, tracks=True)
        v = evaluate(item.value, scope, self.diags)
        value = v.value
        if value is INVALID:
            return None
        if isinstance(value, BlockRef) and value.kind == "experiment":
            if value.name == name:
                self.diags.append(Diagnostic.error("An experiment cannot be its own baseline", v.span))
                return None
            target = self.blocks["experiment"][value.name]
            if target.attr("matrix") is not None:
                self.diags.append(
                    Diagnostic.error(
                        f"Baseline `{value.name}` is a matrix experiment",
                        v.span,
                        "a baseline must be one experiment; declare the cell you compare against as its own experiment",
                    )
                )
                return None
            return config.BaselineRef("experiment", value.name)
        if isinstance(value, BlockRef) and value.kind == "track":
            if not TRACK_NAME.match(value.name):
                self.diags.append(Diagnostic.error(f"`{value.name}` is not a track name", v.span))
                return None
            return config.BaselineRef("track", value.name)
        self.diags.append(
            Diagnostic.error(
                "`baseline` must be an experiment or a track",
                v.span,
                "write `baseline = experiment.NAME` (another experiment of this spec) or `baseline = track.NAME` (the promoted baseline of a track)",
            )
        )
        return None

    def baseline_mode(self, ref: config.BaselineRef | None, item: ast.Attribute | None) -> config.BaselineRef | None:
        """`baseline_mode = "paired" | "recorded"`: how a track's baseline is measured."""
        if item is None or ref is None:
            return ref
        v = evaluate(item.value, self.scope, self.diags)
        if v.value is INVALID:
            return ref
        if v.value not in schema.BASELINE_MODES:
            shown = f'"{v.value}"' if isinstance(v.value, str) else type_name(v.value)
            hint = did_you_mean(str(v.value), schema.BASELINE_MODES) if isinstance(v.value, str) else None
            self.diags.append(Diagnostic.error(
                f"`baseline_mode` is {shown}", v.span,
                (hint + "; " if hint else "") + '`"paired"` (the default: rebuild the track from its stack lock and measure it '
                'beside the candidate) or `"recorded"` (compare with its recorded numbers)'))
            return ref
        if ref.kind != "track":
            self.diags.append(Diagnostic.error(
                "`baseline_mode` applies to a track baseline", v.span,
                "an experiment baseline on this machine is always measured beside its candidate; remove `baseline_mode`"))
            return ref
        return attrs.evolve(ref, mode=v.value)

    def promote(self, item: ast.Attribute | None, is_matrix: bool) -> str | None:
        if item is None:
            return None
        if isinstance(item.value, ast.Ref) and item.value.parts[0] == "track" and len(item.value.parts) == 2:
            self.diags.append(
                Diagnostic.error(
                    "`promote` takes the track name as a string",
                    item.value.span,
                    f'write `promote = "{item.value.parts[1]}"`; `track.NAME` reads a promoted baseline (`baseline = track.NAME`)',
                )
            )
            return None
        v = evaluate(item.value, self.scope, self.diags)
        if v.value is INVALID:
            return None
        if not isinstance(v.value, str) or not TRACK_NAME.match(v.value):
            shown = f'"{v.value}"' if isinstance(v.value, str) else type_name(v.value)
            self.diags.append(
                Diagnostic.error(
                    f"`promote` must be a track name, not {shown}",
                    v.span,
                    'a track name is letters, digits, `.`, `_` and `-`, such as "kimi-prod"',
                )
            )
            return None
        if is_matrix:
            self.diags.append(
                Diagnostic.error(
                    "A matrix experiment cannot promote",
                    v.span,
                    "its cells would compete for one track; promote from a single experiment",
                )
            )
            return None
        return v.value

    def cross_checks(self, experiments: list[config.Experiment]) -> None:
        from specdsl.validate.endpoint import check_existing

        check_existing(experiments, self.diags, self._attr_span)
        check_gpus(experiments, self.diags, lambda exp: self._attr_span(exp.group, "server"))
        check_prefix_cache(experiments, self.diags, self._workload_setting_span, lambda exp: self._attr_span(exp.group, "baseline"))
        check_experiments_on_slurm(experiments, self.diags, lambda exp: self._attr_span(exp.group, "server"))
        check_decidable(experiments, self.diags)
        for stack in {id(e.stack): e.stack for e in experiments}.values():
            check_cuda_index(stack, self._stack_span(stack), self.diags)
        by_group: dict[str, list[config.Experiment]] = {}
        for exp in experiments:
            by_group.setdefault(exp.group, []).append(exp)
        # baseline chains must not loop
        for exp in experiments:
            seen, cur = [exp.group], exp
            while cur is not None and cur.baseline is not None and cur.baseline.kind == "experiment":
                nxt = cur.baseline.name
                if nxt in seen:
                    if nxt == exp.group:
                        span = self._attr_span(exp.group, "baseline")
                        self.diags.append(
                            Diagnostic.error("Baseline cycle", span, " -> ".join(seen + [nxt]) + ": one experiment must measure without a baseline")
                        )
                    break
                seen.append(nxt)
                cands = by_group.get(nxt)
                cur = cands[0] if cands else None
        # comparable numbers: one warning per experiment block, naming the
        # workload fields that differ (a sweep of 1,000 cells gives one line).
        # A baseline measured beside its candidate runs the candidate's
        # workload (graph.build.paired_with): only one measured apart (on
        # another machine) runs its own.
        differing: dict[str, tuple[config.Experiment, list[str], set[str]]] = {}
        compared: dict[tuple[int, int], set[str]] = {}
        for exp in experiments:
            if exp.baseline is None or exp.baseline.kind != "experiment":
                continue
            cands = by_group.get(exp.baseline.name)
            if not cands or cands[0].workload == exp.workload or config.measured_beside(exp, cands[0]):
                continue
            base = cands[0]
            pair = (id(base.workload), id(exp.workload))
            if pair not in compared:  # cells share workload objects: compare each pair once
                compared[pair] = {f.name for f in attrs.fields(config.Workload)
                                  if f.eq and f.name != "name" and getattr(base.workload, f.name) != getattr(exp.workload, f.name)}
            fields = compared[pair]
            entry = differing.setdefault(exp.group, (base, [], set()))
            entry[1].append(exp.name)
            entry[2].update(fields)
        for group, (base, cells, fields) in differing.items():
            who = f"`{cells[0]}`" if len(cells) == 1 else f"{len(cells)} cells of `{group}`"
            self.diags.append(
                Diagnostic.warning(
                    f"Baseline `{base.name}` runs a different workload",
                    self._attr_span(group, "baseline"),
                    f"{who} and the baseline (measured apart, on another machine) differ in "
                    f"{', '.join(sorted(fields)) or 'the workload'}: the numbers are not comparable",
                )
            )

    def _workload_setting_span(self, workload: config.Workload) -> Span | None:
        block = self.blocks["workload"].get(workload.name)
        item = block.attr("prefix_cache") if block else None
        return item.value.span if item else workload.span

    def _stack_span(self, stack) -> Span | None:
        """Where a stack says its `cuda` (else its name)."""
        block = self.blocks["stack"].get(stack.name)
        item = block.attr("cuda") if block else None
        return item.value.span if item else (block.label_span if block else stack.span)

    def _attr_span(self, experiment: str, attr: str) -> Span | None:
        block = self.blocks["experiment"].get(experiment)
        item = block.attr(attr) if block else None
        return item.value.span if item else (block.label_span if block else None)


def cache_servers(experiments: list[config.Experiment]) -> list[config.Experiment]:
    """Each experiment with the server its workload measures: the prefix
    cache turned off by the engine's flag for `prefix_cache = "off"`
    (model.prefix_cache). One new server per server and workload."""
    from specdsl.model.prefix_cache import server_for

    made: dict[tuple[int, int, int], config.Server] = {}
    out = []
    for exp in experiments:
        key = (id(exp.server), id(exp.workload), id(exp.stack))
        if key not in made:
            made[key] = server_for(exp.server, exp.workload, exp.stack)
        out.append(exp if made[key] is exp.server else attrs.evolve(exp, server=made[key]))
    return out


def sensitive_values(objects) -> set[str]:
    """The secrets stacks, servers and workloads hold by the rule of
    specdsl.secrets: values under secret names (env, args, flags of a
    command), URL passwords. Each distinct object is looked at once."""
    out: set[str] = set()
    seen: set[int] = set()
    for obj in objects:
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        env = getattr(obj, "env", ())
        out.update(secrets.mapping_secrets(env))
        out.update(secrets.mapping_secrets(getattr(obj, "args", ())))
        out.update(secrets.argv_secrets(getattr(obj, "command", ())))
        texts = [v for _, v in env] + [v for _, v in getattr(obj, "args", ()) if isinstance(v, str)]
        if getattr(obj, "api_key", None):
            out.add(obj.api_key)  # a key, whatever its name or length
        for name in ("packages", "index", "find_links", "overrides", "model", "ready_url", "dataset", "url"):
            value = getattr(obj, name, None)
            texts.extend(value if isinstance(value, tuple) else [value] if isinstance(value, str) else [])
        for text in texts:
            out.update(secrets.url_secrets(text))
    return out


def _strings(values) -> list[str]:
    """Every string in plain values (lists and maps walked)."""
    out, todo = [], list(values)
    while todo:
        v = todo.pop()
        if isinstance(v, str):
            if v:
                out.append(v)
        elif isinstance(v, dict):
            todo.extend(v.values())
        elif isinstance(v, (list, tuple)):
            todo.extend(v)
    return out


def _frozen(x: Any) -> Any:
    """A hashable key for an evaluated value (spans left out), or None."""
    if isinstance(x, V):
        x = x.value
    if isinstance(x, tuple):
        parts = tuple(_frozen(i) for i in x)
        return None if None in parts else ("t", parts)
    if isinstance(x, list):
        parts = tuple(_frozen(i) for i in x)
        return None if None in parts else ("l", parts)
    if isinstance(x, dict):
        parts = tuple((k, _frozen(v)) for k, v in x.items())
        return None if any(v is None for _, v in parts) else ("d", parts)
    if x is INVALID:
        return None
    if isinstance(x, (str, int, float, bool, BlockRef, ast.Quantity)) or x is None:
        return (type(x).__name__, x)  # 1 and 1.0 and true stay apart
    return None


def _matrix_refs(expr: ast.Expr) -> tuple[str, ...]:
    """The matrix keys an expression reads (`matrix.backend` -> backend)."""
    keys, stack = set(), [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.Ref):
            if e.parts[0] == "matrix":
                keys.add(e.parts[1] if len(e.parts) > 1 else "")
        elif isinstance(e, ast.Override):
            stack.extend(i.value for i in e.body if isinstance(i, ast.Attribute))
            stack.extend(b for b in e.body if isinstance(b, ast.Block))
        elif isinstance(e, ast.Block):
            stack.extend(i.value for i in e.body if isinstance(i, ast.Attribute))
        elif isinstance(e, ast.ListExpr):
            stack.extend(e.items)
        elif isinstance(e, ast.MapExpr):
            stack.extend(i.value for i in e.items)
        elif isinstance(e, ast.BinOp):
            stack.extend((e.left, e.right))
        elif isinstance(e, (ast.Neg, ast.Not)):
            stack.append(e.operand)
        elif isinstance(e, ast.Call):
            stack.extend(e.args)
    return tuple(sorted(keys))


def _cell_value(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, (int, float)):
        return number_text(x)
    return str(x)


def cell_name(name: str, cell: dict[str, V]) -> str:
    if not cell:
        return name
    return name + "[" + ",".join(f"{k}={_cell_value(v.value)}" for k, v in cell.items()) + "]"


def _plain(v: V) -> Any:
    from specdsl.resolve.values import plain

    value = plain(v)
    if isinstance(value, ast.Quantity):
        return f"{number_text(value.value)}{value.unit}"
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, dict):
        return config.pairs(value)
    return value
