"""The schema stage's record and how its messages are worded.

Values are described the way they reach the API server: JSON types, and for scalars the value
itself (shortened), so ``count: "2"`` reads ``expected integer, found string "2"``.
"""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from datetime import date
from typing import Any, Iterable, Mapping, Sequence

from ..paths import FieldPath

UNKNOWN_FIELD = "unknown-field"
WRONG_TYPE = "type"

_MAX_SHOWN = 40  # characters of a scalar quoted in a message


@dataclass(frozen=True)
class SchemaProblem:
    """One thing the API server's decoding would reject, at the user's own path."""

    kind: str                 # UNKNOWN_FIELD | WRONG_TYPE
    path: FieldPath
    message: str
    suggestion: str | None = None


def json_type(value: Any) -> str:
    """The JSON type name of a decoded YAML/JSON value (``"integer"`` for whole numbers).

    PyYAML turns unquoted timestamps into ``date``/``datetime``; Kubernetes' YAML reader keeps
    them as the original text, so they count as strings.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, (str, date)):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def describe(value: Any) -> str:
    """``string "2"``, ``integer 5``, ``boolean true``, ``object``, ``array``..."""
    kind = json_type(value)
    if kind in ("object", "array", "null"):
        return kind
    if kind == "string":
        text = value.isoformat() if isinstance(value, date) else str(value)
        return f"string {_shorten(json.dumps(text, ensure_ascii=False))}"
    if kind == "boolean":
        return f"boolean {'true' if value else 'false'}"
    if kind in ("integer", "number"):
        return f"{kind} {_shorten(repr(value))}"
    return kind


def _shorten(text: str) -> str:
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN - 1] + "…"


def expected_text(types: Iterable[str]) -> str:
    """``integer``, ``string or number``... for the JSON types a schema allows (null left out)."""
    names = [name for name in _ORDER if name in set(types) and name != "null"]
    return " or ".join(names) if names else "null"


# Most specific first; "string or number" reads better than "number or string".
_ORDER = ("object", "array", "string", "integer", "number", "boolean", "null")


def wrong_type(path: Sequence[Any], expected: str, value: Any) -> SchemaProblem:
    """A value the decoder cannot put into the field's Go type."""
    return SchemaProblem(WRONG_TYPE, FieldPath(path), f"expected {expected}, found {describe(value)}")


def unknown_field(path: Sequence[Any], name: Any, known: Sequence[str]) -> SchemaProblem:
    """A field the struct does not have (strict decoding); suggests the closest sibling."""
    text = str(name)
    suggestion = _closest(text, known)
    message = f"unknown field `{text}`" + (f"; did you mean `{suggestion}`?" if suggestion else "")
    return SchemaProblem(UNKNOWN_FIELD, FieldPath((*path, text)), message, suggestion)


def _closest(text: str, known: Sequence[str]) -> str | None:
    matches = difflib.get_close_matches(text, known, n=1, cutoff=0.6)
    if matches:
        return matches[0]
    # Field names are matched case-sensitively, so `DeviceClassName` is unknown; compare
    # case-blind to still point at `deviceClassName`.
    lowered = {name.lower(): name for name in known}
    matches = difflib.get_close_matches(text.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[matches[0]] if matches else None
