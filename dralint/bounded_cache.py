"""A memo bounded by the bytes of what it holds, not by its number of entries.

``functools.lru_cache(maxsize=N)`` bounds entries: N small entries or N huge ones. Where the size of
an entry follows its input (a CEL expression of 10 KB compiles to a program a hundred times the
size of one of 100 bytes), a hostile caller fills a count-bounded cache with the huge kind. Here
each entry weighs what ``weigh`` estimates its arguments and result cost, in bytes, and the least
recently used entries leave once the total passes ``max_bytes``; an entry heavier than the whole
budget is not kept. The memos of caller data that live as long as the process are listed in
``caches.py``, which empties them when the process is over its memory ceiling.
"""
from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def bounded_cache(max_bytes: int, weigh: Callable[..., int], *, typed: bool = False) -> Callable[[F], F]:
    """Memoise a function of hashable arguments within ``max_bytes``; ``weigh(*args)`` estimates
    the bytes of one entry (arguments and result). ``typed``: arguments of different types are
    different entries (``1`` and ``1.0``), as with ``lru_cache(typed=True)``."""
    def decorate(func: F) -> F:
        entries: OrderedDict[tuple, tuple[Any, int]] = OrderedDict()
        lock = threading.Lock()
        total = [0]

        @functools.wraps(func)
        def wrapper(*args: Any) -> Any:
            key = args + tuple(type(a) for a in args) if typed else args
            with lock:
                hit = entries.get(key)
                if hit is not None:
                    entries.move_to_end(key)
                    return hit[0]
            value = func(*args)
            weight = max(1, weigh(*args))
            if weight > max_bytes:
                return value
            with lock:
                if key not in entries:
                    entries[key] = (value, weight)
                    total[0] += weight
                    while total[0] > max_bytes:
                        _, (_, dropped) = entries.popitem(last=False)
                        total[0] -= dropped
            return value

        def cache_info() -> dict[str, int]:
            with lock:
                return {"entries": len(entries), "bytes": total[0], "max_bytes": max_bytes}

        def cache_clear() -> int:
            """Forget every entry; the bytes they weighed."""
            with lock:
                freed = total[0]
                entries.clear()
                total[0] = 0
                return freed

        wrapper.cache_info = cache_info     # type: ignore[attr-defined]
        wrapper.cache_clear = cache_clear   # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]
    return decorate
