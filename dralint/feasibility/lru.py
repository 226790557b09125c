"""A mapping that keeps only its most recently used entries, within a budget of bytes.

The fleet view outlives any one question (the webhook asks it for every review), so what it
remembers per selector or per request kind must be bounded. A count would bound nothing: arrays
per device grow with the fleet, and keys hold what callers wrote (a selector list of 32 × 10 KB
expressions). So each entry weighs what ``weigh(key, value)`` estimates its key and value take, in
bytes, and the least recently used entries go once the total passes ``budget``.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Lru(Generic[K, V]):
    """At most ``budget`` bytes of entries as ``weigh(key, value)`` estimates them (the entry just
    put always stays, however heavy); ``get`` and ``put`` make an entry the most recent one.
    ``on_evict(key, value)`` is told of every entry that leaves to make room."""

    def __init__(self, budget: int, weigh: Callable[[K, V], int],
                 on_evict: Callable[[K, V], object] | None = None) -> None:
        self.budget = budget
        self._weigh = weigh
        self._on_evict = on_evict
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._weights: dict[K, int] = {}
        self.weight = 0

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> V:
        self.weight -= self._weights.pop(key, 0)
        w = self._weights[key] = self._weigh(key, value)
        self.weight += w
        self._entries[key] = value
        self._entries.move_to_end(key)
        while self.weight > self.budget and len(self._entries) > 1:
            old_key, old = self._entries.popitem(last=False)
            self.weight -= self._weights.pop(old_key)
            if self._on_evict is not None:
                self._on_evict(old_key, old)
        return value

    def reweigh(self, key: K) -> None:
        """An entry changed size in place (its arrays grew): account for it, evicting as needed."""
        value = self._entries.get(key)
        if value is not None:
            self.put(key, value)

    def clear(self) -> int:
        """Forget every entry (``on_evict`` is not told); the bytes they weighed."""
        freed = self.weight
        self._entries.clear()
        self._weights.clear()
        self.weight = 0
        return freed

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
