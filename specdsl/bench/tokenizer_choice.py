"""Which tokenizer counts a workload's prompt tokens (workload `tokenizer`):

- `"model"`: the model's own: the server's `model` (a local folder, or a hub
  id that transformers can load);
- a path (a folder holding tokenizer.json, or that file), relative to the
  spec's folder;
- unset: the model's own when `model` is a local folder, else none (random
  prompts are then random words, file prompts counted in words, and the
  server's `usage` gives the real counts).

With one, random prompts are exact in tokens on every endpoint (token ids
on completions, text that re-encodes to `input_len` tokens on chat) and file
prompts are counted in tokens; the result's settings record which tokenizer
counted them (specdsl.bench.settings.tokenizer_record)."""

from __future__ import annotations

from pathlib import Path

MODEL = "model"


def tokenizer_for(workload, model: str, spec_dir: Path | str | None) -> str | None:
    """The tokenizer a benchmark of `workload` against `model` loads, as
    specdsl.bench.datasets.load_tokenizer takes it, or None."""
    chosen = getattr(workload, "tokenizer", None)
    if chosen is None:
        return model if Path(model).is_dir() else None
    if chosen == MODEL:
        return model
    path = Path(chosen).expanduser()
    if not path.is_absolute() and spec_dir is not None:
        path = Path(spec_dir) / path
    return str(path.resolve())


def missing_tokenizer(workload, spec_dir: Path | str | None) -> str | None:
    """Why a workload's `tokenizer` path cannot be used (no such file or
    folder, a folder without tokenizer.json), or None."""
    chosen = getattr(workload, "tokenizer", None)
    if chosen is None or chosen == MODEL:
        return None
    path = Path(tokenizer_for(workload, "", spec_dir))
    if not path.exists():
        return f"tokenizer {chosen!r}: no such file or folder ({path})"
    if path.is_dir() and not (path / "tokenizer.json").is_file():
        return f"tokenizer {chosen!r}: the folder holds no tokenizer.json"
    return None
