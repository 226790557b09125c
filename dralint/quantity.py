"""Kubernetes ``resource.Quantity``: exact parsing, comparison and arithmetic.

Values are kept as exact fractions, so ``1Gi``, ``1024Mi`` and ``1073741824`` compare equal and
``0.1`` plus ``0.2`` is exactly ``0.3``, as the Go type's inf.Dec arithmetic is.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from fractions import Fraction

from .bounded_cache import bounded_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 10**3), "": Fraction(1),
            "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
            "P": Fraction(10**15), "E": Fraction(10**18)}
# Same shape as apimachinery's splitter: sign, digits with at most one dot, then a suffix.
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))((?:[KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
QUANTITY_SYNTAX = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@dataclass(frozen=True, order=False)
class Quantity:
    """An exact quantity; ``text`` keeps the user's spelling for messages."""

    value: Fraction
    text: str

    @classmethod
    def parse(cls, text: str | int | float) -> "Quantity":
        """Parse a quantity string (or a JSON number) the way apimachinery does."""
        return _parse(text if isinstance(text, str) else _number_text(text))

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
# Decimal exponents beyond this are kept at it: a value of 10^1000 already exceeds anything a
# device or a request can hold, and the exact power would take unbounded time and memory.
_MAX_EXPONENT = 1000
# Python refuses int() of longer digit strings; longer mantissas are read in pieces of this size.
_DIGIT_CHUNK = 4000
_LONGEST_BITS = 13_000  # about 3,900 decimal digits


# A fleet spells the same few quantities everywhere. An entry keeps the text and an exact value of
# about as many digits; caller text may be long (up to ~3,900 digits parse), so bytes bound it.
QUANTITY_CACHE_BYTES = 4 << 20


@bounded_cache(QUANTITY_CACHE_BYTES, lambda text: 2 * sys.getsizeof(text) + 512)
def _parse(text: str) -> Quantity:
    stripped = text.strip() if isinstance(text, str) else text
    if stripped != text or not text:
        raise QuantityError(f"quantities must match the regular expression '{QUANTITY_SYNTAX}'")
    m = _QUANTITY.match(text)
    if not m or m.group(1) in ("+", "-", ".", "+.", "-."):
        raise QuantityError(f"quantities must match the regular expression '{QUANTITY_SYNTAX}'")
    number, suffix = m.group(1), m.group(2) or ""
    negative = number.startswith("-")
    whole, _, frac = number.lstrip("+-").partition(".")
    digits = whole + frac
    value = Fraction(_int(digits), 10 ** len(frac))
    if suffix in _BINARY:
        value *= _BINARY[suffix]
    elif suffix[:1] in ("e", "E"):
        value = _scaled(value, _exponent(suffix[1:]), len(digits))
    else:
        value *= _DECIMAL[suffix]
    return Quantity(-_canonical(value, suffix in _BINARY) if negative else _canonical(value, suffix in _BINARY),
                    text)


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
    return value * Fraction(10) ** min(exponent, _MAX_EXPONENT)


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
