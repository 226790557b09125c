"""A number that forked processes share, and the items each process takes from it in turn.

The ``-j`` processes judging objects (engine/split.py) and the feasibility stage's processes
judging claims (feasibility/shards.py) both take the next items not yet taken until none is left,
so that a process slowed by other work or a costly item takes fewer; which process judged what
never changes an answer, only when it is ready.
"""
from __future__ import annotations

from typing import Any, Iterator, Protocol


class Counter(Protocol):
    """A ``multiprocessing.Value`` of an integer, with its lock."""

    value: int

    def get_lock(self) -> Any: ...


def new_counter() -> Counter:
    """A counter at 0 for this process and the processes it forks next."""
    import multiprocessing  # only runs that use several processes pay for it

    counter: Counter = multiprocessing.get_context("fork").Value("l", 0)
    return counter


def taken(counter: Counter, count: int, step: int = 1) -> Iterator[int]:
    """The numbers below ``count`` this process takes, ``step`` at a time, until none is left."""
    while True:
        with counter.get_lock():
            start = counter.value
            counter.value = start + step
        if start >= count:
            return
        yield from range(start, min(start + step, count))
