"""Read an engine release's command-line flags from its own release package
into a specdsl/facts flag table (TSV).

    python tools/read_engine_flags.py sglang sglang-0.5.17-py3-none-any.whl OUT.tsv
    python tools/read_engine_flags.py vllm installed:vllm-0.26.0-cp38-abi3-manylinux_2_28_x86_64.whl:SHA256 OUT.tsv
    python tools/read_engine_flags.py sglang sglang-0.5.17-...whl OUT.tsv transformers-5.12.1-py3-none-any.whl

Further wheels (the release's pinned transformers, say) go first on sys.path.

The wheel is unpacked and the engine's own parser is built from it (SGLang:
`ServerArgs.add_cli_args` in sglang/srt/server_args.py; vLLM:
`make_arg_parser` of its OpenAI server over `EngineArgs.add_cli_args`), so
every flag, alias, default and choice is the release's, not a re-reading.
The parser needs only Python modules at import time: whatever the running
interpreter lacks (CUDA kernels, triton, ...) is replaced by an inert stand-in,
and every value read through a stand-in is reported on stderr (the table
must not depend on one; none did for the tables in specdsl/facts). Value
ranges: vLLM's config fields carry them as pydantic constraints (`gt`, `ge`,
`lt`, `le`), read from the config classes; SGLang checks ranges in code,
listed by hand in specdsl/facts/engine-ranges.tsv with file and line.

Run in an environment with torch (any CPU build), transformers and pydantic
(see docs/engines.md, "Flag tables per release"). Maintainer tool: not part
of the package.
"""

from __future__ import annotations

import argparse
import enum
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import sys
import tempfile
import types
import zipfile
from pathlib import Path

STUBBED: set[str] = set()
# optional extras other libraries probe for (transformers looks them up with
# importlib and then reads their metadata): never stand in for these
NEVER_STUB = {"torchcodec", "torchaudio", "av", "decord", "librosa", "cv2", "timm", "PIL", "soundfile"}


class _Anything:
    """An inert value: every attribute, call, item and base class is another."""

    def __init__(self, name="stub"):
        self._name = name

    def __getattr__(self, item):
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        return _Anything(f"{self._name}.{item}")

    def __call__(self, *a, **k):
        if len(a) == 1 and callable(a[0]) and not k:
            return a[0]  # used as a decorator
        return _Anything(f"{self._name}()")

    def __getitem__(self, item):
        return _Anything(f"{self._name}[]")

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __mro_entries__(self, bases):
        return (object,)

    def __or__(self, other):
        return self

    __ror__ = __or__

    def __repr__(self):
        return f"<stub {self._name}>"


class _StubModule(types.ModuleType):
    def __getattr__(self, item):
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        return _Anything(f"{self.__name__}.{item}")


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path: a module nothing else finds becomes a stub."""

    def __init__(self, own: str):
        self.own = own

    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top == self.own or top in sys.stdlib_module_names or top.startswith("_") or top in NEVER_STUB:
            return None  # the engine's own modules and the standard library must be real
        if "." in name and top not in STUBBED:
            return None  # a submodule of a real package: its own ImportError stands
        if "." not in name and not self._from_engine():
            return None  # an optional import of another library: its own ImportError stands
        STUBBED.add(name)
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def _from_engine(self) -> bool:
        frame = sys._getframe(2)
        while frame is not None:
            module = frame.f_globals.get("__name__", "")
            if not module.startswith(("importlib", "_frozen_importlib")) and module != __name__:
                return module.split(".")[0] == self.own
            frame = frame.f_back
        return False

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def _typ(action: argparse.Action) -> str:
    if isinstance(action, argparse.BooleanOptionalAction) or (
        len([s for s in action.option_strings if s.startswith("--")]) > 1 and action.nargs == 0 and "no-" in " ".join(action.option_strings)
    ):
        return "bool(paired: 1st alias sets True, last alias sets False)"
    if isinstance(action, (argparse._StoreTrueAction,)):
        return "bool(store_true)"
    if isinstance(action, (argparse._StoreFalseAction,)):
        return "bool(store_false)"
    if action.nargs == 0:
        return "bool(store_true)"
    out = "str" if action.type is None else _type_name(action.type)
    if action.nargs not in (None, 0, 1):
        out += f" nargs={action.nargs}"
    return out


def _type_name(t) -> str:
    """The name of an argparse `type` callable as the flag tables write it.
    vLLM wraps its types in closures (`optional_type(int)` is a function
    `_optional_type` holding `return_type`): named by what they hold."""
    name = getattr(t, "__name__", None) or type(t).__name__
    cells = dict(zip(getattr(getattr(t, "__code__", None), "co_freevars", ()), t.__closure__ or ())) \
        if getattr(t, "__closure__", None) else {}
    inner = cells.get("return_type")
    if name in ("_optional_type", "_parse_type") and inner is not None:
        held = _type_name(inner.cell_contents)
        return f"optional[{held}]" if name == "_optional_type" else held
    if name == "parse_dataclass":
        return "json(config object)"
    if name == "union_dict_and_str":
        return "json-or-str"
    if name in ("<lambda>", "partial"):
        return "str"
    if "json" in name.lower() or name == "loads":
        return "json"
    if "human_readable" in name:
        return "int(human-readable)"
    return name


def _cell(value) -> str:
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    text = str(value)
    return text.replace("\t", " ").replace("\n", " ")


def _rows(parser: argparse.ArgumentParser) -> list[list[str]]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if not action.option_strings:
            rows.append([f"{action.dest} (positional)", action.dest, "str (positional)", _cell(action.default), ""])
            continue
        longs = [s for s in action.option_strings if s.startswith("--")]
        shorts = [s for s in action.option_strings if not s.startswith("--")]
        flags = ",".join(longs + shorts)
        choices = "|".join(_cell(c) for c in action.choices) if action.choices else ""
        rows.append([flags, action.dest, _typ(action), _cell(action.default), choices])
    return rows


def _vllm_ranges(vllm) -> dict[str, str]:
    """dest -> "gt=0,le=1" from the pydantic constraints of vLLM's config dataclasses."""
    out: dict[str, str] = {}
    import vllm.config as cfg

    for name in dir(cfg):
        cls = getattr(cfg, name)
        fields = getattr(cls, "__pydantic_fields__", None)
        if not isinstance(cls, type) or not fields:
            continue
        for field, info in fields.items():
            bounds = []
            for meta in getattr(info, "metadata", ()):
                for key in ("gt", "ge", "lt", "le"):
                    value = getattr(meta, key, None)
                    if value is not None:
                        bounds.append(f"{key}={value}")
            if bounds:
                out.setdefault(field, ",".join(bounds))
    return out


