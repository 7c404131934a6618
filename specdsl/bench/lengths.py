"""Requests that ended short of the length they asked for.

When the client asks for an exact output length (`ignore_eos`, or
transformers serve's `generation_config` with min_new_tokens =
max_new_tokens), every completed request should carry exactly that many
tokens. A server may still stop early: on the H200, transformers serve 5.17
with continuous batching ended 1 to 3 of 32 requests at 3-31 tokens for
some prompt sets while the same server without it gave 32 every time, and
those runs took 2-3 times as long (docs/gpu-run.md). Such a run measures
other work than asked, so it says so in its warnings; paired arms see the
same prompts, which keeps a comparison of two servers that stop alike
fair, but not of one that stops early against one that does not.
"""

from __future__ import annotations

from collections.abc import Sequence

from specdsl.bench.timings import RequestTiming


def short_outputs_warning(records: Sequence[RequestTiming], asked: Sequence[int], exact: bool) -> str | None:
    """The warning for completed requests that carry fewer output tokens
    than `asked` (per request index), when an exact length was asked for;
    None when there are none or no exact length was asked."""
    if not exact:
        return None
    short = [(r.output_tokens, asked[r.i]) for r in records if r.ok and r.i < len(asked) and r.output_tokens < asked[r.i]]
    if not short:
        return None
    done = sum(1 for r in records if r.ok)
    got = sorted(t for t, _ in short)
    span = f"{got[0]}" if got[0] == got[-1] else f"{got[0]}-{got[-1]}"
    wanted = sorted({a for _, a in short})
    asked_text = f"{wanted[0]}" if len(wanted) == 1 else f"{wanted[0]}-{wanted[-1]}"
    return (f"short outputs: {len(short)} of {done} requests ended at {span} tokens although an exact length"
            f" ({asked_text}) was asked for: the server stopped early, the run measured other work than asked")
