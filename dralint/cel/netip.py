"""IP addresses and prefixes read exactly as Go's ``net/netip`` reads them (``ParseAddr``,
``ParsePrefix``), with Go's error texts; the Kubernetes ip and cidr CEL libraries build on these.

Python's ``ipaddress`` disagrees with Go at the edges (an IPv6 field of more than four hex digits
such as ``00001::`` is fine in Go), so only the parsed value is handed to ``ipaddress``.
"""
from __future__ import annotations

import ipaddress

from .strconv import quote as go_quote

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_HEX = "0123456789abcdefABCDEF"
_INT_MAX = 2**63 - 1


class NetipError(ValueError):
    """A text ``net/netip`` refuses; the message is Go's."""


def _addr_error(text: str, msg: str, at: str = "") -> NetipError:
    where = f" (at {go_quote(at)})" if at else ""
    return NetipError(f"ParseAddr({go_quote(text)}): {msg}{where}")


def parse_addr(s: str) -> tuple[Address, str]:
    """``netip.ParseAddr``: (address, IPv6 zone or ""). The first ``.``, ``:`` or ``%`` picks the family."""
    for c in s:
        if c == ".":
            return _ipv4(s), ""
        if c == ":":
            return _ipv6(s)
        if c == "%":
            raise _addr_error(s, "missing IPv6 address")
    raise _addr_error(s, "unable to parse IP")


def _ipv4(s: str) -> ipaddress.IPv4Address:
    fields: list[int] = []
    val = digits = 0
    for i, c in enumerate(s):
        if "0" <= c <= "9":
            if digits == 1 and val == 0:
                raise _addr_error(s, "IPv4 field has octet with leading zero")
            val = val * 10 + ord(c) - 48
            digits += 1
            if val > 255:
                raise _addr_error(s, "IPv4 field has value >255")
        elif c == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                raise _addr_error(s, "IPv4 field must have at least one digit", s[i:])
            if len(fields) == 3:
                raise _addr_error(s, "IPv4 address too long")
            fields.append(val)
            val = digits = 0
        else:
            raise _addr_error(s, "unexpected character", s[i:])
    if len(fields) < 3:
        raise _addr_error(s, "IPv4 address too short")
    return ipaddress.IPv4Address(bytes([*fields, val]))


def _ipv6(text: str) -> tuple[ipaddress.IPv6Address, str]:
    s, pct, zone = text.partition("%")
    if pct and not zone:
        raise _addr_error(text, "zone must be a non-empty string")
    groups: list[int] = []          # 16-bit fields, an embedded IPv4 address counting as two
    ellipsis = -1                   # how many fields precede "::"
    if s.startswith("::"):
        ellipsis, s = 0, s[2:]
        if not s:
            return ipaddress.IPv6Address(0), zone
    while len(groups) < 8:
        off, acc = 0, 0
        while off < len(s) and s[off] in _HEX:
            acc = acc * 16 + int(s[off], 16)
            off += 1
            if acc > 0xFFFF:
                raise _addr_error(text, "IPv6 field has value >=2^16", s)
        if off == 0:
            raise _addr_error(text, "each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and len(groups) != 6:
                raise _addr_error(text, "embedded IPv4 address must replace the final 2 fields of the address", s)
            if len(groups) > 6:
                raise _addr_error(text, "too many hex fields to fit an embedded IPv4 at the end of the address", s)
            try:
                v4 = int(_ipv4(s))
            except NetipError as exc:
                raise _addr_error(text, str(exc), s) from None
            groups += [v4 >> 16, v4 & 0xFFFF]
            s = ""
            break
        groups.append(acc)
        s = s[off:]
        if not s:
            break
        if s[0] != ":":
            raise _addr_error(text, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _addr_error(text, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise _addr_error(text, "multiple :: in address", s)
            ellipsis, s = len(groups), s[1:]
            if not s:
                break
    if s:
        raise _addr_error(text, "trailing garbage after address", s)
    if len(groups) < 8:
        if ellipsis < 0:
            raise _addr_error(text, "address string too short")
        groups = groups[:ellipsis] + [0] * (8 - len(groups)) + groups[ellipsis:]
    elif ellipsis >= 0:
        raise _addr_error(text, "the :: must expand to at least one field of zeros")
    value = 0
    for g in groups:
        value = value << 16 | g
    return ipaddress.IPv6Address(value), zone


def parse_prefix(s: str) -> tuple[Address, int]:
    """``netip.ParsePrefix``: (address as written, prefix bits); no zone, bits in decimal without a
    sign or leading zero, split at the last ``/``."""
    def error(msg: str) -> NetipError:
        return NetipError(f"netip.ParsePrefix({go_quote(s)}): {msg}")

    slash = s.rfind("/")
    if slash < 0:
        raise error("no '/'")
    try:
        addr, zone = parse_addr(s[:slash])
    except NetipError as exc:
        raise error(str(exc)) from None
    if addr.version == 6 and zone:
        raise error("IPv6 zones cannot be present in a prefix")
    bits_text = s[slash + 1:]
    # strconv.Atoi after Go's own guard against a sign and leading zeros.
    if (len(bits_text) > 1 and not "1" <= bits_text[0] <= "9") or not bits_text \
            or not all("0" <= c <= "9" for c in bits_text) or len(bits_text) > 19 or int(bits_text) > _INT_MAX:
        raise error("bad bits after slash: " + go_quote(bits_text))
    bits = int(bits_text)
    if bits > addr.max_prefixlen:
        raise error("prefix length out of range")
    return addr, bits
