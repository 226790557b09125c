"""Standard CEL functions: conversions, string predicates, ``matches``, time accessors.

``FUNCTIONS`` maps ``(name, is_member)`` to a Python callable taking the receiver (if any)
first; every failure is a :class:`CelRuntimeError` with cel-go's wording.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from .errors import CelRuntimeError
from .regex import RegexError, compile_regex
from .runtime import err, no_overload, size, type_name
from .strconv import parse_float, parse_int, parse_uint
from .strings import to_string
from .timefmt import MAX_UNIX, MIN_UNIX, TimeFormatError, TimestampOverflow, parse_duration, parse_timestamp
from .timezone import TimeZoneError, local_time
from .values import INT_MAX, INT_MIN, UINT_MAX, Duration, Optional, Timestamp, TypeValue, Uint


def to_int(v: Any) -> int:
    t = type(v)
    if t is int:
        return v
    if t is Uint:
        if v > INT_MAX:
            raise err("integer overflow")
        return int(v)
    if t is float:
        if not (INT_MIN < v < INT_MAX) or math.isnan(v):
            raise err("integer overflow")
        return int(v)
    if t is str:
        n = parse_int(v)
        if n is None:
            raise _conversion_error("int")
        return n
    if t is Timestamp:
        return v.nanos // 10**9
    raise no_overload("int")


def to_uint(v: Any) -> Uint:
    t = type(v)
    if t is Uint:
        return v
    if t is int:
        if v < 0:
            raise err("unsigned integer overflow")
        return Uint(v)
    if t is float:
        if not (-1 < v < UINT_MAX) or math.isnan(v):
            raise err("unsigned integer overflow")
        return Uint(int(v))
    if t is str:
        u = parse_uint(v)
        if u is None:
            raise _conversion_error("uint")
        return Uint(u)
    raise no_overload("uint")


def to_double(v: Any) -> float:
    t = type(v)
    if t is float:
        return v
    if t in (int, Uint):
        return float(v)
    if t is str:
        f = parse_float(v)
        if f is None:
            raise _conversion_error("double")
        return f
    raise no_overload("double")


def to_bytes(v: Any) -> bytes:
    if type(v) is bytes:
        return v
    if type(v) is str:
        return v.encode("utf-8")
    raise no_overload("bytes")


_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
          "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def _conversion_error(target: str) -> CelRuntimeError:
    """cel-go's ``String.ConvertToType`` drops the parser's error for this one text."""
    return err(f"type conversion error from 'string' to '{target}'")


def to_bool(v: Any) -> bool:
    if type(v) is bool:
        return v
    if type(v) is str:
        if v in _BOOLS:
            return _BOOLS[v]
        raise _conversion_error("bool")
    raise no_overload("bool")


def to_duration(v: Any) -> Duration:
    if type(v) is Duration:
        return v
    if type(v) is str:
        # cel-go drops Go's parse error for its own wording; Go's range is within CEL's.
        try:
            return parse_duration(v)
        except TimeFormatError:
            raise _conversion_error("google.protobuf.Duration") from None
    raise no_overload("duration")


def to_timestamp(v: Any) -> Timestamp:
    if type(v) is Timestamp:
        return v
    if type(v) is str:
        try:
            return parse_timestamp(v)
        except TimestampOverflow:
            raise err("timestamp overflow") from None
        except TimeFormatError:
            raise _conversion_error("google.protobuf.Timestamp") from None
    if type(v) is int:
        if not MIN_UNIX <= v <= MAX_UNIX:
            raise err("timestamp overflow")
        return Timestamp(v * 10**9)
    raise no_overload("timestamp")


def type_value(v: Any) -> TypeValue:
    return TypeValue(type_name(v))


def _str_args(*args: Any) -> None:
    for a in args:
        if type(a) is not str:
            raise no_overload()


def contains_string(s: Any, sub: Any) -> bool:
    _str_args(s, sub)
    return sub in s


def starts_with(s: Any, prefix: Any) -> bool:
    _str_args(s, prefix)
    return s.startswith(prefix)


def ends_with(s: Any, suffix: Any) -> bool:
    _str_args(s, suffix)
    return s.endswith(suffix)


def matches(s: Any, pattern: Any) -> bool:
    _str_args(s, pattern)
    try:
        rx = compile_regex(pattern)
    except RegexError as exc:
        raise err(str(exc)) from None
    return rx.search(s)


def _ts_getter(field: str) -> Callable[..., int]:
    def get(ts: Any, tz: Any = None) -> int:
        if type(ts) is not Timestamp or (tz is not None and type(tz) is not str):
            raise no_overload(field)
        secs, nanos = divmod(ts.nanos, 10**9)
        if field == "getMilliseconds":
            return nanos // 10**6
        try:
            t = local_time(secs, tz if tz is not None else "UTC")
        except TimeZoneError as exc:
            raise err(str(exc)) from None
        return {"getFullYear": t.year, "getMonth": t.month - 1, "getDate": t.day, "getDayOfMonth": t.day - 1,
                "getDayOfWeek": t.weekday, "getDayOfYear": t.year_day - 1, "getHours": t.hour,
                "getMinutes": t.minute, "getSeconds": t.second}[field]
    return get


def _getter(field: str) -> Callable[..., int]:
    ts_get = _ts_getter(field)

    def get(v: Any, tz: Any = None) -> int:
        if type(v) is Duration and tz is None:
            n = v.nanos
            unit = {"getHours": 3600 * 10**9, "getMinutes": 60 * 10**9, "getSeconds": 10**9, "getMilliseconds": 10**6}
            q = abs(n) // unit[field]
            return -q if n < 0 else q
        return ts_get(v, tz)
    return get


def _size(v: Any) -> int:
    if type(v) is Optional:
        raise no_overload("size")
    return size(v)


FUNCTIONS: dict[tuple[str, bool], Callable[..., Any]] = {
    ("size", False): _size,
    ("size", True): _size,
    ("contains", True): contains_string,
    ("startsWith", True): starts_with,
    ("endsWith", True): ends_with,
    ("matches", True): matches,
    ("matches", False): matches,
    ("int", False): to_int,
    ("uint", False): to_uint,
    ("double", False): to_double,
    ("string", False): to_string,
    ("bytes", False): to_bytes,
    ("bool", False): to_bool,
    ("duration", False): to_duration,
    ("timestamp", False): to_timestamp,
    ("dyn", False): lambda v: v,
    ("type", False): type_value,
}
for _name in ("getFullYear", "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
              "getHours", "getMinutes", "getSeconds", "getMilliseconds"):
    FUNCTIONS[(_name, True)] = _getter(_name)
