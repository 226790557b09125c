"""Fixes of unknown fields (DRA101): a misspelt field renamed, a field moved to where its version has it."""
from __future__ import annotations

import copy
from typing import Any

from .. import schema
from ..fixes import Fix, Safety
from ..paths import FieldPath, value_at
from ..kube.shapes import FLAT_REQUEST_FIELDS, FLAT_VERSIONS
from ..reshape import device_from_basic, device_to_basic, request_from_exactly
from ..yamltext.edits import replace_scalar
from .requests import flat_request_fix, request_path

_DEVICE_FIELDS_IN_BASIC = frozenset({"attributes", "capacity", "consumesCounters", "nodeName", "nodeSelector",
                                     "allNodes", "taints", "bindsToNode", "bindingConditions",
                                     "bindingFailureConditions", "allowMultipleAllocations"})


def unknown_field(target: Any) -> Fix | None:
    """The fix of one unknown field, if one is certain."""
    path, manifest = target.path, target.manifest
    if not path or not isinstance(path[-1], str):
        return None
    name, version = str(path[-1]), manifest.version
    request = request_path(manifest.kind, path)
    if request is not None and path == request.child("exactly") and version in FLAT_VERSIONS:
        node = target.node(request)
        return target.fix(f"Move the fields of `exactly` beside the request's name ({manifest.api_version} requests "
                          "have no `exactly`)", request_from_exactly(target.layout, node)) if node is not None else None
    if request is not None and len(path) == len(request) + 1 and name in FLAT_REQUEST_FIELDS \
            and version not in FLAT_VERSIONS:
        return flat_request_fix(target, request)
    device = _device_path(manifest.kind, path)
    if device is not None and len(path) == len(device) + 1:
        node = target.node(device)
        if node is None:
            return None
        if name == "basic" and version not in FLAT_VERSIONS:
            return target.fix(f"Remove the `basic:` wrapper ({manifest.api_version} devices carry their fields "
                              "directly)", device_from_basic(target.layout, node))
        if name in _DEVICE_FIELDS_IN_BASIC and version in FLAT_VERSIONS and node.entry("basic") is None:
            return target.fix(f"Move the device's fields under `basic:` ({manifest.api_version} devices wrap them)",
                              device_to_basic(target.layout, node, target.step()))
    return _rename(target, name)


def _rename(target: Any, name: str) -> Fix | None:
    """``cout`` → ``count`` when the schema's suggestion is the only one and the renamed value fits it."""
    manifest, path = target.manifest, target.path
    release = target.release.version
    problem = next((p for p in schema.validate(manifest.value, release, manifest.api_version, manifest.kind)
                    if p.kind == schema.UNKNOWN_FIELD and tuple(p.path) == tuple(path)), None)
    suggestion = problem.suggestion if problem is not None else None
    parent = value_at(manifest.value, path[:-1])
    if not suggestion or not isinstance(parent, dict) or suggestion in parent:
        return None
    key = _key_node(target)
    if key is None:
        return None
    renamed = copy.deepcopy(manifest.value)
    holder = value_at(renamed, path[:-1])
    holder[suggestion] = holder.pop(name)
    new_path = FieldPath(tuple(path[:-1]) + (suggestion,))
    after = schema.validate(renamed, release, manifest.api_version, manifest.kind)
    fits = not any(tuple(p.path[:len(new_path)]) == tuple(new_path) for p in after)
    return target.fix(f"Rename `{name}` to `{suggestion}`", [replace_scalar(key, suggestion)],
                      Safety.SAFE if fits else Safety.UNSAFE)


def _key_node(target: Any) -> Any:
    """The key's node; None when the key is written twice (renaming one would uncover the other)."""
    parent = target.node(target.path[:-1])
    if parent is None or parent.kind != "map":
        return None
    keys = [key for key, _ in parent.entries if key.value == str(target.path[-1])]
    return keys[0] if len(keys) == 1 else None


def _device_path(kind: str, path: FieldPath) -> FieldPath | None:
    """``spec.devices[i]`` of a ResourceSlice when ``path`` is below it."""
    if kind == "ResourceSlice" and len(path) >= 3 and tuple(path[:2]) == ("spec", "devices") \
            and isinstance(path[2], int):
        return FieldPath(path[:3])
    return None
