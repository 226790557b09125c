"""Field paths: one small type for "where in the object", spelled the way Kubernetes spells them.

A path is a tuple of segments. A ``str`` segment is a struct field (``.name``), an ``int`` is a
list index (``[3]``), and a :class:`Key` is a map key (``[gpu.example.com/model]``). Keeping map
keys distinct from fields matters only for rendering: in YAML both are mapping keys.
"""
from __future__ import annotations

from typing import Any, Iterable, Union


class Key(str):
    """A map key segment (rendered ``[key]``), as opposed to a struct field."""

    __slots__ = ()


Segment = Union[str, int, Key]
# A path as a plain tuple of segments: what the source stage indexes by (a FieldPath looks up the same).
Steps = tuple[Segment, ...]
_new_tuple = tuple.__new__


class FieldPath(tuple[Segment, ...]):
    """An immutable path into an object, e.g. ``spec.devices.requests[0].exactly.count``."""

    __slots__ = ()

    def __new__(cls, segments: Iterable[Segment] = ()) -> "FieldPath":
        return super().__new__(cls, segments)

    @classmethod
    def parse(cls, text: str) -> "FieldPath":
        """Parse the Kubernetes spelling back into segments (``a.b[0].c[key]``)."""
        segments: list[Segment] = []
        i, n = 0, len(text)
        while i < n:
            ch = text[i]
            if ch == ".":
                i += 1
                continue
            if ch == "[":
                end = text.index("]", i)
                inner = text[i + 1:end]
                segments.append(int(inner) if inner.isdigit() else Key(inner))
                i = end + 1
                continue
            j = i
            while j < n and text[j] not in ".[":
                j += 1
            segments.append(text[i:j])
            i = j
        return cls(segments)

    def child(self, *segments: Segment) -> "FieldPath":
        """The path extended by ``segments``."""
        # tuple.__new__ directly: checks build hundreds of thousands of paths on a large run.
        return _new_tuple(FieldPath, tuple.__add__(self, segments))

    def key(self, name: str) -> "FieldPath":
        """The path to map entry ``name`` below this path."""
        return _new_tuple(FieldPath, tuple.__add__(self, (Key(name),)))

    @property
    def parent(self) -> "FieldPath":
        return FieldPath(self[:-1])

    def startswith(self, prefix: Iterable[Segment]) -> bool:
        prefix = tuple(prefix)
        return tuple(self[: len(prefix)]) == prefix

    def render(self) -> str:
        """Kubernetes ``field.Path`` spelling."""
        out: list[str] = []
        for seg in self:
            if isinstance(seg, Key):
                out.append(f"[{seg}]")
            elif isinstance(seg, int):
                out.append(f"[{seg}]")
            elif out:
                out.append("." + seg)
            else:
                out.append(seg)
        return "".join(out)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"FieldPath({self.render()!r})"


ROOT = FieldPath()


def value_at(value: Any, path: Iterable[Segment]) -> Any:
    """The value at ``path`` inside decoded YAML, or None when a step is missing or of the wrong type."""
    for segment in path:
        if isinstance(value, dict) and isinstance(segment, str):
            value = value.get(segment)
        elif isinstance(value, list) and isinstance(segment, int) and 0 <= segment < len(value):
            value = value[segment]
        else:
            return None
    return value
