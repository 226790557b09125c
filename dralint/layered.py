"""A dict whose copies cost what changed since the last fold, not its size.

The webhook's cluster state holds tens of thousands of claims: each review lays its object over the
index (a copy of the claims table plus one), each change of the cluster derives the next index from
the last (a copy plus a few). A :class:`LayeredDict` is a base dict that no copy ever changes,
shared by every copy, and a layer of the keys changed since (a value, or removed): a copy copies
the layer only. :meth:`LayeredDict.folded` makes a copy whose layer is folded into a new base once
the layer has grown past an eighth of it, so that a series of copies each changing a few keys
costs, over time, a constant per change.

Not thread-safe for writers, like a dict; readers of a copy nobody writes to (an index that
serves) may be many.
"""
from __future__ import annotations

from typing import Any, ItemsView, Iterable, Iterator, MutableMapping, TypeVar, ValuesView

K = TypeVar("K")
V = TypeVar("V")

_GONE: Any = object()      # in the layer: the key is removed
_ABSENT: Any = object()    # not in the layer: as the base says
FOLD_SHARE = 8             # fold once the layer holds more than 1/FOLD_SHARE of the base...
FOLD_MIN = 64              # ...and more than this many keys


class LayeredDict(MutableMapping[K, V]):
    """A mutable mapping, in insertion order, whose :meth:`copy` costs the keys changed since the base."""

    __slots__ = ("_base", "_layer", "_len")

    def __init__(self, items: Iterable[tuple[K, V]] | dict[K, V] = ()) -> None:
        self._base: dict[K, V] = dict(items)
        self._layer: dict[K, V] = {}
        self._len = len(self._base)

    def __getitem__(self, key: K) -> V:
        value = self._layer.get(key, _ABSENT)
        if value is _ABSENT:
            return self._base[key]
        if value is _GONE:
            raise KeyError(key)
        return value

    def get(self, key: K, default: Any = None) -> Any:
        value = self._layer.get(key, _ABSENT)
        if value is _ABSENT:
            return self._base.get(key, default)
        return default if value is _GONE else value

    def __contains__(self, key: object) -> bool:
        value = self._layer.get(key, _ABSENT)  # type: ignore[arg-type]  # typeshed: dict.get takes the key type, the runtime any object
        return key in self._base if value is _ABSENT else value is not _GONE

    def __setitem__(self, key: K, value: V) -> None:
        if key not in self:
            self._len += 1
        self._layer[key] = value

    def __delitem__(self, key: K) -> None:
        if key not in self:
            raise KeyError(key)
        if key in self._base:
            self._layer[key] = _GONE
        else:
            del self._layer[key]
        self._len -= 1

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[K]:
        return (key for key, _ in self._pairs())

    def items(self) -> ItemsView[K, V]:
        return _Items(self)

    def values(self) -> ValuesView[V]:
        return _Values(self)

    def _pairs(self) -> Iterator[tuple[K, V]]:
        """Every (key, value): the base's in its order, then the keys the layer added."""
        layer = self._layer
        if not layer:
            yield from self._base.items()
            return
        for key, value in self._base.items():
            changed = layer.get(key, _ABSENT)
            if changed is _ABSENT:
                yield key, value
            elif changed is not _GONE:
                yield key, changed
        base = self._base
        for key, value in layer.items():
            if value is not _GONE and key not in base:
                yield key, value

    def copy(self) -> "LayeredDict[K, V]":
        """A copy sharing this one's base: it costs the size of the layer."""
        out: LayeredDict[K, V] = LayeredDict.__new__(LayeredDict)
        out._base, out._layer, out._len = self._base, dict(self._layer), self._len
        return out

    def folded(self) -> "LayeredDict[K, V]":
        """A copy, with the layer folded into a new base when it has grown past a share of the base (the
        caller pays for it once, instead of every later copy paying for a long layer)."""
        if len(self._layer) <= max(FOLD_MIN, len(self._base) // FOLD_SHARE):
            return self.copy()
        return LayeredDict(self._pairs())

    def __repr__(self) -> str:
        return f"LayeredDict({dict(self._pairs())!r})"


class _Items(ItemsView):
    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return self._mapping._pairs()  # type: ignore[attr-defined]


class _Values(ValuesView):
    def __iter__(self) -> Iterator[Any]:
        return (value for _, value in self._mapping._pairs())  # type: ignore[attr-defined]
