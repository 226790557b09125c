"""Shared counters of partitionable devices (§8): what is left per pool, and what an attempt takes."""
from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import Mapping

from .model import AllocatedState, Device
from .pools import Pool

CounterSets = dict[str, dict[str, Fraction]]


class CounterBook:
    """Consumption of one allocation attempt against the counters available per pool.

    ``cache`` holds the available counters per pool; it depends only on the allocated state, so
    one dict serves every attempt of a run.
    """

    def __init__(self, allocated: AllocatedState, cache: dict[tuple, CounterSets]) -> None:
        self._allocated = allocated
        self._available = cache
        self.consumed: dict[tuple, CounterSets] = defaultdict(dict)

    def available(self, pool: Pool) -> CounterSets:
        """Declared counters minus what allocated devices of the pool (on any node) consume."""
        key = (pool.key, pool.generation)
        have = self._available.get(key)
        if have is None:
            have = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            for s in pool.slices + pool.other_slices:
                for d in s.devices:
                    if not self._allocated.allocated(d.key):
                        continue
                    for set_name, counters in d.consumes:
                        target = have.get(set_name)
                        for counter, value in counters.items():
                            if target is not None and counter in target:
                                target[counter] -= value  # may go negative: nothing left
            self._available[key] = have
        return have

    def take(self, pool: Pool, device: Device) -> bool:
        """Add the device's consumption; if any counter of the pool is now over, undo and say no."""
        available = self.available(pool)
        consumed = self.consumed[(pool.key, pool.generation)]
        _add(consumed, device.consumes, 1)
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for counter, value in counters.items():
                if used.get(counter, 0) > value:
                    _add(consumed, device.consumes, -1)
                    return False
        return True

    def snapshot(self) -> tuple:
        """What this attempt has taken, as a comparable value (pools with nothing taken left out)."""
        return tuple(sorted((key, tuple(sorted((name, tuple(sorted((c, v) for c, v in counters.items() if v)))
                                               for name, counters in sets.items())))
                            for key, sets in self.consumed.items()
                            if any(v for counters in sets.values() for v in counters.values())))

    def would_take(self, pool: Pool, device: Device) -> bool:
        """Whether ``take`` would say yes now (nothing changes)."""
        if self.take(pool, device):
            self.give_back(pool, device)
            return True
        return False

    def give_back(self, pool: Pool, device: Device) -> None:
        _add(self.consumed[(pool.key, pool.generation)], device.consumes, -1)


def _add(consumed: CounterSets, consumes: tuple[tuple[str, Mapping[str, Fraction]], ...], sign: int) -> None:
    for set_name, counters in consumes:
        target = consumed.setdefault(set_name, {})
        for counter, value in counters.items():
            target[counter] = target.get(counter, Fraction(0)) + sign * value
