"""Kubernetes ``resource.Quantity``: exact parsing, comparison and arithmetic.

Values are kept as exact fractions, so ``1Gi``, ``1024Mi`` and ``1073741824`` compare equal and
``0.1`` plus ``0.2`` is exactly ``0.3``, as the Go type's inf.Dec arithmetic is.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

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


@lru_cache(maxsize=4096)
def _parse(text: str) -> Quantity:
    stripped = text.strip() if isinstance(text, str) else text
    if stripped != text or not text:
        raise QuantityError(f"quantities must match the regular expression '{QUANTITY_SYNTAX}'")
    m = _QUANTITY.match(text)
    if not m or m.group(1) in ("+", "-", ".", "+.", "-."):
        raise QuantityError(f"quantities must match the regular expression '{QUANTITY_SYNTAX}'")
    number, suffix = m.group(1), m.group(2) or ""
    value = Fraction(number)
    if suffix in _BINARY:
        value *= _BINARY[suffix]
    elif suffix[:1] in ("e", "E"):
        value *= Fraction(10) ** int(suffix[1:])
    else:
        value *= _DECIMAL[suffix]
    return Quantity(value, text)


def format_value(value: Fraction) -> str:
    """A canonical-enough spelling for computed values (exact; decimal suffixes where whole)."""
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
