"""Building a large state beside the one in force without stalling the reviews meanwhile.

Reading a cluster state of 12,000 slices creates millions of objects in a few seconds. Python's
cycle collector counts them, and every few hundred thousand it walks every object of the process
(a full collection), holding the interpreter lock while it does: each walk stops every review
thread of the worker for a few hundred milliseconds (measured: review p99 592 ms while a state
loads, 50 ms with the collector paused; the load itself 15 s against 10 s).

So :meth:`Collector.paused` turns the collector off while a state is built and put in force, and
then moves what exists into the permanent generation (``gc.freeze``), where the master's warmed
engine already is, so that later collections do not walk the new state either. This relies on a
state holding no reference cycle: the one it replaces is then freed by reference counting the
moment it is no longer used, frozen or not (a test keeps the index and the fleet view acyclic: a
frozen cycle would never be freed). What else is frozen is the little cyclic garbage of the reviews
judged during the build (a few objects each), kept for good: a few kilobytes per build.
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator


class Collector:
    """The cycle collector of this process, paused while one or more builds run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._builds = 0
        self._was_enabled = True

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Run the body (build a state and put it in force) with the collector off; the last build to end
        freezes what exists and turns the collector back on."""
        with self._lock:
            if self._builds == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._builds += 1
        try:
            yield
        finally:
            with self._lock:
                self._builds -= 1
                if self._builds == 0:
                    gc.freeze()
                    if self._was_enabled:
                        gc.enable()
