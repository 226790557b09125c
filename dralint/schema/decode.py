"""An object as the API server's JSON decoder leaves it: explicit nulls resolved.

Go's ``encoding/json`` treats ``null`` as "leave the field unset", so ``key: null`` is the same
as no ``key`` at all; but a ``null`` list item or map value becomes the zero value of the
element type: ``- null`` in a list of structs is ``- {}``, in a list of strings ``- ""``. The
checks judge the decoded object, so an explicit null is caught wherever the missing field or
the empty item is.

The element types come from the kind's generated schema (the newest release serving it: types
of elements do not change between releases); the few core/v1 structs that pod specs carry for
DRA are described in ``core.py``.
"""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping

import orjson

from .served import schema_file, served_releases

_DEFS_PREFIX = "#/$defs/"
Schema = Mapping[str, Any]


def decoded(value: Any, api_version: str, kind: str) -> Any:
    """``value`` with nulls resolved as the decoder does; the input itself when it holds no null."""
    schema = _schema(api_version, kind)
    if schema is None or not _has_null(value):
        return value
    return decode_with(value, schema, schema.get("$defs", {}))


def decode_with(value: Any, node: Schema, defs: Mapping[str, Schema]) -> Any:
    """``value`` decoded against schema ``node`` (whose ``$ref``s point into ``defs``)."""
    node = _resolve(node, defs)
    if isinstance(value, dict):
        props = node.get("properties")
        if props is not None:
            return {key: decode_with(item, props.get(key, {}), defs) for key, item in value.items()
                    if item is not None}
        values = node.get("additionalProperties")
        if isinstance(values, Mapping):
            return {key: _element(item, values, defs) for key, item in value.items()}
        return value
    if isinstance(value, list) and isinstance(node.get("items"), Mapping):
        return [_element(item, node["items"], defs) for item in value]
    return value


def _element(item: Any, node: Schema, defs: Mapping[str, Schema]) -> Any:
    if item is None:
        return zero_value(_resolve(node, defs))
    return decode_with(item, node, defs)


def zero_value(node: Schema) -> Any:
    """The Go zero value of a schema node's type, as JSON (None when the type says nothing)."""
    kinds = node.get("type", ())
    kinds = {kinds} if isinstance(kinds, str) else set(kinds)
    if "object" in kinds:
        return {}
    if "array" in kinds:
        return []
    if "string" in kinds and node.get("format") != "quantity":
        return ""
    if kinds & {"integer", "number"}:
        return 0
    if "boolean" in kinds:
        return False
    return None


def _resolve(node: Schema, defs: Mapping[str, Schema]) -> Schema:
    ref = node.get("$ref")
    while isinstance(ref, str) and ref.startswith(_DEFS_PREFIX):
        node = defs.get(ref[len(_DEFS_PREFIX):], {})
        ref = node.get("$ref")
    return node


def _has_null(value: Any) -> bool:
    # This looks at every value of every object of a run and almost never finds anything: orjson
    # writes the object in C, and without "null" in its text there is none. Only a text with it
    # (perhaps inside a string) or a value orjson cannot write is walked.
    try:
        if b"null" not in orjson.dumps(value):
            return False
    except (TypeError, orjson.JSONEncodeError):
        pass
    return _walk_for_null(value)


def _walk_for_null(value: Any) -> bool:
    if value is None:
        return True
    stack = [value] if isinstance(value, (dict, list)) else []
    while stack:
        container = stack.pop()
        for item in container.values() if isinstance(container, dict) else container:
            if item is None:
                return True
            if isinstance(item, (dict, list)):
                stack.append(item)
    return False


@lru_cache(maxsize=64)
def _schema(api_version: str, kind: str) -> Schema | None:
    releases = served_releases(api_version, kind)
    path = schema_file(releases[-1], api_version, kind) if releases else None
    return json.loads(path.read_text(encoding="utf-8")) if path is not None else None
