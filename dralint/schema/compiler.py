"""Compile one of our generated JSON Schemas into a tree of checking closures.

Each schema node becomes a :class:`Compiled` triple: ``fast``, the exact Python types that need no
further look (``str`` for a plain string field, ``NoneType`` wherever null is allowed);
``valid(value)``, a quick yes/no that builds nothing; and ``check(value, path, out)``, which
appends :class:`~dralint.schema.problems.SchemaProblem` records to ``out``. Containers test
``type(item) in fast`` before calling a child, so a valid leaf costs one set lookup and no call.
Almost every object is valid, so callers ask ``valid`` first and only walk again with paths (the
costly part: a tuple per container entered) when it says no.

Only the subset of draft 2020-12 that ``scripts/gen_schemas.py`` writes is understood; ``required``,
``enum`` and ``const`` are deliberately not checked (the semantic rules report missing and
unsupported values with the API server's own error types and paths).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, NamedTuple

from ..paths import Key
from ..kube.quantity import Quantity, QuantityError
from .problems import SchemaProblem, expected_text, json_type, unknown_field, wrong_type
from .timestamps import EXAMPLE, is_go_rfc3339

Segments = tuple  # of str (field), int (list index), Key (map key)
Check = Callable[[Any, Segments, list[SchemaProblem]], None]

_PY_TYPES: dict[str, frozenset[type]] = {
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
    "null": frozenset({type(None)}),
}
_ANY_TYPES: frozenset[type] = frozenset({dict, list, str, int, float, bool, type(None)})
_ANNOTATIONS = frozenset({"$schema", "title", "description", "$defs", "required", "enum"})
_KNOWN_KEYS = _ANNOTATIONS | {"type", "properties", "additionalProperties", "items", "$ref", "const",
                              "minimum", "maximum", "format"}
_DEFS_PREFIX = "#/$defs/"


class SchemaCompileError(ValueError):
    """The schema uses something outside the generator's subset (a bug in the shipped files)."""


class Compiled(NamedTuple):
    """A compiled schema node."""

    fast: frozenset[type]
    check: Check
    valid: Callable[[Any], bool]


def _is_quantity(value: Any) -> bool:
    try:
        Quantity.parse(value)
    except QuantityError:
        return False
    return True


def _accept(value: Any, path: Segments, out: list[SchemaProblem]) -> None:
    """Any JSON value is fine (RawExtension, FieldsV1, pinned apiVersion/kind)."""


def _always(value: Any) -> bool:
    return True


ANY = Compiled(_ANY_TYPES, _accept, _always)


def compile_schema(schema: Mapping[str, Any]) -> Compiled:
    """Compile a whole generated schema file (its root and the ``$defs`` it reaches).

    Raises :class:`SchemaCompileError` for a schema outside the generator's subset; the input is
    always one of our shipped files, never user data.
    """
    return _Compiler(schema.get("$defs", {})).node(schema, "#")


class _Compiler:
    def __init__(self, defs: Mapping[str, Any]) -> None:
        self._defs = defs
        self._done: dict[str, Compiled] = {}
        self._busy: set[str] = set()

    def node(self, node: Mapping[str, Any], where: str) -> Compiled:
        unknown = set(node) - _KNOWN_KEYS
        if unknown:
            raise SchemaCompileError(f"{where}: unsupported keywords {sorted(unknown)}")
        if "$ref" in node:
            return self._ref(node["$ref"])
        if "const" in node or "type" not in node:
            return ANY
        types = {node["type"]} if isinstance(node["type"], str) else set(node["type"])
        nullable = "null" in types
        if "object" in types:
            if "properties" in node:
                return _struct({name: self.node(sub, f"{where}/{name}") for name, sub in node["properties"].items()},
                               strict=node.get("additionalProperties") is False, nullable=nullable)
            return _map(self.node(node.get("additionalProperties", {}), f"{where}/*"), nullable=nullable)
        if "array" in types:
            return _array(self.node(node.get("items", {}), f"{where}[]"), nullable=nullable)
        fmt = node.get("format")
        if fmt not in (None, "date-time", "quantity"):
            raise SchemaCompileError(f"{where}: unsupported format {fmt!r}")
        return _scalar(frozenset(types), node.get("minimum"), node.get("maximum"), fmt=fmt)

    def _ref(self, ref: str) -> Compiled:
        name = ref[len(_DEFS_PREFIX):] if ref.startswith(_DEFS_PREFIX) else None
        if name is None or name not in self._defs:
            raise SchemaCompileError(f"unresolvable $ref {ref!r}")
        if name not in self._done:
            if name in self._busy:
                raise SchemaCompileError(f"recursive definition {name!r}")  # none in resource.k8s.io
            self._busy.add(name)
            self._done[name] = self.node(self._defs[name], ref)
            self._busy.discard(name)
        return self._done[name]


