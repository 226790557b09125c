"""Proof that a migrated object means what the original meant, and what a version cannot hold.

Two objects are equal when their canonical (v1-shaped) forms are, apart from ``apiVersion``:
the same comparison the linter relies on for every served version. Pods compare in the 1.31
shape (claim names beside the entry, not under ``source``). A field is *lost* when no release
serving the target version knows it while some release serving the original version did.
"""
from __future__ import annotations

import copy
from functools import reduce
from typing import Any

from .. import schema
from ..convert import to_canonical
from ..manifest import Manifest
from ..paths import FieldPath, value_at
from ..kube.shapes import FLAT_REQUEST_FIELDS, FLAT_VERSIONS, REQUESTS
from .plan import ObjectRef


def canonical(value: dict, ref: ObjectRef, api_version: str) -> dict:
    """``value`` (an object of kind ``ref.kind`` in ``api_version``) in canonical shape, without its apiVersion."""
    if ref.is_dra:
        out = dict(to_canonical(Manifest(None, value, FieldPath(), api_version, ref.kind)).value)
    else:
        out = copy.deepcopy(value)
        for spec in ref.pod_specs:
            claims = value_at(out, tuple(spec) + ("resourceClaims",))
            for entry in claims if isinstance(claims, list) else ():
                if isinstance(entry, dict) and isinstance(entry.get("source"), dict):
                    source = entry.pop("source")
                    entry.update(source)
    out.pop("apiVersion", None)
    return out


def first_difference(a: Any, b: Any, path: tuple = ()) -> str | None:
    """The first path at which two values differ (rendered), or None when they are equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            if key not in a or key not in b:
                return FieldPath(path + (key,)).render()
            found = first_difference(a[key], b[key], path + (key,))
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return FieldPath(path).render() or "(the object)"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, path + (i,))
            if found is not None:
                return found
        return None
    return None if a == b and type(a) is type(b) else (FieldPath(path).render() or "(the object)")


def lost_fields(original: dict, ref: ObjectRef, migrated: dict, target_api: str) -> list[FieldPath]:
    """Fields of ``migrated`` (its own paths) that the target version never has but the original's did."""
    before = {canonical_path(ref.kind, ref.version, p) for p in _unknown_everywhere(original, ref.api_version, ref.kind)}
    target_version = target_api.rpartition("/")[2]
    return [p for p in _unknown_everywhere(migrated, target_api, ref.kind)
            if canonical_path(ref.kind, target_version, p) not in before]


def without(value: dict, paths: list[FieldPath]) -> dict:
    """A copy of ``value`` with the fields at ``paths`` removed."""
    out = copy.deepcopy(value)
    for path in paths:
        holder = value_at(out, tuple(path[:-1]))
        if isinstance(holder, dict):
            holder.pop(path[-1], None)
    return out


def refused_as_written(value: dict, ref: ObjectRef) -> str | None:
    """What every API server serving the object's own version refuses in it (the first such problem:
    ``path: message``), or None. Migrating such an object would only carry the error into another version."""
    found = [schema.validate(value, release, ref.api_version, ref.kind)
             for release in schema.served_releases(ref.api_version, ref.kind)]
    if not found:
        return None
    common = reduce(lambda a, b: a & b, ({(tuple(p.path), p.message) for p in problems} for problems in found))
    first = next((p for p in found[0] if (tuple(p.path), p.message) in common), None)
    return f"`{first.path.render()}`: {first.message}" if first is not None else None


def _unknown_everywhere(value: dict, api_version: str, kind: str) -> list[FieldPath]:
    """Unknown fields at every release that serves ``api_version`` (a field one of them knows is not lost)."""
    sets = [[p.path for p in schema.validate(value, release, api_version, kind) if p.kind == schema.UNKNOWN_FIELD]
            for release in schema.served_releases(api_version, kind)]
    if not sets:
        return []
    common = reduce(lambda a, b: a & b, (set(map(tuple, s)) for s in sets))
    return [FieldPath(p) for p in sets[0] if tuple(p) in common]


def outside(value: Any, paths: list[FieldPath]) -> Any:
    """``value`` with what lies at each of ``paths`` replaced by None: the part of a document that
    migrating the objects at those paths must leave as it was (the containers on the way are copied)."""
    for path in paths:
        value = _blanked(value, tuple(path))
    return value


def _blanked(value: Any, path: tuple) -> Any:
    if not path:
        return None
    head, rest = path[0], path[1:]
    if isinstance(value, dict) and head in value:
        return {**value, head: _blanked(value[head], rest)}
    if isinstance(value, list) and isinstance(head, int) and 0 <= head < len(value):
        return value[:head] + [_blanked(value[head], rest)] + value[head + 1:]
    return value


def canonical_path(kind: str, version: str, path: FieldPath) -> FieldPath:
    """The canonical (v1) spelling of a user's path (the reverse of ``Canonical.to_user``)."""
    segments = tuple(path)
    if version not in FLAT_VERSIONS:
        return FieldPath(segments)
    prefix = REQUESTS.get(kind)
    if prefix and len(segments) > len(prefix) + 1 and segments[:len(prefix)] == prefix \
            and segments[len(prefix) + 1] in FLAT_REQUEST_FIELDS:
        n = len(prefix) + 1
        return FieldPath(segments[:n] + ("exactly",) + segments[n:])
    if kind == "ResourceSlice" and len(segments) > 3 and segments[:2] == ("spec", "devices") and segments[3] == "basic":
        return FieldPath(segments[:3] + segments[4:])
    return FieldPath(segments)

