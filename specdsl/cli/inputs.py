"""Every file a spec reads, as a digest a saved plan records beside the
spec's meaning (specdsl.cli.common.spec_digest): the spec files (the root,
its imports wherever they are, the variable files), by what they say
(comments and layout aside), and the data files its workloads name by path
(a JSONL or ShareGPT dataset, a local tokenizer), by their bytes. Apply of
a saved plan refuses it when any of them changed since."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def _file_sha(path: Path) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    return h.hexdigest()


def data_files(cfg, spec_dir: Path) -> list[Path]:
    """The files the workloads of `cfg` read by path: datasets and local tokenizers."""
    from specdsl.bench.datasets import jsonl_path, local_dataset, sharegpt_path, tokenizer_file

    out: set[Path] = set()
    workloads = {id(w): w for w in (*cfg.workloads, *(e.workload for e in cfg.experiments))}
    for w in workloads.values():
        if not w.command and w.dataset != "random":
            local = local_dataset(w.dataset, spec_dir)
            path = jsonl_path(local) or sharegpt_path(local)
            if path is not None:
                out.add(path)
        tokenizer = getattr(w, "tokenizer", None)
        if tokenizer:
            found = tokenizer_file(str(_near(tokenizer, spec_dir)))
            if found is not None:
                out.add(found)
    return sorted(out)


def _near(path: str, spec_dir: Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else spec_dir / p


def inputs_digest(resolved, spec: Path) -> str:
    """SHA-256 over every spec file `resolved` read (by meaning) and every
    data file its workloads name (by bytes), each keyed by its path relative
    to the spec's folder (a tree moved whole keeps its plans)."""
    root = Path(spec).resolve().parent
    parts = []
    for real, meaning in sorted(resolved.sources.meanings.items()):
        parts.append(f"spec {os.path.relpath(real, root)} {meaning}")
    if resolved.config is not None:
        for path in data_files(resolved.config, Path(spec).parent):
            parts.append(f"data {os.path.relpath(Path(path).resolve(), root)} {_file_sha(path)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()
