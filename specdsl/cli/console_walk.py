"""Walks on the console: `operations.apply.walk` with progress drawn on
stderr (`ConsoleHooks`) and signals turned into the walk's stop event, for
every command that walks (apply, bisect, calibrate).

Signals: SIGINT (Ctrl-C), SIGTERM and SIGHUP (a closed terminal or SSH
session) stop the walk: nothing new starts, running steps end as
interrupted, servers are stopped, state is written. A second signal stops
waiting: every server's process group is killed at once, and if the
command has not ended `HURRY_EXIT_S` later it exits 130 there and then
(state.toml is whole whenever that happens: every write is atomic). The
handlers take no lock and print with a plain `os.write`: a signal that
lands while the main thread draws progress cannot deadlock it.
"""

from __future__ import annotations

import os
import signal
import threading

from specdsl.cli.apply_view import ConsoleHooks


HURRY_EXIT_S = 20.0


class _Signals:
    """Turns signals into the walk's stop event, then into a hurry. Takes
    no lock in the handler (see the module docstring)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.count = 0
        self.done = threading.Event()

    def handle(self, signum, _frame=None) -> None:
        self.count += 1
        name = signal.Signals(signum).name
        if self.count == 1:
            self.stop.set()
            _say(f"{name} received: finishing the running step, stopping servers, writing state "
                 "(send it again to stop at once)")
        elif self.count == 2:
            _say(f"{name} again: stopping at once (killing every server's process group)")
            threading.Thread(target=self._hurry, name="hurry", daemon=True).start()
        else:
            _say(f"{name}: already stopping at once")

    def _hurry(self) -> None:
        from specdsl.servers import lifecycle

        for line in lifecycle.hurry():
            _say(f"could not stop a server: {line}")
        if not self.done.wait(HURRY_EXIT_S):
            for line in lifecycle.hurry():
                _say(f"could not stop a server: {line}")
            _say(f"apply did not end {HURRY_EXIT_S:g}s after the second signal: exiting now "
                 "(state.toml is as last written; re-apply resumes)")
            os._exit(130)


def _say(message: str) -> None:
    try:
        os.write(2, f"\n{message}\n".encode())
    except OSError:  # the terminal is gone (SIGHUP)
        pass


class _SafeHooks:
    """Progress that never takes the walk down: a console gone with its
    terminal (SIGHUP) makes writes fail; the walk goes on without them."""

    def __init__(self, hooks) -> None:
        self.hooks = hooks

    def __getattr__(self, name):
        method = getattr(self.hooks, name)

        def call(*args, **kw):
            try:
                return method(*args, **kw)
            except (OSError, ValueError):  # ValueError: a closed stream
                return None

        return call


def walk_with_console(plan, graph, *, registry, spec, seen=None, **kw):
    """`operations.apply.walk` with progress on the console and Ctrl-C,
    SIGTERM and SIGHUP turned into the walk's stop event (servers stopped,
    state written); a second signal kills the servers at once. `registry`:
    the command's one host registry (`operations.Session`)."""
    from specdsl.operations.apply import walk
    from specdsl.servers import lifecycle

    stop = threading.Event()
    hooks = ConsoleHooks()
    signals = _Signals(stop)
    lifecycle.reset_hurry()
    previous = _on_signals(signals.handle)
    try:
        return walk(plan, graph, spec=spec, registry=registry, seen=seen, hooks=_SafeHooks(hooks), stop=stop, **kw)
    finally:
        signals.done.set()
        _restore_signals(previous)
        _SafeHooks(hooks).close()


SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _on_signals(handler):
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = {}
    for sig in SIGNALS:
        previous[sig] = signal.signal(sig, handler)
    return previous


def _restore_signals(previous) -> None:
    for sig, old in (previous or {}).items():
        signal.signal(sig, old)
