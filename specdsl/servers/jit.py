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
    through its host from where the last call ended (`Host.read_from`: a
    long log over SSH is not read again at every slice and run). The first
    call reads from where the probe was made (`mark()` moves the mark to
    the log's end: startup lines are not events of the warm-up); a log
    that became shorter (a new one at the same path) is read whole. An
    unreadable log has no events (and says so in `error`)."""

    def __init__(self, host, log_path: str | Path, engine: str, version: str | None) -> None:
        self.host, self.path = host, Path(log_path)
        self.patterns = patterns_for(engine, version)
        self.error = ""
        self.offset = 0  # bytes of the log read so far
        self.mark()

    def _gained(self) -> bytes:
        """What the log holds after `offset`, to its end."""
        out = b""
        try:
            while chunk := self.host.read_from(self.path, self.offset + len(out)):
                out += chunk
            if not out and self.offset and not self.host.read_from(self.path, self.offset - 1):
                self.offset = 0  # shorter than what was read: a new log
                return self._gained()
        except (HostError, OSError) as exc:
            self.error = f"could not read {self.path}: {exc}"
        return out

    def mark(self) -> None:
        if self.patterns:
            self.offset += len(self._gained())

    def __call__(self) -> list[JitEvent]:
        if not self.patterns:
            return []
        new = self._gained()
        # a line still being written is read with the next call
        cut = max(new.rfind(b"\n"), new.rfind(b"\r")) + 1
        self.offset += cut
        return jit_events(new[:cut].decode("utf-8", errors="replace"), self.patterns)


def probe(handle, host) -> LogProbe:
    """The probe of a launched server (`ServerHandle`)."""
    return LogProbe(host, handle.log_path, handle.engine, handle.version)
