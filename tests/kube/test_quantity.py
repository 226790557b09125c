"""Quantities exactly as apimachinery parses them: dralint.kube.quantity against a reference written from
``k8s.io/apimachinery/pkg/api/resource/quantity.go`` (``parseQuantityString``, ``ParseQuantity``,
the suffixer's ``interpret`` and ``UnmarshalJSON``), statement by statement, on generated text.

The reference is slow and literal on purpose: it follows the Go code's scanning loops, its int64
fast path and its inf.Dec slow path, so that dralint's own parser (a regular expression and exact
fractions) can be checked against it wherever the two could part.
"""
from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dralint.kube.quantity import LARGEST, Quantity, QuantityError, format_readable

INT64_MAX = 2**63 - 1
MAX_INT64_FACTORS = 18
NANO = -9
DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
SUFFIX_CHARS = "eEinumkKMGTP"
GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
           "\u2028\u2029\u202f\u205f\u3000"


class Refused(Exception):
    pass


def parse_quantity_string(s: str) -> tuple[bool, str, str, str, str]:
    """(positive, value, num, denom, suffix), as ``parseQuantityString`` scans them."""
    positive, pos, end = True, 0, len(s)
    num = denom = ""
    if pos < end and s[0] in "-+":
        positive = s[0] != "-"
        pos += 1
    i = pos
    while True:                      # Zeroes
        if i >= end:
            return positive, "0", "0", "", ""
        if s[i] != "0":
            break
        pos += 1
        i += 1
    i = pos
    while True:                      # Num
        if i >= end:
            return positive, s[0:end], s[pos:end], "", ""
        if not s[i].isdigit() or not s[i].isascii():
            num, pos = s[pos:i], i
            break
        i += 1
    if not num:
        num = "0"
    if pos < end and s[pos] == ".":
        pos += 1
        i = pos
        while True:                  # Denom
            if i >= end:
                return positive, s[0:end], num, s[pos:end], ""
            if not s[i].isdigit() or not s[i].isascii():
                denom, pos = s[pos:i], i
                break
            i += 1
    value = s[0:pos]
    start = pos
    i = pos
    while True:
        if i >= end:
            return positive, value, num, denom, s[start:end]
        if s[i] not in SUFFIX_CHARS:
            pos = i
            break
        i += 1
    if pos < end and s[pos] in "-+":
        pos += 1
    i = pos
    while True:                      # Suffix
        if i >= end:
            return positive, value, num, denom, s[start:end]
        if not s[i].isdigit() or not s[i].isascii():
            raise Refused("format")
        i += 1


def interpret(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format), as ``quantitySuffixer.interpret``."""
    if suffix in DECIMAL:
        return 10, DECIMAL[suffix], "DecimalSI"
    if suffix in BINARY:
        return 2, BINARY[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        sign, body = (digits[0], digits[1:]) if digits[0] in "+-" else ("", digits)
        if not body or not body.isdigit() or not body.isascii():
            raise Refused("suffix")
        parsed = int(sign + body)
        if not -2**63 <= parsed < 2**63:
            raise Refused("suffix")          # strconv.ParseInt: out of range
        return 10, (parsed + 2**31) % 2**32 - 2**31, "DecimalExponent"   # int32(parsed)
    raise Refused("suffix")


def inf_dec(text: str) -> Fraction:
    """``inf.Dec.SetString``: an optional sign, digits, at most one point; nothing else."""
    body = text[1:] if text[:1] in "+-" else text
    whole, point, frac = body.partition(".")
    if not (whole + frac) or not (whole + frac).isdigit() or not (whole + frac).isascii():
        raise Refused("numeric")
    value = Fraction(int(whole + frac), 10 ** len(frac))
    return -value if text[:1] == "-" else value


def reference(text: str) -> Fraction:
    """The value ``ParseQuantity(text)`` holds; raises :class:`Refused` where it returns an error."""
    if not text:
        raise Refused("format")
    if text == "0":
        return Fraction(0)
    positive, value, num, denom, suf = parse_quantity_string(text)
    base, exponent, fmt = interpret(suf)
    precision, scale, mantissa = 0, 0, 1
    if fmt in ("DecimalExponent", "DecimalSI"):
        scale, precision = exponent, MAX_INT64_FACTORS - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        mantissa = 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    else:
        precision = -1
    if precision >= 0:
        scale -= len(denom)
        if scale >= NANO:
            shifted = int(num + denom)
            if shifted > INT64_MAX:
                raise Refused("numeric")
            result = shifted * mantissa
            if -2**63 <= result <= INT64_MAX:          # int64Multiply did not overflow
                return Fraction(result if positive else -result) * Fraction(10) ** scale
    amount = inf_dec(value)
    amount *= Fraction(10) ** exponent if base == 10 else 2**exponent
    negative = amount < 0
    amount = abs(amount)
    if amount and (amount * 10**9).denominator != 1:
        amount = Fraction(-(-amount.numerator * 10**9 // amount.denominator), 10**9)   # inf.RoundUp
    if fmt == "BinarySI" and amount > INT64_MAX:
        amount = Fraction(INT64_MAX)
    return -amount if negative else amount


def unmarshal(text: str) -> Fraction:
    """``Quantity.UnmarshalJSON`` of a JSON string holding ``text``: Go's TrimSpace, then ParseQuantity."""
    return reference(text.strip(GO_SPACE))


