"""cel-go's compile-time check of ``format`` (``stringFormatValidator``, ext/formatting.go).

A ``format`` call whose receiver is a string literal and whose single argument is a list
literal is interpolated at check time with the checked types standing in for the values: the
clauses and precisions are parsed, each clause's argument type is checked, and unused
arguments are counted (:mod:`.strformat` has the grammar). The first failure of a call is
reported — at the offending list element for a type the clause does not take, at the call
(its ``(``) for everything else — and checking goes on with the next call.

What each clause takes (strings version < 4, ``stringFormatChecker``): ``%s`` lists, maps,
ints, uints, doubles, bools, strings, timestamps, bytes, durations, types and null, looking
into list and map literals element by element; ``%d`` and ``%o`` ints and uints; ``%f`` and
``%e`` doubles and strings (for "NaN", "Infinity", "-Infinity"); ``%b`` ints, uints and bools;
``%x``/``%X`` ints, uints, strings and bytes. ``dyn`` passes every clause; ``any`` (a DRA
attribute before list-type attributes) passes none, nor do Kubernetes types (quantity,
semver, ip, cidr, url, named formats) or optionals.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import ast as A
from . import types as T
from .checker import CheckResult
from .strformat import ClauseError, FormatError, interpolate

_STRING_KINDS = frozenset({"list", "map", "int", "uint", "double", "bool", "string", "timestamp", "bytes",
                           "duration", "type", "null"})
_ACCEPTS: dict[str, frozenset[str]] = {
    "s": _STRING_KINDS,
    "d": frozenset({"int", "uint"}),
    "f": frozenset({"double", "string"}),
    "e": frozenset({"double", "string"}),
    "b": frozenset({"int", "uint", "bool"}),
    "x": frozenset({"int", "uint", "string", "bytes"}),
    "X": frozenset({"int", "uint", "string", "bytes"}),
    "o": frozenset({"int", "uint"}),
}
_MESSAGES = {
    "s": "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, "
         "and timestamps, was given {}",
    "d": "decimal clause can only be used on integers, was given {}",
    "f": "fixed-point clause can only be used on doubles, was given {}",
    "e": "scientific clause can only be used on doubles, was given {}",
    "b": "only integers and bools can be formatted as binary, was given {}",
    "x": "only integers, byte buffers, and strings can be formatted as hex, was given {}",
    "X": "only integers, byte buffers, and strings can be formatted as hex, was given {}",
    "o": "octal clause can only be used on integers, was given {}",
}
_NAMES = {"null": "null_type", "duration": "google.protobuf.Duration", "timestamp": "google.protobuf.Timestamp",
          "any": "google.protobuf.Any"}
PANIC = ("format() on a string that is not a literal: the cel-go of this release (before v0.21) panics while "
         "compiling it, so the expression gets an internal error instead of a verdict (fixed in Kubernetes 1.32)")


def type_name(t: T.Type) -> str:
    """cel-go's ``Type.TypeName()``: the runtime type name, without parameters."""
    if t.kind in ("opaque", "object"):
        return t.name
    return _NAMES.get(t.kind, t.kind)


def is_format_call(e: A.Call, checked: CheckResult) -> bool:
    """``matchConstantFormatStringWithListLiteralArgs`` less the receiver test: a member
    ``format`` with one list-literal argument."""
    return (e.function == "format" and e.target is not None and e.id not in checked.namespaced
            and len(e.args) == 1 and isinstance(e.args[0], A.ListLit))


def check_format(call: A.Call, fmt: str, elements: list[A.Expr], checked: CheckResult) -> tuple[int, str] | None:
    """(offset, message) of the first problem cel-go finds in ``call`` — a format call (see
    :func:`is_format_call`) whose receiver is the literal ``fmt`` — or None."""
    checker = _Checker(elements, checked)
    try:
        interpolate(fmt, checker)
    except FormatError as exc:
        return call.offset, exc.message
    except ClauseError as exc:
        return exc.where.offset, exc.message
    if len(elements) > checker.requested:
        return call.offset, (f"too many arguments supplied to string.format (expected {checker.requested}, "
                             f"got {len(elements)})")
    return None


@dataclass
class _Checker:
    """``stringFormatChecker``: arguments are list elements, checked by their static type."""

    elements: list[A.Expr]
    checked: CheckResult
    requested: int = field(default=0)

    def arg(self, index: int) -> A.Expr | None:
        self.requested += 1
        return self.elements[index] if index < len(self.elements) else None

    def size(self) -> int:
        return len(self.elements)

    def clause(self, verb: str, precision: int | None, value: A.Expr) -> str:
        bad = self._verify_string(value) if verb == "s" else (None if self._takes(value, _ACCEPTS[verb]) else value)
        if bad is not None:
            raise ClauseError(_MESSAGES[verb].format(type_name(self.checked.type_of(bad))), bad)
        return ""

    def _takes(self, e: A.Expr, kinds: frozenset[str]) -> bool:
        kind = self.checked.type_of(e).kind
        # Only dyn itself passes: cel-go compares with cel.DynType, so `any` is just another kind.
        return kind in ("dyn", "typeparam") or kind in kinds

    def _verify_string(self, e: A.Expr) -> A.Expr | None:
        """``verifyString``: the first node (``e`` or inside its literal) ``%s`` does not take."""
        stack = [e]
        while stack:
            cur = stack.pop()
            if not self._takes(cur, _STRING_KINDS):
                return cur
            if isinstance(cur, (A.ListLit, A.MapLit)):
                stack.extend(reversed(A.children(cur)))
        return None
