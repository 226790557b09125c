"""Estimates of the memory a value holds, for caches bounded by bytes rather than by entries.

An estimate, not a measure: ``sys.getsizeof`` of the value and of what it holds, each object
counted once, numpy arrays by their buffers, objects by their attributes, down to ``depth`` levels
(below that an object counts for its own size only). It errs high where objects are shared with
the rest of the program (an interned name), which is the side a bound should err on.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

_LEAVES = (str, bytes, int, float, bool, type(None))


def deep_size(value: Any, depth: int = 8) -> int:
    """Bytes ``value`` holds: itself and, ``depth`` levels down, what it refers to."""
    return _size(value, depth, set())


def _size(value: Any, depth: int, seen: set[int]) -> int:
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, _LEAVES):
        return sys.getsizeof(value)
    if isinstance(value, np.ndarray):
        return sys.getsizeof(value) + (value.nbytes if value.base is not None else 0)
    size = sys.getsizeof(value)
    if depth <= 0:
        return size
    if isinstance(value, dict):
        return size + sum(_size(k, depth - 1, seen) + _size(v, depth - 1, seen) for k, v in value.items())
    if isinstance(value, (tuple, list, set, frozenset)):
        return size + sum(_size(v, depth - 1, seen) for v in value)
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        return size + _size(fields, depth - 1, seen)
    slots = getattr(type(value), "__slots__", ())
    return size + sum(_size(getattr(value, name), depth - 1, seen) for name in slots if hasattr(value, name))