def ours(text: str) -> Fraction:
    try:
        return Quantity.parse(text).value
    except QuantityError:
        raise Refused("dralint") from None


def outcome(parse, text: str) -> Fraction | str:
    try:
        return parse(text)
    except Refused:
        return "refused"


QUANTITY_ALPHABET = "0123456789.+-eEinumkKMGTP Bx"
quantity_text = (st.text(QUANTITY_ALPHABET, max_size=12)
                 | st.builds(lambda sign, n, d, s: sign + n + d + s, st.sampled_from(["", "+", "-"]),
                             st.text("0123456789", max_size=22), st.sampled_from(["", ".", ".5", ".000000000001"]),
                             st.sampled_from(list(DECIMAL) + list(BINARY) + ["e3", "E-2", "e+40", "E9", "i", "Ki7"])))


@settings(max_examples=3000, deadline=None)
@given(quantity_text)
@example("1E")
@example("+1E")
@example("0.1E")
@example("-")
@example(".")
@example("1.G")
@example("1e4294967297")
@example("9999999999999999999Ki")
@example("0.0000000001")
@example("-0.0000000001")
@example(" 1Gi ")
@example("1E1001")
@example("-5e1000")
def test_every_text_parses_as_apimachinery_parses_it(text):
    expected = outcome(unmarshal, text)
    if isinstance(expected, Fraction) and abs(expected) > LARGEST:
        expected = LARGEST if expected > 0 else -LARGEST  # dralint's documented bound
    assert outcome(ours, text) == expected


@pytest.mark.parametrize("larger, smaller", [("1E1001", "1E1000"), ("5e1000", "1e999"), ("1e2147483647", "9e999")])
def test_quantities_beyond_the_largest_keep_their_order(larger, smaller):
    assert Quantity.parse(larger).value >= Quantity.parse(smaller).value
    assert Quantity.parse(larger).value == LARGEST and Quantity.parse("-" + larger).value == -LARGEST


@pytest.mark.parametrize("text, value", [
    ("1E", 10**18), ("2E", 2 * 10**18), ("1.5E", 15 * 10**17), ("-1E", -(10**18)), ("1Ei", 2**60),
    ("1e3", 1000), ("1E3", 1000), ("1e+3", 1000), ("5m", Fraction(1, 200)), ("1n", Fraction(1, 10**9)),
    ("-", 0), ("+", 0), (".", 0), ("1.", 1), ("1.G", 10**9), ("0.0000000001", Fraction(1, 10**9)),
    ("\t1Gi\n", 2**30), ("Ki", 0), ("Ti", 0), (".e-9", 0),
])
def test_known_quantities(text, value):
    assert Quantity.parse(text).value == value


@pytest.mark.parametrize("value, text", [(90 * 2**30, "90Gi"), (1536 * 2**20, "1536Mi"), (3 * 2**40, "3Ti"),
                                         (4 * 10**9, "4G"), (1024000, "1024k"), (1000, "1k"), (4, "4"), (0, "0"),
                                         (Fraction(1, 2), "500m"), (123456789, "123456789")])
def test_readable_amounts_take_a_binary_suffix_when_it_is_as_short(value, text):
    assert format_readable(Fraction(value)) == text
    assert Quantity.parse(text).value == value  # exact, never rounded


@pytest.mark.parametrize("text", ["", "e", "1e", "1EE", "1KiB", "1k2", "1e3.5", "Pi", "-Ei", ".e-10", "1 Gi", "--1",
                                  "1e-"])
def test_what_apimachinery_refuses(text):
    with pytest.raises(QuantityError):
        Quantity.parse(text)


@pytest.mark.parametrize(("a", "b"), [("1Gi", "1024Mi"), ("1k", "1000"), ("1e3", "1k"), (".5", "500m"), ("1500m", "1.5")])
def test_quantities_equal(a, b):
    assert Quantity.parse(a) == Quantity.parse(b)


@pytest.mark.parametrize("bad", ["200K", "10Mo", "", "1.2.3", "abc", "1 Gi", "Pi"])
def test_quantity_rejects(bad):
    with pytest.raises(QuantityError):
        Quantity.parse(bad)


@pytest.mark.parametrize(("text", "value"), [(" 1", 1), ("+", 0), ("Gi", 0)])
def test_quantity_fields_take_what_apimachinery_takes(text, value):
    # A field's text is trimmed (UnmarshalJSON); a sign or a suffix without digits is zero.
    assert Quantity.parse(text).value == value


def test_cel_quantity_text_is_not_trimmed():
    with pytest.raises(QuantityError):
        Quantity.parse_string(" 1")


def test_quantity_arithmetic_is_exact():
    assert Quantity.parse("0.1").add(Quantity.parse("0.2")).value == Fraction(3, 10)
    assert Quantity.parse("80Gi").compare(Quantity.parse("40Gi")) == 1
    assert Quantity.parse(2.5).value == Fraction(5, 2)
