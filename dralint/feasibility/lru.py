"""A mapping that keeps only its most recently used entries.

The fleet view outlives any one question (the webhook asks it for every review), so what it
remembers per selector or per request kind must be bounded: the least recently used entries go
once there are more than ``size``, or, when entries are weighed, once their weight passes
``budget`` (arrays per device grow with the fleet: a count alone would bound nothing).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Generic, Hashable, Iterator, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Lru(Generic[K, V]):
    """At most ``size`` entries and, with ``weigh``, at most ``budget`` of their weight (the entry
    just put always stays); ``get`` and ``put`` make an entry the most recent one.
    ``on_evict(key, value)`` is told of every entry that leaves to make room."""

    def __init__(self, size: int, on_evict: Callable[[K, V], None] | None = None,
                 weigh: Callable[[V], int] | None = None, budget: int = 0) -> None:
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._on_evict = on_evict
        self._weigh = weigh
        self._weights: dict[K, int] = {}
        self.budget = budget
        self.weight = 0

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> V:
        if self._weigh is not None:
            self.weight -= self._weights.pop(key, 0)
            w = self._weights[key] = self._weigh(value)
            self.weight += w
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.size or (self._weigh is not None and self.weight > self.budget
                                                 and len(self._entries) > 1):
            old_key, old = self._entries.popitem(last=False)
            if self._weigh is not None:
                self.weight -= self._weights.pop(old_key)
            if self._on_evict is not None:
                self._on_evict(old_key, old)
        return value

    def reweigh(self, key: K) -> None:
        """An entry changed size in place (its arrays grew): account for it, evicting as needed."""
        value = self._entries.get(key)
        if value is not None and self._weigh is not None:
            self.put(key, value)

    def items(self) -> Iterator[tuple[K, V]]:
        return iter(list(self._entries.items()))

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
