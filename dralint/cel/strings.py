"""String helpers shared by the CEL libraries: ``string(v)`` for every type that prints (IP and
CIDR included), Go's ``%g`` for doubles, and the string forms of ``indexOf`` / ``lastIndexOf``, which the
Kubernetes lists library also answers. They sit below the libraries so that none imports another.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from .runtime import err, no_overload
from .values import CIDRValue, Duration, IPAddr, Timestamp, Uint


def need_str(*vals: Any) -> None:
    """No overload unless every value is a CEL string (an exact str: a Key or other subclass is not)."""
    for v in vals:
        if type(v) is not str:
            raise no_overload()


def need_int(*vals: Any) -> None:
    """No overload unless every value is a CEL int (an exact int: bool and Uint are not)."""
    for v in vals:
        if type(v) is not int:
            raise no_overload()


def go_float_g(f: float) -> str:
    """Go's ``fmt.Sprintf("%g", f)`` (shortest digits; exponent form below 1e-4 or from 1e21)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    r = repr(f)
    sign = "-" if r.startswith("-") else ""
    r = r.lstrip("-")
    mant, _, exp_s = r.partition("e")
    exp = int(exp_s) if exp_s else 0
    whole, _, frac = mant.partition(".")
    digits = (whole + frac).lstrip("0")
    # Decimal exponent of the first significant digit.
    if whole.strip("0"):
        point = len(whole.lstrip("0")) + exp
    else:
        point = -(len(frac) - len(frac.lstrip("0"))) + exp
    digits = digits.rstrip("0") or "0"
    x = point - 1
    eprec = max(len(digits), 6) if len(digits) <= 21 else len(digits)
    if x < -4 or x >= eprec:
        m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{m}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


STRINGERS: dict[type, Callable[[Any], str]] = {
    IPAddr: lambda v: str(v.addr),
    CIDRValue: lambda v: f"{v.addr}/{v.prefix}",
}


def to_string(v: Any) -> str:
    """CEL's ``string(v)``: the text of a scalar, a time value, an IP or a CIDR."""
    t = type(v)
    if t is str:
        return v
    if t is bool:
        return "true" if v else "false"
    if t in (int, Uint):
        return str(int(v))
    if t is float:
        return go_float_g(v)
    if t is bytes:
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            raise err("invalid UTF-8 in bytes, cannot convert to string") from None
    if t is Timestamp:
        return str(v)
    if t is Duration:
        return _duration_string(v)
    fn = STRINGERS.get(t)
    if fn is not None:
        return fn(v)
    raise no_overload("string")


def _duration_string(d: Duration) -> str:
    secs = d.nanos / 1e9
    text = repr(secs) if secs != int(secs) else str(int(secs))
    return text + "s"


def string_index_of(s: Any, sub: Any, offset: Any = None) -> int:
    """``s.indexOf(sub[, offset])``: the first index of ``sub`` at or after ``offset``, or -1."""
    need_str(s, sub)
    start = 0
    if offset is not None:
        need_int(offset)
        if offset < 0 or offset > len(s):
            raise err(f"index out of range: {offset}")
        start = offset
    return s.find(sub, start)


def string_last_index_of(s: Any, sub: Any, offset: Any = None) -> int:
    """``s.lastIndexOf(sub[, offset])``: the last index of ``sub`` starting at or before ``offset``, or -1."""
    need_str(s, sub)
    end = len(s)
    if offset is not None:
        need_int(offset)
        if offset < 0 or offset >= len(s) and not (offset == 0 and not s):
            raise err(f"index out of range: {offset}")
        end = offset
    if sub == "":
        return end
    return s.rfind(sub, 0, end + len(sub))
