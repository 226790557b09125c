"""Kubernetes ``resource.Quantity``: exact parsing, comparison and arithmetic.

Values are kept as exact fractions, so ``1Gi``, ``1024Mi`` and ``1073741824`` compare equal and
``0.1`` plus ``0.2`` is exactly ``0.3``, as the Go type's inf.Dec arithmetic is.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from fractions import Fraction

from ..bounded_cache import bounded_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_POWER = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL = {suffix: Fraction(10) ** power for suffix, power in _DECIMAL_POWER.items()}
# What apimachinery's scanner (parseQuantityString) takes: a sign, digits, at most one dot and more
# digits (any of them may be missing: "-", "." and "1." are zero, zero and one), then suffix letters,
# a sign and digits. Which suffixes mean something is its suffixer's business (_suffix below).
_SCAN = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
QUANTITY_SYNTAX = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
# Go's strings.TrimSpace, which Quantity.UnmarshalJSON applies to a field's text before parsing it.
_GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"
_EXPONENT = re.compile(r"[eE][+-]?[0-9]+")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@dataclass(frozen=True, order=False)
class Quantity:
    """An exact quantity; ``text`` keeps the user's spelling for messages."""

    value: Fraction
    text: str

    @classmethod
    def parse(cls, text: str | int | float) -> "Quantity":
        """A quantity field's value (a string or a JSON number) as the API server decodes it
        (``Quantity.UnmarshalJSON``: surrounding white space trimmed, then ``ParseQuantity``)."""
        return _parse(text.strip(_GO_SPACE) if isinstance(text, str) else _number_text(text))

    @classmethod
    def parse_string(cls, text: str) -> "Quantity":
        """``resource.ParseQuantity(text)`` itself, as CEL's ``quantity()`` calls it: nothing trimmed."""
        return _parse(text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def compare(self, other: "Quantity") -> int:
        """-1, 0 or 1, like ``Quantity.Cmp``."""
        return (self.value > other.value) - (self.value < other.value)

    def __lt__(self, other: "Quantity") -> bool:
        return self.value < other.value

    def __le__(self, other: "Quantity") -> bool:
        return self.value <= other.value

    def __gt__(self, other: "Quantity") -> bool:
        return self.value > other.value

    def __ge__(self, other: "Quantity") -> bool:
        return self.value >= other.value

    def add(self, other: "Quantity") -> "Quantity":
        total = self.value + other.value
        return Quantity(total, format_value(total))

    def sub(self, other: "Quantity") -> "Quantity":
        diff = self.value - other.value
        return Quantity(diff, format_value(diff))

    def is_integer(self) -> bool:
        return self.value.denominator == 1

    def milli_exact(self) -> bool:
        """True when the value is a whole number of thousandths (representable as a milli value)."""
        return (self.value * 1000).denominator == 1

    def __str__(self) -> str:
        return self.text


def _number_text(n: int | float) -> str:
    if isinstance(n, bool):
        raise QuantityError(f"{n!r} is not a quantity")
    if isinstance(n, float):
        if n != n or n in (float("inf"), float("-inf")):
            raise QuantityError(f"{n!r} is not a quantity")
        # repr gives "2.5" or "1e+20"; the quantity grammar wants "1e20".
        mantissa, _, exponent = repr(n).partition("e")
        return f"{mantissa}e{int(exponent)}" if exponent else mantissa
    return str(n)


_NANO = 10**9
_MAX_INT64 = 2**63 - 1
# Magnitudes beyond 10^1000 are kept as 10^1000 (LARGEST): that already exceeds anything a device or
# a request can hold, and the exact power of an exponent up to 2^31 (which Go's inf.Dec keeps as a
# scale, for free) would take unbounded time and memory. Order is kept: a larger text is never less.
_MAX_EXPONENT = 1000
LARGEST = Fraction(10) ** _MAX_EXPONENT
# Python refuses int() of longer digit strings; longer mantissas are read in pieces of this size.
_DIGIT_CHUNK = 4000
_LONGEST_BITS = 13_000  # about 3,900 decimal digits


# A fleet spells the same few quantities everywhere. An entry keeps the text and an exact value of
# about as many digits; caller text may be long (up to ~3,900 digits parse), so bytes bound it.
QUANTITY_CACHE_BYTES = 4 << 20


@bounded_cache(QUANTITY_CACHE_BYTES, lambda text: 2 * sys.getsizeof(text) + 512)
def _parse(text: str) -> Quantity:
    """``ParseQuantity``: its scanner's shape, its suffixer's meanings, its value rounded up to a nano
    and, for binary suffixes, capped at 2^63-1 (a test checks it against a line-by-line reading)."""
    m = _SCAN.fullmatch(text) if text else None
    if m is None:
        raise QuantityError(f"quantities must match the regular expression '{QUANTITY_SYNTAX}'")
    sign, whole, frac, suffix = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    binary = suffix in _BINARY
    if not (binary or suffix in _DECIMAL or (len(suffix) > 1 and _EXPONENT.fullmatch(suffix))):
        raise QuantityError("unable to parse quantity's suffix")
    digits = whole + frac
    if not digits:
        # No digit at all ("-", ".", "Ki"): ParseQuantity's int64 fast path reads zero where it applies
        # (a suffix of at most Ti, or a power of ten of at least 10^-9); its exact path finds no number.
        exponent = _BINARY[suffix].bit_length() - 1 if binary else \
            _DECIMAL_POWER[suffix] if suffix in _DECIMAL_POWER else _exponent(suffix[1:])
        if (binary and 15 - 1 - int(exponent * 3 / 10) - 1 < 0) or (not binary and exponent < -9):
            raise QuantityError("unable to parse numeric part of quantity")
        return Quantity(Fraction(0), text)
    value = Fraction(_int(digits), 10 ** len(frac))
    if binary:
        value *= _BINARY[suffix]
    elif suffix in _DECIMAL:     # "E" alone is exa, not an exponent
        value *= _DECIMAL[suffix]
    else:
        value = _scaled(value, _exponent(suffix[1:]), len(digits))
    value = min(_canonical(value, binary), LARGEST)
    return Quantity(-value if sign == "-" else value, text)


def _int(digits: str) -> int:
    value = 0
    for start in range(0, len(digits), _DIGIT_CHUNK):
        chunk = digits[start:start + _DIGIT_CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return value


def _exponent(text: str) -> int:
    """ParseQuantity reads the exponent as an int64 (beyond that the suffix is refused) and keeps
    its low 32 bits (1e4294967297 is 1e1 up to 1.37; 1.38 refuses such exponents, kubernetes#141203)."""
    exponent = int(text)
    if not -2**63 <= exponent < 2**63:
        raise QuantityError(f"the exponent {text} of a quantity must fit in 64 bits")
    return (exponent + 2**31) % 2**32 - 2**31


def _scaled(value: Fraction, exponent: int, digits: int) -> Fraction:
    if exponent < 0 and -exponent > digits + 10:
        # Far below a nano whatever the mantissa: the round-up to 1n below decides the value.
        return Fraction(1, _NANO * 10) if value else Fraction(0)
    if exponent > _MAX_EXPONENT:
        return LARGEST if value else Fraction(0)
    return value * Fraction(10) ** exponent


def _canonical(value: Fraction, binary: bool) -> Fraction:
    """ParseQuantity's bounds on a magnitude: rounded up to whole nanos, and a binary-suffixed value
    capped at 2^63-1."""
    if (value * _NANO).denominator != 1:
        value = Fraction(-(-value.numerator * _NANO // value.denominator), _NANO)
    if binary and value > _MAX_INT64:
        value = Fraction(_MAX_INT64)
    return value


def format_value(value: Fraction) -> str:
    """A canonical-enough spelling for computed values (exact; decimal suffixes where whole)."""
    if abs(value.numerator).bit_length() > _LONGEST_BITS:
        # Too long to print digit by digit (Python refuses such int-to-str conversions): its order.
        return f"{'-' if value < 0 else ''}~1e{int(abs(value.numerator).bit_length() * 0.30103)}"
    if value.denominator == 1:
        n = value.numerator
        for suffix, factor in (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
            if n and n % factor == 0:
                return f"{n // factor}{suffix}"
        return str(n)
    for suffix, factor in (("m", 10**3), ("u", 10**6), ("n", 10**9)):
        scaled = value * factor
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    return f"{float(value)!r}"


def format_readable(value: Fraction) -> str:
    """A computed amount as people write it, exactly: a whole multiple of 1Ki in the largest binary
    suffix that divides it (``96636764160`` is ``90Gi``) when that is no longer than the decimal
    spelling of :func:`format_value` (``4G`` stays ``4G``, ``1024k`` is not ``1000Ki``)."""
    decimal = format_value(value)
    if value.denominator != 1 or not value or abs(value.numerator).bit_length() > _LONGEST_BITS:
        return decimal
    n = value.numerator
    for suffix, factor in reversed(_BINARY.items()):
        if n % factor == 0:
            binary = f"{n // factor}{suffix}"
            return binary if len(binary) <= len(decimal) else decimal
    return decimal
