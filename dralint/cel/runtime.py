"""Core CEL run-time semantics: equality, ordering, arithmetic, conversions, indexing.

Errors are raised as :class:`CelRuntimeError` with cel-go's wording; the compiler's ``&&``,
``||``, ``?:`` and comprehension closures catch them where CEL absorbs errors.
"""
from __future__ import annotations

import math
from typing import Any

from ..kube.quantity import Quantity
from .errors import CelRuntimeError
from .values import (INT_MAX, INT_MIN, UINT_MAX, URL, CIDRValue, Duration, IPAddr, NamedFormat, Optional, Semver,
                     Timestamp, TypeValue, Uint)

NO_OVERLOAD = "no such overload"


class DomainMap(dict):
    """``device.attributes`` / ``device.capacity``: an unknown domain reads as an empty map.

    ``in``, ``size()`` and iteration see the real keys (Kubernetes' wrapper only changes Find).
    """

    __slots__ = ()

    def __missing__(self, key: object) -> dict:
        return {}


def err(message: str) -> CelRuntimeError:
    return CelRuntimeError(message)


def no_overload(detail: str = "") -> CelRuntimeError:
    return CelRuntimeError(f"{NO_OVERLOAD}: {detail}" if detail else NO_OVERLOAD)


# -- type names ------------------------------------------------------------------------------
_TYPE_NAMES: dict[type, str] = {
    bool: "bool", int: "int", Uint: "uint", float: "double", str: "string", bytes: "bytes",
    type(None): "null_type", list: "list", tuple: "list", dict: "map", DomainMap: "map",
    Duration: "google.protobuf.Duration", Timestamp: "google.protobuf.Timestamp", Optional: "optional_type",
    TypeValue: "type", Quantity: "kubernetes.Quantity", Semver: "kubernetes.Semver", URL: "kubernetes.URL",
    IPAddr: "net.IP", CIDRValue: "net.CIDR", NamedFormat: "kubernetes.NamedFormat",
}
_GO_NAMES: dict[type, str] = {
    bool: "types.Bool", int: "types.Int", Uint: "types.Uint", float: "types.Double", str: "types.String",
    bytes: "types.Bytes", type(None): "types.Null", Duration: "types.Duration", Timestamp: "types.Timestamp",
    Optional: "*types.Optional", TypeValue: "*types.Type", Quantity: "cel.Quantity", Semver: "cel.Semver",
    URL: "cel.URL", IPAddr: "cel.IP", CIDRValue: "cel.CIDR", NamedFormat: "*library.namedFormat",
}


def type_name(v: Any) -> str:
    """The CEL type name of a run-time value (``type(v)``, result conversion messages)."""
    return _TYPE_NAMES.get(type(v), type(v).__name__)


def go_type_name(v: Any) -> str:
    """What Go's ``%T`` prints for the cel-go value (used in 'expected iterable type')."""
    return _GO_NAMES.get(type(v), "types." + type(v).__name__)


# -- equality and ordering -------------------------------------------------------------------
_NUMERIC = (int, Uint, float)
_OWN_EQUALITY = {Quantity, Semver, URL, IPAddr, CIDRValue}  # Kubernetes types answer "no such overload" to foreign operands


def equal(a: Any, b: Any) -> bool:
    """cel-go's heterogeneous equality (``1 == 1.0`` true, ``1 == "a"`` false)."""
    ta, tb = type(a), type(b)
    if ta is tb:
        if ta is list or ta is tuple:
            return _list_equal(a, b)
        if ta is dict or ta is DomainMap:
            return _map_equal(a, b)
        if ta is float:
            return a == b
        return a == b
    if ta in _OWN_EQUALITY:
        raise no_overload()
    if ta in _NUMERIC and tb in _NUMERIC:
        return a == b
    if ta in (list, tuple) and tb in (list, tuple):
        return _list_equal(a, b)
    if ta in (dict, DomainMap) and tb in (dict, DomainMap):
        return _map_equal(a, b)
    return False


def _list_equal(a: Any, b: Any) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        try:
            if not equal(x, y):
                return False
        except CelRuntimeError:
            return False
    return True


