"""The fix of a v1beta1-shaped request in a v1 object: its flat fields moved under ``exactly:``."""
from __future__ import annotations

from typing import Any

from ..fixes import Fix
from ..paths import FieldPath
from ..kube.shapes import FLAT_REQUEST_FIELDS, FLAT_VERSIONS, REQUESTS
from ..reshape import request_to_exactly



def request_path(kind: str, path: FieldPath) -> FieldPath | None:
    """The path of the request that ``path`` is at or below, in a claim or template."""
    prefix = REQUESTS.get(kind)
    if prefix is None or len(path) <= len(prefix) or tuple(path[:len(prefix)]) != prefix \
            or not isinstance(path[len(prefix)], int):
        return None
    return FieldPath(path[:len(prefix) + 1])


def flat_request(target: Any) -> Fix | None:
    """A finding on a request that carries v1beta1's flat fields in a v1-shaped object."""
    request = request_path(target.manifest.kind, target.path)
    return flat_request_fix(target, request) if request is not None else None


def flat_request_fix(target: Any, request: FieldPath) -> Fix | None:
    """Move the request's flat fields under ``exactly:`` (None when it has ``exactly`` or ``firstAvailable``)."""
    manifest = target.manifest
    node = target.node(request)
    if manifest.version in FLAT_VERSIONS or node is None or node.kind != "map" \
            or node.entry("exactly") is not None or node.entry("firstAvailable") is not None:
        return None
    moved = [k.value for k, _ in node.entries if k.value in FLAT_REQUEST_FIELDS]
    if not moved:
        return None
    names = ", ".join(f"`{m}`" for m in moved)
    return target.fix(f"Move {names} under `exactly:` (in {manifest.api_version} a request's fields go there)",
                      request_to_exactly(target.layout, node, target.step()))
