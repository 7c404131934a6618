"""What a server's log says it compiled: the lines that mean a compile, an
autotune or a CUDA graph capture (the engine's facts, specdsl.facts
`jit_patterns`), found in the text a log grew by since a mark.

A `command` server is read with every engine's lines: it may run any of
them. The steady warm-up (specdsl.bench.loadgen) asks a `LogProbe` after
each slice, a measured run after its requests (specdsl.bench.validity).
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from specdsl import facts
from specdsl.hosts import HostError

@attrs.frozen
class JitEvent:
    kind: str  # compile | autotune | graph_capture
    line: str  # the log line, stripped
    meaning: str


def patterns_for(engine: str, version: str | None) -> tuple[facts.JitPattern, ...]:
    """The compile lines a server of `engine` at `version` is read with
    (every engine's for `command`)."""
    if engine == "command":
        return tuple(p for name in facts.ENGINES if name != "command" for p in facts.jit_patterns(name))
    return facts.jit_patterns(engine, version)


def jit_events(text: str, patterns) -> list[JitEvent]:
    """The compile events in `text`, one per line (a progress bar's carriage
    returns split it into its lines), in order."""
    out = []
    for line in re.split(r"[\r\n]+", text):
        for p in patterns:
            if p.regex.search(line):
                out.append(JitEvent(p.kind, line.strip(), p.meaning))
                break
    return out


class LogProbe:
    """The compile events a server's log gained since the last call, read
    through its host. The first call reads from where the probe was made
    (`mark()` moves the mark to the log's end: startup lines are not
    events of the warm-up). An unreadable log has no events (and says so
    in `error`)."""

    def __init__(self, host, log_path: str | Path, engine: str, version: str | None) -> None:
        self.host, self.path = host, Path(log_path)
        self.patterns = patterns_for(engine, version)
        self.error = ""
        self.offset = 0
        self.mark()

    def _text(self) -> str:
        try:
            return self.host.read_text(self.path)
        except (HostError, OSError) as exc:
            self.error = f"could not read {self.path}: {exc}"
            return ""

    def mark(self) -> None:
        self.offset = len(self._text()) if self.patterns else 0

    def __call__(self) -> list[JitEvent]:
        if not self.patterns:
            return []
        text = self._text()
        if len(text) < self.offset:  # a new log (a relaunch): read it whole
            self.offset = 0
        new, self.offset = text[self.offset:], len(text)
        # a line still being written is read with the next call
        cut = max(new.rfind("\n"), new.rfind("\r"))
        if cut < len(new) - 1:
            self.offset -= len(new) - cut - 1
            new = new[:cut + 1]
        return jit_events(new, self.patterns)


def probe(handle, host) -> LogProbe:
    """The probe of a launched server (`ServerHandle`)."""
    return LogProbe(host, handle.log_path, handle.engine, handle.version)