def _map_equal(a: dict, b: dict) -> bool:
    if len(a) != len(b):
        return False
    for k, v in a.items():
        found, other = lookup_key(b, k)
        if not found:
            return False
        try:
            if not equal(v, other):
                return False
        except CelRuntimeError:
            return False
    return True


def lookup_key(m: dict, k: Any) -> tuple[bool, Any]:
    """Map lookup with CEL key semantics (bool keys never match ints; numeric keys cross types)."""
    tk = type(k)
    if tk is bool:
        for key, v in m.items():
            if type(key) is bool and key == k:
                return True, v
        return False, None
    if tk is float:
        if k != k or math.isinf(k) or k != int(k):
            return False, None
        k = int(k)
        tk = int
    if tk in (int, Uint):
        for key, v in m.items():
            if type(key) in (int, Uint) and key == k:
                return True, v
        return False, None
    try:
        if k in m:
            return True, m[k]
    except TypeError:
        return False, None
    return False, None


def compare(a: Any, b: Any) -> int:
    """-1/0/1 for ordered CEL values; raises 'no such overload' for unordered pairs."""
    ta, tb = type(a), type(b)
    if ta is tb and ta in (int, Uint, float, str, bytes, bool):
        return (a > b) - (a < b)
    if ta in _NUMERIC and tb in _NUMERIC:
        return (a > b) - (a < b)
    if ta is tb and ta in (Duration, Timestamp):
        return (a.nanos > b.nanos) - (a.nanos < b.nanos)
    raise no_overload()


def less(a: Any, b: Any) -> bool:
    if type(a) is float or type(b) is float:
        _ordered_check(a, b)
        return a < b
    return compare(a, b) < 0


def less_eq(a: Any, b: Any) -> bool:
    if type(a) is float or type(b) is float:
        _ordered_check(a, b)
        return a <= b
    return compare(a, b) <= 0


def greater(a: Any, b: Any) -> bool:
    if type(a) is float or type(b) is float:
        _ordered_check(a, b)
        return a > b
    return compare(a, b) > 0


def greater_eq(a: Any, b: Any) -> bool:
    if type(a) is float or type(b) is float:
        _ordered_check(a, b)
        return a >= b
    return compare(a, b) >= 0


def _ordered_check(a: Any, b: Any) -> None:
    # NaN compares false; only numbers may meet a double.
    if type(a) not in _NUMERIC or type(b) not in _NUMERIC:
        raise no_overload()


# -- arithmetic ------------------------------------------------------------------------------
def _int(v: int) -> int:
    if v < INT_MIN or v > INT_MAX:
        raise err("integer overflow")
    return v


def _uint(v: int) -> Uint:
    if v < 0 or v > UINT_MAX:
        raise err("unsigned integer overflow")
    return Uint(v)


def add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return _int(a + b)
    if ta is tb:
        if ta is str or ta is bytes or ta is float:
            return a + b
        if ta is Uint:
            return _uint(a + b)
        if ta is list or ta is tuple:
            return list(a) + list(b)
        if ta is Duration:
            return Duration(_int(a.nanos + b.nanos))
    if ta in (list, tuple) and tb in (list, tuple):
        return list(a) + list(b)
    if ta is Timestamp and tb is Duration:
        return _timestamp(a.nanos + b.nanos)
    if ta is Duration and tb is Timestamp:
        return _timestamp(a.nanos + b.nanos)
    raise no_overload("_+_")


