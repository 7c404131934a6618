"""`specdsl bisect EXPERIMENT FILE` (see specdsl.diagnose.bisect)."""

from __future__ import annotations


def add_parsers(sub) -> None:
    pass