def read(engine: str, wheel: Path, out: Path, extra: list[Path] = ()) -> None:
    """`wheel` may be `installed:NAME:SHA256`: the release as installed from
    that wheel on this interpreter's path (a carried site tree on a GPU host,
    where every dependency is real and nothing needs a stand-in)."""
    if str(wheel).startswith("installed:"):
        _, name, digest = str(wheel).split(":")
        wheel = Path(name)
        extra = list(extra)
    else:
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    for w in [wheel, *extra] if wheel.exists() else extra:
        tmp = Path(tempfile.mkdtemp(prefix="flags-"))
        with zipfile.ZipFile(w) as z:  # Python and data files: compiled kernels are never loaded here
            z.extractall(tmp, [n for n in z.namelist() if w is not wheel or not n.endswith((".so", ".cubin", ".a"))])
        sys.path.insert(0, str(tmp))
    # transformers probes optional packages once, when its auto classes
    # load: let it do so before any stand-in exists
    import transformers
    from transformers import AutoConfig, AutoImageProcessor, AutoProcessor, AutoTokenizer  # noqa: F401

    sys.meta_path.append(_StubFinder(engine))
    ranges: dict[str, str] = {}
    if engine == "sglang":
        from sglang.srt.server_args import ServerArgs
        from sglang.version import __version__ as version

        parser = argparse.ArgumentParser()
        ServerArgs.add_cli_args(parser)
        where = "python/sglang/srt/server_args.py (ServerArgs.add_cli_args)"
    elif engine == "vllm":
        import vllm
        import vllm.platforms as platforms
        from vllm.platforms.interface import UnspecifiedPlatform

        # no GPU here: the parser must not depend on one (the CLI defaults are the classes')
        platforms._current_platform = UnspecifiedPlatform()
        if not platforms._current_platform.device_type:
            # from 0.26 on the parser builds VllmConfig's default sub-configs,
            # and DeviceConfig's ("auto") asks the platform for its device
            # type: a GPU build's is "cuda" (the CLI defaults do not read it)
            platforms._current_platform.device_type = "cuda"

        version = importlib.metadata.version("vllm") if False else vllm.__version__
        # the serve parser's module moved between releases
        for module in ("vllm.entrypoints.openai.cli_args", "vllm.entrypoints.launchers.cli_args",
                       "vllm.entrypoints.common.cli_args"):
            try:
                make_arg_parser = importlib.import_module(module).make_arg_parser
                break
            except ModuleNotFoundError:
                continue
        else:
            raise SystemExit("no make_arg_parser in this vLLM release")

        try:
            from vllm.utils.argparse_utils import FlexibleArgumentParser
        except ImportError:
            from vllm.utils import FlexibleArgumentParser
        parser = make_arg_parser(FlexibleArgumentParser())
        where = f"{module.replace('.', '/')}.py make_arg_parser + vllm/engine/arg_utils.py (Async)EngineArgs.add_cli_args"
        ranges = _vllm_ranges(vllm)
    else:
        raise SystemExit(f"unknown engine {engine!r} (sglang or vllm)")
    rows = _rows(parser)
    header = (
        f"# source: the {wheel.name.split('-')[0].replace('_', '-')}=={version} release wheel {wheel.name} (sha256 {digest}), parser built by "
        f"tools/read_engine_flags.py from {where}; {len(rows)} options; flag column lists every alias comma-separated "
        "(canonical first); defaults are argparse defaults before the server resolves them (None = resolved at startup); "
        "choices '|'-separated, as argparse checks them; range = the config field's pydantic constraints (vLLM) or empty"
    )
    lines = [header, "flag\tdest\ttype\tdefault\tchoices\trange"]
    for row in rows:
        lines.append("\t".join(row + [ranges.get(row[1], "")]))
    out.write_text("\n".join(lines) + "\n")
    real_stubs = sorted(s for s in STUBBED if "." not in s)
    print(f"{engine} {version}: {len(rows)} options -> {out}; stand-ins for: {', '.join(real_stubs) or 'nothing'}", file=sys.stderr)


if __name__ == "__main__":
    engine, wheel, out = sys.argv[1:4]
    read(engine, Path(wheel), Path(out), [Path(p) for p in sys.argv[4:]])