def sub(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return _int(a - b)
    if ta is tb:
        if ta is float:
            return a - b
        if ta is Uint:
            return _uint(a - b)
        if ta is Duration:
            return Duration(_int(a.nanos - b.nanos))
        if ta is Timestamp:
            return Duration(_int(a.nanos - b.nanos))
    if ta is Timestamp and tb is Duration:
        return _timestamp(a.nanos - b.nanos)
    raise no_overload("_-_")


def _timestamp(n: int) -> Timestamp:
    from .timefmt import MAX_TS, MIN_TS

    if not MIN_TS <= n <= MAX_TS:
        raise err("timestamp overflow")
    return Timestamp(n)


def mul(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return _int(a * b)
    if ta is tb and ta is float:
        return a * b
    if ta is tb and ta is Uint:
        return _uint(a * b)
    raise no_overload("_*_")


def div(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is tb and ta in (int, Uint):
        if b == 0:
            raise err("division by zero")
        q = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            q = -q
        return _int(q) if ta is int else Uint(q)
    if ta is tb and ta is float:
        if b == 0:
            if a == 0 or a != a:
                return math.nan
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    raise no_overload("_/_")


def mod(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is tb and ta in (int, Uint):
        if b == 0:
            raise err("modulus by zero")
        r = abs(a) % abs(b)
        r = -r if a < 0 else r
        return r if ta is int else Uint(r)
    raise no_overload("_%_")


def neg(a: Any) -> Any:
    if type(a) is int:
        return _int(-a)
    if type(a) is float:
        return -a
    raise no_overload("-_")


def logical_not(a: Any) -> bool:
    if type(a) is bool:
        return not a
    raise no_overload("!_")


# -- containers ------------------------------------------------------------------------------
def size(v: Any) -> int:
    if type(v) in (str, bytes, list, tuple, dict, DomainMap):
        return len(v)
    raise no_overload("size")


def index(container: Any, key: Any) -> Any:
    """``container[key]`` for lists and maps (and optionals of them)."""
    t = type(container)
    if t is DomainMap:
        if type(key) is not str:
            raise no_overload("_[_]")
        return container[key]
    if t is dict:
        found, v = lookup_key(container, key)
        if not found:
            raise err(f"no such key: {_key_text(key)}")
        return v
    if t is list or t is tuple:
        if type(key) not in (int, Uint):
            raise no_overload("_[_]")
        if key < 0 or key >= len(container):
            raise err(f"index out of bounds: {key}")
        return container[key]
    if t is Optional:
        if not container.present:
            return container
        try:
            return Optional(True, index(container.value, key))
        except CelRuntimeError:
            return Optional(False)
    raise no_overload("_[_]")


def opt_index(container: Any, key: Any) -> Optional:
    """``container[?key]``: optional.of the element, or optional.none() when absent."""
    t = type(container)
    if t is Optional:
        if not container.present:
            return container
        container = container.value
        t = type(container)
    if t is DomainMap:
        return Optional(True, container[key])
    if t is dict:
        found, v = lookup_key(container, key)
        return Optional(True, v) if found else Optional(False)
    if t in (list, tuple):
        if type(key) not in (int, Uint):
            raise no_overload("_[?_]")
        return Optional(True, container[key]) if 0 <= key < len(container) else Optional(False)
    raise no_overload("_[?_]")


def _key_text(k: Any) -> str:
    if type(k) is bool:
        return "true" if k else "false"
    return str(k)


def contains(container: Any, v: Any) -> bool:
    """The ``in`` operator."""
    t = type(container)
    if t in (list, tuple):
        for x in container:
            try:
                if equal(x, v):
                    return True
            except CelRuntimeError:
                continue
        return False
    if t in (dict, DomainMap):
        return lookup_key(container, v)[0]
    raise no_overload("@in")


def select(operand: Any, field: str) -> Any:
    """``operand.field`` on a map (missing key: 'no such key') or an optional of one."""
    t = type(operand)
    if t is DomainMap:
        return operand[field]
    if t is dict:
        try:
            return operand[field]
        except KeyError:
            raise err(f"no such key: {field}") from None
    if t is Optional:
        if not operand.present:
            return operand
        inner = operand.value
        if type(inner) in (dict, DomainMap) and (field in inner or type(inner) is DomainMap):
            return Optional(True, inner[field])
        return Optional(False)
    raise no_overload(f"select '{field}' on {type_name(operand)}")


def has_field(operand: Any, field: str) -> bool:
    t = type(operand)
    if t is DomainMap:
        return True  # the wrapper's Find reports every domain as present
    if t is dict:
        return field in operand
    raise no_overload(f"has() on {type_name(operand)}")


def opt_select(operand: Any, field: str) -> Optional:
    t = type(operand)
    if t is Optional:
        if not operand.present:
            return operand
        operand = operand.value
        t = type(operand)
    if t is DomainMap:
        return Optional(True, operand[field])
    if t is dict:
        return Optional(True, operand[field]) if field in operand else Optional(False)
    raise no_overload(f"select '{field}' on {type_name(operand)}")
