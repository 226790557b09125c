"""``<string>.format(<list>)`` as cel-go's strings extension below version 4 does it.

Kubernetes enables ``ext.Strings(ext.StringsVersion(2))`` (apiserver ``environment/base.go``,
1.29 to at least 1.37), so its ``format`` is cel-go's ``ext/formatting.go``, not the
spec-conformant ``formatting_v2.go`` that version 4 switches to. The clause grammar is walked
byte by byte exactly as ``parseFormatString`` does, so the same first error wins, at compile
time (:mod:`.format_check`) and at run time (:func:`string_format`):

* ``%%`` is a literal ``%``; any other ``%`` takes the next argument, then an optional
  precision ``.digits``, then one of ``s d f e b o x X``;
* ``%`` at the end is "unexpected end of string", a missing argument "index N out of range",
  a bad precision or verb "could not parse formatting clause: ...", a value the verb does not
  take "error during formatting: ...".

Run-time rendering (``stringFormatter``): ``%s`` prints a value as ``string()`` does, lists and
maps as CEL literals (strings quoted like Go's ``%q``, doubles with six decimals); ``%d`` ints
and uints; ``%f``/``%e`` doubles and the strings ``NaN``, ``Infinity``, ``-Infinity`` through
golang.org/x/text's en-US printer (digit grouping, ``∞``, and for ``%e`` a superscript
exponent, with the "precision" used as a field width); ``%b`` ints, uints and bools; ``%x``/``%X``
ints, uints, strings and bytes; ``%o`` ints and uints.
"""
from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from .errors import CelRuntimeError
from .runtime import DomainMap, no_overload, type_name
from .strings import to_string
from .values import Duration, Timestamp, TypeValue, Uint

VERBS = frozenset("sdfebxXo")
_INT_MAX = 2**63 - 1  # Go's int on the 64-bit platforms Kubernetes ships