def _null_types(nullable: bool) -> frozenset[type]:
    return _PY_TYPES["null"] if nullable else frozenset()


def _struct(fields: dict[str, Compiled], *, strict: bool, nullable: bool) -> Compiled:
    names = tuple(fields)
    get = fields.get

    def check(value: Any, path: Segments, out: list[SchemaProblem]) -> None:
        if type(value) is not dict and not isinstance(value, Mapping):
            out.append(wrong_type(path, "object", value))
            return
        for key, item in value.items():
            entry = get(key)
            if entry is None:
                if strict:
                    out.append(unknown_field(path, key, names))
                continue
            fast, sub, _ = entry
            if type(item) not in fast:
                sub(item, path + (key,), out)

    def valid(value: Any) -> bool:
        if type(value) is not dict:
            return False
        for key, item in value.items():
            entry = get(key)
            if entry is None:
                if strict:
                    return False
                continue
            if type(item) not in entry.fast and not entry.valid(item):
                return False
        return True

    return Compiled(_null_types(nullable), check, valid)


def _map(values: Compiled, *, nullable: bool) -> Compiled:
    fast, sub, sub_valid = values

    def check(value: Any, path: Segments, out: list[SchemaProblem]) -> None:
        if type(value) is not dict and not isinstance(value, Mapping):
            out.append(wrong_type(path, "object", value))
            return
        for key, item in value.items():
            if type(item) not in fast:
                sub(item, path + (Key(key),), out)

    def valid(value: Any) -> bool:
        if type(value) is not dict:
            return False
        for item in value.values():
            if type(item) not in fast and not sub_valid(item):
                return False
        return True

    return Compiled(_null_types(nullable), check, valid)


def _array(items: Compiled, *, nullable: bool) -> Compiled:
    fast, sub, sub_valid = items

    def check(value: Any, path: Segments, out: list[SchemaProblem]) -> None:
        if type(value) is not list and not isinstance(value, (list, tuple)):
            out.append(wrong_type(path, "array", value))
            return
        for index, item in enumerate(value):
            if type(item) not in fast:
                sub(item, path + (index,), out)

    def valid(value: Any) -> bool:
        if type(value) is not list:
            return False
        for item in value:
            if type(item) not in fast and not sub_valid(item):
                return False
        return True

    return Compiled(_null_types(nullable), check, valid)


def _scalar(types: frozenset[str], minimum: int | None, maximum: int | None, *, fmt: str | None) -> Compiled:
    expected = expected_text(types)
    accepted = types | ({"integer"} if "number" in types else set())
    bounded = minimum is not None or maximum is not None
    low = minimum if minimum is not None else float("-inf")
    high = maximum if maximum is not None else float("inf")
    ints = "integer" in accepted
    date_time, quantity = fmt == "date-time", fmt == "quantity"

    def check(value: Any, path: Segments, out: list[SchemaProblem]) -> None:
        if ints and type(value) is int and low <= value <= high:
            return  # the common case, a bounded integer field, without json_type()
        kind = json_type(value)
        if kind not in accepted:
            out.append(wrong_type(path, expected, value))
        elif bounded and kind in ("integer", "number") and not low <= value <= high:
            out.append(wrong_type(path, f"{expected} from {minimum} to {maximum}", value))
        elif date_time and kind == "string" and not is_go_rfc3339(value):
            out.append(wrong_type(path, f'RFC 3339 date-time string such as "{EXAMPLE}"', value))
        elif quantity and kind in ("string", "integer", "number") and not _is_quantity(value):
            out.append(wrong_type(path, "a quantity such as \"10Gi\", \"500m\" or 4", value))

    def valid(value: Any) -> bool:
        if ints and type(value) is int:
            return low <= value <= high
        problems: list[SchemaProblem] = []
        check(value, (), problems)
        return not problems

    # Types that pass untouched: only when no bound or format needs the value itself.
    fast = frozenset().union(*(_PY_TYPES[name] for name in types if name in _PY_TYPES)) \
        if not (bounded or fmt) else _null_types("null" in types)
    return Compiled(fast, check, valid)
