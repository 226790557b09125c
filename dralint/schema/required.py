"""Top-level fields the schema of a kind marks required (``spec`` of every DRA kind).

The API server's decoder does not enforce OpenAPI ``required`` (validation reports what matters
with its own paths), but an object without ``spec`` is refused by every schema-based tool and by
kubectl's client-side validation, and is almost always a mistake (a DeviceClass without selectors
matches every device). Only the top level is looked at; deeper required fields are the semantic
rules' business.
"""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping

from .served import schema_file, served_releases

_TYPE_META = frozenset({"apiVersion", "kind"})


@lru_cache(maxsize=256)
def top_level_required(release: str, api_version: str, kind: str) -> tuple[str, ...]:
    """Required top-level fields of a served kind, apart from apiVersion and kind.

    The union over every release that serves the kind: the 1.37 documents were rebuilt from
    definitions that lost the top-level markers (shared/k8s-openapi/README.md), while the Go
    types, and every published document of 1.31-1.36, keep ``spec`` required.
    """
    if schema_file(release, api_version, kind) is None:
        return ()
    found: dict[str, None] = {}
    for served in served_releases(api_version, kind):
        path = schema_file(served, api_version, kind)
        if path is not None:
            found.update(dict.fromkeys(json.loads(path.read_text(encoding="utf-8")).get("required", ())))
    return tuple(name for name in found if name not in _TYPE_META)


def missing_top_level(obj: Mapping[str, Any], release: str, api_version: str, kind: str) -> list[str]:
    """The required top-level fields ``obj`` lacks (absent or null)."""
    if not isinstance(obj, Mapping):
        return []
    return [name for name in top_level_required(release, api_version, kind) if obj.get(name) is None]