class FormatError(Exception):
    """A failure of the whole call (parse errors, argument count): reported at the call."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ClauseError(Exception):
    """A value a clause does not take; ``where`` says which argument (the checker's node)."""

    def __init__(self, message: str, where: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where


class Interpolator(Protocol):
    """cel-go's ``formatListArgs`` plus ``formatStringInterpolator`` in one object."""

    def arg(self, index: int) -> Any:
        """The argument for the ``index``-th clause (may raise FormatError)."""

    def size(self) -> int:
        """How many arguments there are."""

    def clause(self, verb: str, precision: int | None, value: Any) -> str:
        """``value`` rendered by ``verb`` (may raise ClauseError)."""


def interpolate(fmt: str, args: Interpolator) -> str:
    """``parseFormatString``: walk ``fmt`` byte by byte, rendering each clause through ``args``."""
    data = fmt.encode("utf-8", "surrogatepass")
    out = bytearray()
    i = index = 0
    while i < len(data):
        if data[i] != 0x25:
            out.append(data[i])
            i += 1
            continue
        if i + 1 < len(data) and data[i + 1] == 0x25:
            out.append(0x25)
            i += 2
            continue
        value = args.arg(index)
        if i + 1 >= len(data):
            raise FormatError("unexpected end of string")
        if index >= args.size():
            raise FormatError(f"index {index} out of range")
        read, verb, precision = parse_clause(data, i + 1)
        try:
            text = args.clause(verb, precision, value)
        except ClauseError as exc:
            raise ClauseError(f"error during formatting: {exc.message}", exc.where) from None
        out += text.encode("utf-8", "surrogatepass")
        i += 1 + read
        index += 1
    return out.decode("utf-8", "surrogatepass")


def parse_clause(data: bytes, start: int) -> tuple[int, str, int | None]:
    """``parseFormattingClause`` at ``data[start]`` (just after the ``%``): bytes read, verb,
    precision (None when absent). Raises FormatError with cel-go's wording."""
    j = start
    precision = None
    if data[j] == 0x2E:
        j += 1
        while True:
            if j >= len(data):
                raise FormatError("could not parse formatting clause: error while parsing precision: "
                                  "could not find end of precision specifier")
            if not 0x30 <= data[j] <= 0x39:
                break
            j += 1
        precision = _atoi(data[start + 1:j].decode("ascii"))
    verb = chr(data[j])  # a byte, as Go's rune(formatStr[i]): a UTF-8 lead byte prints as Latin-1
    if verb not in VERBS:
        raise FormatError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')
    return j + 1 - start, verb, precision


def _atoi(digits: str) -> int:
    prefix = ("could not parse formatting clause: error while parsing precision: "
              "error while converting precision to integer: ")
    if not digits:
        raise FormatError(prefix + 'strconv.Atoi: parsing "": invalid syntax')
    value = int(digits)
    if value > _INT_MAX:
        raise FormatError(prefix + f'strconv.Atoi: parsing "{digits}": value out of range')
    return value


# -- run time --------------------------------------------------------------------------------

@dataclass
class _Values:
    """``stringArgList`` plus ``stringFormatter``: the evaluator's view of the arguments."""

    values: list | tuple

    def arg(self, index: int) -> Any:
        if index >= len(self.values):
            raise FormatError(f"index {index} out of range")
        return self.values[index]

    def size(self) -> int:
        return len(self.values)

    def clause(self, verb: str, precision: int | None, value: Any) -> str:
        return _RENDER[verb](value, precision)


def string_format(fmt: Any, args: Any) -> str:
    """The ``string_format`` overload: CelRuntimeError with cel-go's text on any failure."""
    if type(fmt) is not str or type(args) not in (list, tuple):
        raise no_overload("format")
    try:
        return interpolate(fmt, _Values(args))
    except (FormatError, ClauseError) as exc:
        raise CelRuntimeError(exc.message) from None


def _string(v: Any, _precision: int | None = None) -> str:
    """``FormatString``: what ``%s`` prints at the top level."""
    t = type(v)
    if t in (list, tuple):
        return "[" + ", ".join(_member(x) for x in v) + "]"
    if t in (dict, DomainMap):
        return _map(v)
    if v is None:
        return "null"
    if t is TypeValue:
        return v.name
    if t in (str, bool, int, Uint, float, bytes, Timestamp, Duration):
        try:
            return to_string(v)
        except CelRuntimeError as exc:
            raise ClauseError(f'could not convert argument "{exc.message}" to string') from None
    raise ClauseError(_STRING_ONLY + type_name(v))


def _member(v: Any) -> str:
    """``clauseForType`` then ``quoteForCEL``: a value inside a list or map, as a CEL literal."""
    t = type(v)
    if t in (int, Uint):
        return str(int(v))
    if t is str:
        return go_quote(v)
    if t is bytes:
        return "b" + go_quote(_string(v))
    if t in (bool, TypeValue) or v is None:
        return _string(v)
    if t is Timestamp or t is Duration:
        return f"{'timestamp' if t is Timestamp else 'duration'}({go_quote(to_string(v))})"
    if t in (list, tuple, dict, DomainMap):
        return _string(v)
    if t is float:
        text = _go_fixed(v, 6)
        return go_quote(text) if math.isnan(v) or math.isinf(v) else text
    raise ClauseError(f"no formatting function for {type_name(v)}")


def _map(m: dict) -> str:
    pairs = []
    for k, v in m.items():
        if type(k) in (str, bool):
            key = go_quote(k) if type(k) is str else _string(k)
        elif type(k) in (int, Uint):
            key = str(int(k))
        else:
            raise ClauseError(f"no formatting function for map key of type {type_name(k)}")
        pairs.append((key, _member(v)))
    pairs.sort(key=lambda p: p[0])
    return "{" + ", ".join(f"{k}:{v}" for k, v in pairs) + "}"


def _go_fixed(v: float, precision: int) -> str:
    """Go's ``fmt.Sprintf("%.Nf")`` (no grouping; ``+Inf``/``-Inf``/``NaN``)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return f"{v:.{precision}f}"


def go_quote(s: str) -> str:
    """Go's ``strconv.Quote`` (``%q``): printable runes kept, the rest escaped."""
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():  # Go's IsPrint: letters, marks, numbers, punctuation, symbols, ASCII space
            out.append(ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif c < 0x20 or c == 0x7F:
            out.append(f"\\x{c:02x}")
        elif 0xD800 <= c <= 0xDFFF:
            out.append("\\ufffd")  # not a valid rune: Go writes the replacement character
        elif c < 0x10000:
            out.append(f"\\u{c:04x}")
        else:
            out.append(f"\\U{c:08x}")
    out.append('"')
    return "".join(out)


_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
_STRING_ONLY = ("string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, "
                "durations, and timestamps, was given ")
_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _double(v: Any, what: str) -> float:
    """A double for ``%f``/``%e``; the three special strings convert as ``double()`` would."""
    if type(v) is float:
        return v
    if type(v) is str and v in _SPECIAL:
        return _SPECIAL[v]
    raise ClauseError(f"{what} clause can only be used on doubles, was given {type_name(v)}")


def _decimal(v: Any, _precision: int | None) -> str:
    if type(v) in (int, Uint):
        return str(int(v))
    raise ClauseError(f"decimal clause can only be used on integers, was given {type_name(v)}")


def _fixed(v: Any, precision: int | None) -> str:
    """x/text's en-US ``%.Nf``: grouped digits, ``NaN``, ``∞``.

    The printer rounds the value to N decimals (as strconv does), then keeps ``uint8(N)`` of
    them (message/print.go ``initDecimal``): beyond 255 the shown decimals wrap around.
    """
    x = _double(v, "fixed-point")
    n = 6 if precision is None else precision
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    shown = n & 0xFF
    if shown == n:
        return f"{x + 0.0:,.{n}f}"  # + 0.0: x/text prints -0 as 0
    ctx = decimal.Context(prec=1500, rounding=decimal.ROUND_HALF_EVEN)
    d = decimal.Decimal(x + 0.0)
    if n < 1100:  # a double has at most 1074 decimals: rounding beyond that changes nothing
        d = d.quantize(decimal.Decimal(1).scaleb(-n), context=ctx)
    d = d.quantize(decimal.Decimal(1).scaleb(-shown), context=ctx)
    return f"{d:,.{shown}f}"


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _scientific(v: Any, precision: int | None) -> str:
    """x/text's en-US ``%Ne``: cel-go writes the precision where Go expects a width
    (``"%%%de"``), so six decimals always, padded with spaces to ``uint16(N)`` runes."""
    x = _double(v, "scientific")
    width = (6 if precision is None else precision) & 0xFFFF
    if math.isnan(x):
        body = "NaN"
    elif math.isinf(x):
        body = "∞" if x > 0 else "-∞"
    else:
        mantissa, _, exp = f"{x + 0.0:.6e}".partition("e")
        e = int(exp)
        body = f"{mantissa}\u202f×\u202f10{'⁻' if e < 0 else ''}{f'{abs(e):02d}'.translate(_SUPERSCRIPT)}"
    return body.rjust(width)


def _binary(v: Any, _precision: int | None) -> str:
    if type(v) in (int, Uint):
        return format(int(v), "b")
    if type(v) is bool:
        return "1" if v else "0"
    raise ClauseError(f"only integers and bools can be formatted as binary, was given {type_name(v)}")


def _hex(upper: bool) -> Callable[[Any, int | None], str]:
    def render(v: Any, _precision: int | None) -> str:
        if type(v) in (int, Uint):
            text = format(int(v), "x")
        elif type(v) in (str, bytes):
            text = (v.encode("utf-8", "surrogatepass") if type(v) is str else v).hex()
        else:
            raise ClauseError("only integers, byte buffers, and strings can be formatted as hex, "
                              f"was given {type_name(v)}")
        return text.upper() if upper else text
    return render


def _octal(v: Any, _precision: int | None) -> str:
    if type(v) in (int, Uint):
        return format(int(v), "o")
    raise ClauseError(f"octal clause can only be used on integers, was given {type_name(v)}")


_RENDER: dict[str, Callable[[Any, int | None], str]] = {
    "s": _string, "d": _decimal, "f": _fixed, "e": _scientific, "b": _binary, "x": _hex(False), "X": _hex(True),
    "o": _octal,
}
