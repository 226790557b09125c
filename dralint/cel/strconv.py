"""The parts of Go's ``strconv`` that CEL's conversions and error texts rely on: ``Quote`` (what ``%q``
prints), ``ParseInt`` / ``ParseUint`` in base 10 and ``ParseFloat`` for float64."""
from __future__ import annotations

import math
import re

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
            '"': '\\"', "\\": "\\\\"}
_INT = re.compile(r"[+-]?[0-9]+")
_UINT = re.compile(r"[0-9]+")
_SPECIAL = re.compile(r"[+-]?(?:inf|infinity)|nan", re.IGNORECASE | re.ASCII)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+")


def quote(s: str) -> str:
    """A double-quoted Go literal: printable runes as they are, the rest as ``\\x``, ``\\u`` or ``\\U`` escapes."""
    out = []
    for c in s:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif c.isprintable():
            out.append(c)
        elif ord(c) < 0x80:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return '"' + "".join(out) + '"'


def parse_int(s: str) -> int | None:
    """``strconv.ParseInt(s, 10, 64)``, or None where Go returns an error (syntax or range)."""
    if not _INT.fullmatch(s) or len(s.lstrip("+-0")) > 19:
        return None
    value = int(s)
    return value if -(2**63) <= value < 2**63 else None


def parse_uint(s: str) -> int | None:
    """``strconv.ParseUint(s, 10, 64)``: digits only, no sign, or None."""
    if not _UINT.fullmatch(s) or len(s.lstrip("0")) > 20:
        return None
    value = int(s)
    return value if value < 2**64 else None


def parse_float(s: str) -> float | None:
    """``strconv.ParseFloat(s, 64)``, or None where Go returns an error: decimal and hexadecimal (``p``
    exponent required) forms, underscores between digits, ``inf``/``infinity`` with a sign, ``nan``
    without one; a value past float64's range is a range error."""
    if _SPECIAL.fullmatch(s):
        return float(s)
    if "_" in s and not _underscores_ok(s):
        return None
    plain = s.replace("_", "")
    if _DECIMAL.fullmatch(plain):
        value = float(plain)
    elif _HEX.fullmatch(plain):
        try:
            value = float.fromhex(plain)
        except OverflowError:
            return None
    else:
        return None
    return None if math.isinf(value) else value


def _underscores_ok(s: str) -> bool:
    """Go's ``underscoreOK``: an underscore only between digits, or between a base prefix and a digit."""
    body = s[1:] if s[:1] in ("+", "-") else s
    saw, i, hex_digits = "^", 0, False
    if len(body) >= 2 and body[0] == "0" and body[1].lower() in "box":
        saw, i, hex_digits = "0", 2, body[1].lower() == "x"
    for c in body[i:]:
        if "0" <= c <= "9" or (hex_digits and "a" <= c.lower() <= "f"):
            saw = "0"
        elif c == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"
