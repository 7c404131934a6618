"""Which file a workload's `dataset` value names: the one rule.

`dataset = "random"` is built in; `"jsonl:PATH"` or a path ending in
`.jsonl` is a JSONL file of prompts; `"sharegpt:PATH"` or a path ending in
`.json` is a ShareGPT file. A prefix decides before the ending does
(`sharegpt:x.jsonl` is a ShareGPT file). A relative path is the spec's
folder's. The benchmark client (`bench/datasets.py`), a benchmark's
identity (`graph/build.py`: the file's digest) and plan's check of the
files a spec names (`plan/files.py`) all read it here.

Pure: no I/O.
"""

from __future__ import annotations

from pathlib import Path

import attrs

# written prefix -> kind; without a prefix, the path's ending -> kind
PREFIXES = {"jsonl:": "jsonl", "sharegpt:": "sharegpt"}
ENDINGS = {".jsonl": "jsonl", ".json": "sharegpt"}


@attrs.frozen
class DatasetFile:
    """A dataset value that names a file: its `kind` ("jsonl" or
    "sharegpt"), the `prefix` it was written with ("" for none) and the
    `path` as written."""

    kind: str
    prefix: str
    path: str

    def under(self, spec_dir: Path | str | None) -> Path:
        """The file: `path`, a relative one under the spec's folder (the
        current directory when there is none)."""
        path = Path(self.path)
        return path if spec_dir is None or path.is_absolute() else Path(spec_dir) / path


def dataset_file(dataset: str) -> DatasetFile | None:
    """The file `dataset` names, or None (a built-in dataset, or no file)."""
    for prefix, kind in PREFIXES.items():
        if dataset.startswith(prefix):
            return DatasetFile(kind, prefix, dataset[len(prefix):])
    for ending, kind in ENDINGS.items():
        if dataset.endswith(ending):
            return DatasetFile(kind, "", dataset)
    return None


__all__ = ["DatasetFile", "ENDINGS", "PREFIXES", "dataset_file"]
