"""int(), uint(), double() and bool() of a string exactly as cel-go converts them: dralint against a
reference written from Go's ``strconv`` (``ParseInt``/``ParseUint`` base 10, ``ParseFloat``'s ``special``,
``readFloat`` and ``underscoreOK`` in atof.go, ``ParseBool``) and cel-go's ``String.ConvertToType``,
which words every failure "type conversion error from 'string' to '<type>'".
"""
from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dralint.cel.errors import CelRuntimeError
from dralint.cel.lib_std import to_bool, to_double, to_int, to_uint


class Refused(Exception):
    pass


def go_special(s: str) -> float | None:
    """``special``: a signed inf/infinity or an unsigned nan, ASCII case-insensitive."""
    body, sign = s, 1.0
    if s[:1] in ("+", "-"):
        sign, body = (-1.0 if s[0] == "-" else 1.0), s[1:]
        return sign * math.inf if body.lower() in ("inf", "infinity") and body.isascii() else None
    if body.isascii() and body.lower() in ("inf", "infinity"):
        return math.inf
    if body.isascii() and body.lower() == "nan":
        return math.nan
    return None


def underscore_ok(s: str) -> bool:
    saw, i = "^", 0
    if s[:1] in ("+", "-"):
        s = s[1:]
    hexa = False
    if len(s) >= 2 and s[0] == "0" and s[1] in "bBoOxX":
        i, saw, hexa = 2, "0", s[1] in "xX"
    while i < len(s):
        c = s[i]
        if "0" <= c <= "9" or hexa and c in "abcdefABCDEF":
            saw = "0"
        elif c == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
        i += 1
    return saw != "_"


def go_read_float(s: str) -> bool:
    """Whether ``readFloat`` consumes all of ``s`` with ok == true."""
    i, underscores = 0, False
    if i < len(s) and s[i] in "+-":
        i += 1
    base, exp_char = 10, "e"
    if i + 2 < len(s) and s[i] == "0" and s[i + 1] in "xX":
        base, exp_char, i = 16, "p", i + 2
    sawdot = sawdigits = False
    while i < len(s):
        c = s[i]
        if c == "_":
            underscores = True
        elif c == ".":
            if sawdot:
                break
            sawdot = True
        elif "0" <= c <= "9" or base == 16 and c in "abcdefABCDEF":
            sawdigits = True
        else:
            break
        i += 1
    if not sawdigits:
        return False
    if i < len(s) and s[i].lower() == exp_char:
        i += 1
        if i >= len(s):
            return False
        if s[i] in "+-":
            i += 1
        if i >= len(s) or not "0" <= s[i] <= "9":
            return False
        while i < len(s) and ("0" <= s[i] <= "9" or s[i] == "_"):
            underscores = underscores or s[i] == "_"
            i += 1
    elif base == 16:
        return False
    if underscores and not underscore_ok(s[:i]):
        return False
    return i == len(s)


def go_parse_float(s: str) -> float:
    special = go_special(s)
    if special is not None:
        return special
    if not go_read_float(s):
        raise Refused("syntax")
    plain = s.replace("_", "")
    value = float.fromhex(plain) if "x" in plain.lower() else float(plain)   # both correctly rounded
    if math.isinf(value):
        raise Refused("range")
    return value


def go_parse_int(s: str) -> int:
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body or not all("0" <= c <= "9" for c in body) or not -(2**63) <= int(s) < 2**63:
        raise Refused("int")
    return int(s)


def go_parse_uint(s: str) -> int:
    if not s or not all("0" <= c <= "9" for c in s) or int(s) >= 2**64:
        raise Refused("uint")
    return int(s)


def ours(convert):
    def run(text: str):
        try:
            return convert(text)
        except CelRuntimeError as exc:
            assert str(exc).startswith("type conversion error from 'string' to '")
            raise Refused("dralint") from None
    return run


def outcome(parse, text: str):
    try:
        value = parse(text)
    except (Refused, OverflowError):
        return "refused"
    return "nan" if isinstance(value, float) and math.isnan(value) else (value, math.copysign(1, value)
                                                                         if isinstance(value, float) else 0)


float_text = st.one_of(
    st.text("0123456789._eE+-xXpPabcfinINtyY ", max_size=14),
    st.builds(lambda sign, mant, exp: sign + mant + exp, st.sampled_from(["", "+", "-"]),
              st.sampled_from(["1", "1_000", "1__0", "_1", "1_", ".5", "5.", ".", "0x1.8", "0x_1", "0x", "0X1F",
                               "1.7976931348623157", "1.7976931348623159", "4.9", "2.4", "00"]),
              st.sampled_from(["", "e308", "e-324", "e-325", "e1_0", "e", "e+", "p3", "p-1074", "p1024", "E5"])),
    st.sampled_from(["inf", "+Inf", "-INFINITY", "infin", "nan", "NaN", "-nan", "+nan", "ınf", "1\n"]),
)
int_text = st.one_of(st.text("0123456789+-_ x\n", max_size=22),
                     st.sampled_from(["9223372036854775807", "9223372036854775808", "-9223372036854775808",
                                      "18446744073709551615", "18446744073709551616", "+5", "-0", "٣"]))


@settings(max_examples=500, deadline=None)
@given(float_text)
@example("1e400")
@example("0x1p1024")
@example("1_000.5")
@example("0x1.8p1")
@example("0x1.8")
@example("1\n")
def test_double_of_a_string_is_go_parse_float(text):
    assert outcome(ours(to_double), text) == outcome(go_parse_float, text)


@settings(max_examples=300, deadline=None)
@given(int_text)
def test_int_and_uint_of_a_string_are_go_parse_int_and_parse_uint(text):
    assert outcome(ours(to_int), text) == outcome(go_parse_int, text)
    assert outcome(ours(to_uint), text) == outcome(go_parse_uint, text)


@pytest.mark.parametrize("convert, text, target", [
    (to_int, "x", "int"), (to_int, "5\n", "int"), (to_uint, "+5", "uint"), (to_uint, "-0", "uint"),
    (to_double, "1e400", "double"), (to_double, "-nan", "double"), (to_bool, "yes", "bool"),
])
def test_refusals_in_cel_go_words(convert, text, target):
    with pytest.raises(CelRuntimeError) as info:
        convert(text)
    assert str(info.value) == f"type conversion error from 'string' to '{target}'"


@pytest.mark.parametrize("text, value", [("1_000", 1000.0), ("0x1.8p1", 3.0), ("+Infinity", math.inf), (".5", 0.5),
                                         ("5.", 5.0), ("1e-400", 0.0), ("0x_1p0", 1.0)])
def test_known_doubles(text, value):
    assert to_double(text) == value
