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
    # places), so two keys compare text with text and numbers with numbers
    parts = _NUMBER.split(name)
    parts[1::2] = map(_number, parts[1::2])
    return tuple(parts), name


def _number(text: str) -> int | float:
    return int(text) if text.isdigit() else float(text)


def natural_sorted(names) -> list[str]:
    """`names` sorted by `natural_key`."""
    names = list(names)
    return sorted(names, key=natural_key) if len(names) > 1 else names  # most steps serve one cell
