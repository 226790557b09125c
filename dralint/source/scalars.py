"""Scalar resolution exactly as Kubernetes reads YAML (sigs.k8s.io/yaml over goyaml.v2, then JSON).

goyaml.v2 resolves a plain scalar to bool / null / int / float / string with YAML 1.1-style
rules (but no sexagesimal numbers, and timestamps stay strings), sigs.k8s.io/yaml turns keys
into strings, and the result travels as JSON text, so a float that is a whole number below
1e21 arrives as an integer. The rules are listed in docs/yaml-parsing.md.
"""
from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from dataclasses import dataclass
from typing import Any

TAG_PREFIX = "tag:yaml.org,2002:"
STR, BOOL, INT, FLOAT, NULL = "str", "bool", "int", "float", "null"
TIMESTAMP, BINARY, MERGE = "timestamp", "binary", "merge"
RESOLVABLE = frozenset({STR, BOOL, INT, FLOAT, NULL, TIMESTAMP})

_WORDS: dict[str, Any] = {}
for _words, _value in (
    (("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    (("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    (("", "~", "null", "Null", "NULL"), None),
    ((".nan", ".NaN", ".NAN"), math.nan),
    ((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    (("-.inf", "-.Inf", "-.INF"), -math.inf),
):
    for _word in _words:
        _WORDS[_word] = _value

HINTED = frozenset("+-0123456789yYnNtTfFoO~.")
"""First characters after which goyaml.v2 tries anything but a string (its resolveTable)."""
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")
_DIGITS = {2: re.compile(r"[01]+"), 8: re.compile(r"[0-7]+"), 10: re.compile(r"[0-9]+"),
           16: re.compile(r"[0-9a-fA-F]+")}
_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:(?:[Tt]| )[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]{1,9})?"
    r"(?:Z|[-+][0-9]{2}:[0-9]{2})?)?"
)
INT64_MIN, INT64_MAX, UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


class ScalarError(ValueError):
    """A scalar that Kubernetes refuses (message in goyaml's words)."""


@dataclass(frozen=True)
class Unsigned:
    """Marker for goyaml's uint64 results (only matters for map keys, which reject them)."""

    value: int


def _go_parse_int(text: str, base: int, signed: bool) -> int | None:
    """Go's strconv.ParseInt / ParseUint (64-bit) for ``base`` 0 (prefixes) or an explicit base."""
    sign = 1
    body = text
    if signed and body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if base == 0:
        low = body[:2].lower()
        if low == "0x":
            base, body = 16, body[2:]
        elif low == "0o":
            base, body = 8, body[2:]
        elif low == "0b":
            base, body = 2, body[2:]
        elif body[:1] == "0" and len(body) > 1:
            base, body = 8, body[1:]
        else:
            base = 10
    if not body or not _DIGITS[base].fullmatch(body):
        return None
    value = sign * int(body, base)
    if signed:
        return value if INT64_MIN <= value <= INT64_MAX else None
    return value if value <= UINT64_MAX else None


def _go_parse_float(text: str) -> float | None:
    """strconv.ParseFloat for the decimal forms that reach it; None on overflow, like Go's error."""
    value = float(text)
    return None if math.isinf(value) else value


def _resolve_number(text: str) -> Any:
    """goyaml.v2's int / float attempts for a scalar starting with a digit or a sign; None if neither."""
    plain = text.replace("_", "")
    if not plain:
        return None
    value = _go_parse_int(plain, 0, signed=True)
    if value is not None:
        return value
    value = _go_parse_int(plain, 0, signed=False)
    if value is not None:
        return Unsigned(value)
    if _YAML_STYLE_FLOAT.fullmatch(plain):
        number = _go_parse_float(plain)
        if number is not None:
            return number
    if plain.startswith("0b"):
        # goyaml hands the rest to ParseInt(…, 2), which accepts its own sign: "0b-1" is -1.
        value = _go_parse_int(plain[2:], 2, signed=True)
        if value is not None:
            return value
        value = _go_parse_int(plain[2:], 2, signed=False)
        if value is not None:
            return Unsigned(value)
    elif plain.startswith("-0b"):
        value = _go_parse_int("-" + plain[3:], 2, signed=True)
        if value is not None:
            return value
    return None


def resolve_untyped(text: str, tag: str = "") -> tuple[str, Any]:
    """goyaml.v2's ``resolve``: (short tag, Go-like value) for ``text`` under ``tag`` ('' = implicit)."""
    hint = text[0] in HINTED if text else True
    if hint and tag not in (STR, BINARY):
        if text in _WORDS:
            value = _WORDS[text]
            if value is None:
                return NULL, None
            if isinstance(value, bool):
                return BOOL, value
            return FLOAT, value
        first = text[0]
        if first == ".":
            if _DOT_FLOAT.fullmatch(text):
                number = _go_parse_float(text)
                if number is not None:
                    return FLOAT, number
        elif first not in "yYnNtTfFoO~":
            if tag in ("", TIMESTAMP) and _TIMESTAMP.fullmatch(text):
                return TIMESTAMP, text
            number = _resolve_number(text)
            if number is not None:
                return (FLOAT if isinstance(number, float) else INT), number
    return STR, text


def short_tag(tag: str) -> str:
    """``tag:yaml.org,2002:int`` → ``int``; other tags unchanged."""
    return tag[len(TAG_PREFIX):] if tag.startswith(TAG_PREFIX) else tag


def resolve_plain(text: str) -> Any:
    """The Kubernetes value of an untagged plain scalar (see :func:`to_json_value`)."""
    return resolve_untyped(text)[1]


def resolve_tagged(tag: str, text: str) -> Any:
    """The Go value of a scalar with an explicit tag; raises :class:`ScalarError` where goyaml fails."""
    short = short_tag(tag)
    if short == BINARY:
        try:
            raw = base64.b64decode(text.replace("\r", "").replace("\n", ""), validate=True)
        except (binascii.Error, ValueError):
            raise ScalarError("!!binary value contains invalid base64 data") from None
        # Go's JSON encoder replaces every invalid byte with U+FFFD, one for one.
        decoded = raw.decode("utf-8", "surrogateescape")
        return re.sub("[\udc80-\udcff]", "\ufffd", decoded)
    if short not in RESOLVABLE:
        return text
    rtag, value = resolve_untyped(text, short)
    if short in ("", rtag, STR):
        return value
    if short == FLOAT and rtag == INT and not isinstance(value, Unsigned):
        return float(value)
    raise ScalarError(f"cannot decode !!{rtag} `{text}` as a !!{short}")


def to_json_value(value: Any) -> Any:
    """What a Go scalar becomes after json.Marshal and a JSON read.

    Whole floats below 1e21 are written without a fraction and so come back as integers;
    NaN and infinities cannot be written at all (:class:`ScalarError`).
    """
    if isinstance(value, Unsigned):
        return value.value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ScalarError(f"json: unsupported value: {_go_float_name(value)}")
        if value == math.floor(value) and abs(value) < 1e21:
            return int(value)
    return value


def _go_float_name(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"


def key_to_string(value: Any) -> str:
    """sigs.k8s.io/yaml's map-key conversion; raises :class:`ScalarError` for null / uint64 keys."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _format_float32_g(value)
    if value is None:
        raise ScalarError("unsupported map key of type <nil> (JSON keys must be strings)")
    if isinstance(value, Unsigned):
        raise ScalarError(f"unsupported map key of type uint64: {value.value}")
    raise ScalarError(f"unsupported map key: {value!r}")


def _format_float32_g(value: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'g', -1, 32)`` with goyaml's names for infinities and NaN."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.inf if value > 0 else -math.inf
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if math.copysign(1.0, single) < 0 else "0"
    for precision in range(1, 10):
        text = f"{single:.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exponent_text = text.split("e")
    exponent = int(exponent_text)
    negative = mantissa.startswith("-")
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    sign = "-" if negative else ""
    if exponent < -4 or exponent >= 6:
        frac = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{frac}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    whole = digits[: exponent + 1].ljust(exponent + 1, "0")
    frac = digits[exponent + 1:]
    return f"{sign}{whole}.{frac}" if frac else f"{sign}{whole}"
