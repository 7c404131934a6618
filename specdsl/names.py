"""How names are ordered for output.

A matrix cell is named after its values (`grid[backend=fa3,concurrency=16]`),
and the addresses of its steps carry that name. Sorted as strings, the cells
of `concurrency = [1, 4, 16, 64]` come out 1, 16, 4, 64; `natural_key`
orders them 1, 4, 16, 64: numbers in a name compare by value.

This module imports nothing else from specdsl.
"""

from __future__ import annotations

import functools
import re

# A number: after `=` (a matrix value) with its sign and exponent, as the
# resolver writes values (`c=-1`, `lr=1e-05`, `mem=0.85`); elsewhere a run of
# digits with an optional fraction (`r10`, `cu128`, `3.12`), so the `-` of
# `sglang-059` stays a hyphen.
_NUMBER = re.compile(r"((?<==)-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|\d+(?:\.\d+)?)")


@functools.lru_cache(maxsize=1 << 16)
def natural_key(name: str) -> tuple:
    """A sort key for `name` in which numbers compare by value: `x[c=4]`
    before `x[c=16]`, `x[m=0.85]` before `x[m=0.9]`, `x[c=-1]` before
    `x[c=1]`; text compares as text. Names that differ only in how a number
    is written (`c=1` and `c=1.0`) are ordered as strings, so the order is
    total and the same on every machine."""
    # split with one group alternates text (even places) and numbers (odd
    # places), so two keys compare text with text and numbers with numbers.
    # A `,` is in no number and is no `=`: the name is split there first
    # and each piece once (the pieces of a matrix's cells repeat: `c=16`,
    # `grid[backend=fa3`), the text at each seam joined again. The same
    # parts as one split of the whole name, for a tenth of the scanning.
    first, *rest = name.split(",")
    parts = list(_piece(first))
    for piece in rest:
        more = _piece(piece)
        parts[-1] += "," + more[0]
        parts.extend(more[1:])
    return tuple(parts), name


@functools.lru_cache(maxsize=1 << 16)
def _piece(text: str) -> tuple:
    parts = _NUMBER.split(text)
    parts[1::2] = map(_number, parts[1::2])
    return tuple(parts)


def _number(text: str) -> int | float:
    return int(text) if text.isdigit() else float(text)


def natural_sorted(names) -> list[str]:
    """`names` sorted by `natural_key`."""
    names = list(names)
    return sorted(names, key=natural_key) if len(names) > 1 else names  # most steps serve one cell


def cell_parts(name: str) -> tuple[str, dict[str, str]] | None:
    """(experiment, {key: value text}) of `sweep[backend=fa3,concurrency=16]`
    (spaces around keys and values ignored); (name, {}) for a plain name;
    None when the brackets do not parse."""
    head, bracket, rest = name.partition("[")
    if not bracket:
        return name.strip(), {}
    if not rest.endswith("]"):
        return None
    values: dict[str, str] = {}
    for item in rest[:-1].split(","):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            return None
        values[key.strip()] = value.strip()
    return head.strip(), values


def target_matches(target: str, cell: str) -> bool:
    """Whether `--target TARGET` picks the cell named `cell`: the
    experiment's name (every cell of it), the cell's own name, or a slice,
    some of its matrix values (`sweep[backend=fa3]`: every cell with
    backend fa3), written in any order; numbers compare by value."""
    want, have = cell_parts(target), cell_parts(cell)
    if want is None or have is None or want[0] != have[0]:
        return False
    return all(key in have[1] and _same(have[1][key], value) for key, value in want[1].items())


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False
