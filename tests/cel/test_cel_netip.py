"""IP addresses and CIDRs exactly as the Kubernetes ip / cidr CEL libraries read them: dralint against a
reference written from Go's ``src/net/netip/netip.go`` (``ParseAddr``, ``parseIPv4``, ``parseIPv6``,
``ParsePrefix``, ``Addr.String``'s ``appendTo6``) and apiserver's ``pkg/cel/library/ip.go`` /
``cidr.go`` (``parseIPAddr``, ``parseCIDR``: no zone, no IPv4-mapped IPv6), on generated text.
"""
from __future__ import annotations

import ipaddress

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dralint.cel.errors import CelRuntimeError
from dralint.cel.lib_k8s import cidr, cidr_prefix_length, contains_ip, ip, ip_is_canonical, is_cidr, is_ip


class Refused(Exception):
    pass


def go_parse_ipv4(s: bytes) -> bytes:
    fields = [0, 0, 0, 0]
    val = pos = dig_len = 0
    for i in range(len(s)):
        c = s[i]
        if 0x30 <= c <= 0x39:
            if dig_len == 1 and val == 0:
                raise Refused("leading zero")
            val = val * 10 + c - 0x30
            dig_len += 1
            if val > 255:
                raise Refused(">255")
        elif c == ord("."):
            if i == 0 or i == len(s) - 1 or s[i - 1] == ord("."):
                raise Refused("empty field")
            if pos == 3:
                raise Refused("too long")
            fields[pos] = val
            pos += 1
            val = dig_len = 0
        else:
            raise Refused("unexpected character")
    if pos < 3:
        raise Refused("too short")
    fields[3] = val
    return bytes(fields)


def hex_value(c: int) -> int | None:
    if 0x30 <= c <= 0x39:
        return c - 0x30
    if ord("a") <= c <= ord("f"):
        return c - ord("a") + 10
    if ord("A") <= c <= ord("F"):
        return c - ord("A") + 10
    return None


def go_parse_ipv6(text: bytes) -> tuple[bytes, bytes]:
    s, zone = text, b""
    i = s.find(b"%")
    if i != -1:
        s, zone = s[:i], s[i + 1:]
        if not zone:
            raise Refused("empty zone")
    ip = bytearray(16)
    ellipsis = -1
    if len(s) >= 2 and s[0] == ord(":") and s[1] == ord(":"):
        ellipsis, s = 0, s[2:]
        if not s:
            return bytes(16), zone
    i = 0
    while i < 16:
        off, acc = 0, 0
        while off < len(s):
            h = hex_value(s[off])
            if h is None:
                break
            acc = (acc << 4) + h
            if acc > 0xFFFF:
                raise Refused(">=2^16")
            off += 1
        if off == 0:
            raise Refused("no digits")
        if off < len(s) and s[off] == ord("."):
            if ellipsis < 0 and i != 12:
                raise Refused("embedded IPv4 misplaced")
            if i + 4 > 16:
                raise Refused("no room for IPv4")
            ip[i:i + 4] = go_parse_ipv4(s)
            s = b""
            i += 4
            break
        ip[i], ip[i + 1] = acc >> 8, acc & 0xFF
        i += 2
        s = s[off:]
        if not s:
            break
        if s[0] != ord(":"):
            raise Refused("want colon")
        if len(s) == 1:
            raise Refused("colon at end")
        s = s[1:]
        if s[0] == ord(":"):
            if ellipsis >= 0:
                raise Refused("multiple ::")
            ellipsis, s = i, s[1:]
            if not s:
                break
    if s:
        raise Refused("trailing garbage")
    if i < 16:
        if ellipsis < 0:
            raise Refused("too short")
        n = 16 - i
        for j in range(i - 1, ellipsis - 1, -1):
            ip[j + n] = ip[j]
        for j in range(ellipsis + n - 1, ellipsis - 1, -1):
            ip[j] = 0
    elif ellipsis >= 0:
        raise Refused(":: expands to nothing")
    return bytes(ip), zone


def go_parse_addr(s: bytes) -> tuple[bytes, bytes]:
    """``netip.ParseAddr``: (4 or 16 bytes, zone)."""
    for c in s:
        if c == ord("."):
            return go_parse_ipv4(s), b""
        if c == ord(":"):
            return go_parse_ipv6(s)
        if c == ord("%"):
            raise Refused("missing IPv6 address")
    raise Refused("unable to parse IP")


def is_4in6(addr: bytes) -> bool:
    return len(addr) == 16 and addr[:10] == bytes(10) and addr[10:12] == b"\xff\xff"


def k8s_parse_ip(text: str) -> bytes:
    """apiserver's ``parseIPAddr``."""
    addr, zone = go_parse_addr(text.encode())
    if zone or is_4in6(addr):
        raise Refused("zone or 4in6")
    return addr


def k8s_parse_cidr(text: str) -> tuple[bytes, int]:
    """apiserver's ``parseCIDR`` over ``netip.ParsePrefix``."""
    s = text.encode()
    i = s.rfind(b"/")
    if i < 0:
        raise Refused("no /")
    addr, zone = go_parse_addr(s[:i])
    if len(addr) == 16 and zone:
        raise Refused("zone")
    bits_str = s[i + 1:]
    if len(bits_str) > 1 and not 0x31 <= bits_str[0] <= 0x39:
        raise Refused("bad bits")
    # strconv.Atoi: optional sign, then decimal digits, within int64.
    body = bits_str[1:] if bits_str[:1] in (b"+", b"-") else bits_str
    if not body or not body.isdigit() or not -(2**63) <= int(bits_str) <= 2**63 - 1:
        raise Refused("bad bits")
    bits = int(bits_str)
    if bits < 0 or bits > len(addr) * 8:
        raise Refused("out of range")
    if is_4in6(addr):
        raise Refused("4in6")
    return addr, bits


def go_addr_string(addr: bytes) -> str:
    """``Addr.String`` for addresses the library keeps (no zone, not 4in6): ``appendTo6`` for IPv6."""
    if len(addr) == 4:
        return ".".join(str(b) for b in addr)
    words = [addr[k] << 8 | addr[k + 1] for k in range(0, 16, 2)]
    zero_start = zero_end = 255
    for i in range(8):
        j = i
        while j < 8 and words[j] == 0:
            j += 1
        length = j - i
        if length >= 2 and length > zero_end - zero_start:
            zero_start, zero_end = i, j
    out = ""
    i = 0
    while i < 8:
        if i == zero_start:
            out += "::"
            i = zero_end
            if i >= 8:
                break
        elif i > 0:
            out += ":"
        out += f"{words[i]:x}"
        i += 1
    return out


def outcome(parse, text: str):
    try:
        return parse(text)
    except Refused:
        return "refused"


def ours_ip(text: str) -> bytes:
    try:
        return ip(text).addr.packed
    except CelRuntimeError:
        raise Refused("dralint") from None


def ours_cidr(text: str) -> tuple[bytes, int]:
    try:
        value = cidr(text)
    except CelRuntimeError:
        raise Refused("dralint") from None
    return value.addr.packed, cidr_prefix_length(value)


hextet = st.one_of(st.sampled_from(["0", "00", "000", "0000", "00000", "1", "ffff", "FFFF", "10000", "fFfF", "g", "",
                                    "0000001", "abcd"]),
                   st.integers(0, 0xFFFF).map(lambda n: f"{n:x}"))
octet = st.one_of(st.sampled_from(["0", "00", "01", "255", "256", "1000", "", "x"]), st.integers(0, 255).map(str))
ipv4_text = st.lists(octet, min_size=2, max_size=5).map(".".join)
ipv6_text = st.builds(lambda head, mid, tail, v4, zone: ":".join(head) + mid + ":".join(tail) + v4 + zone,
                      st.lists(hextet, max_size=8), st.sampled_from(["", ":", "::", ":::"]),
                      st.lists(hextet, max_size=8),
                      st.sampled_from(["", ":1.2.3.4", "1.2.3.4", ":ffff:1.2.3.4", ":01.2.3.4", ".1"]),
                      st.sampled_from(["", "", "%", "%eth0", "%1"]))
address_text = st.one_of(ipv4_text, ipv6_text, st.text("0123456789abcdefABCDEF:.%x ", max_size=24),
                         st.sampled_from(["::ffff:", "::ffff:0:0", "::fffe:1.2.3.4", "0:0:0:0:0:ffff:102:304"]).map(
                             lambda p: p if p.count(".") or p.endswith("304") else p + "1.2.3.4"))
bits_text = st.one_of(st.integers(0, 130).map(str), st.sampled_from(["", "+8", "-0", "08", "00", "0", "1a", "٣",
                                                                      "99999999999999999999", "9223372036854775807"]))
cidr_text = st.one_of(st.builds(lambda a, b: f"{a}/{b}", address_text, bits_text),
                      st.text("0123456789abcdef:./%+-", max_size=24))


@settings(max_examples=500, deadline=None)
@given(address_text)
@example("00001::")
@example("0000000000000001::")
@example("::1.2.3.4")
@example("1:2:3:4:5:6:1.2.3.4")
@example("1:2:3:4:5:6:7:1.2.3.4")
@example("::ffff:1.2.3.4")
@example("::ffff:102:304")
@example("1.2.3.4%eth0")
@example("fe80::1%")
@example("%")
@example("1:2:3:4:5:6:7::")
@example("1:2:3:4:5:6:7:8::")
def test_every_text_parses_as_netip_and_apiserver_parse_it(text):
    assert outcome(ours_ip, text) == outcome(k8s_parse_ip, text)
    assert is_ip(text) == (outcome(k8s_parse_ip, text) != "refused")


@settings(max_examples=400, deadline=None)
@given(cidr_text)
@example("1.2.3.4/+8")
@example("1.2.3.4/08")
@example("1.2.3.4/0")
@example("::/128")
@example("::/129")
@example("1.2.3.4/8/8")
@example("fe80::1%eth0/64")
@example("fe80::1%a/b/64")
@example("::ffff:1.2.3.4/104")
def test_every_cidr_parses_as_netip_and_apiserver_parse_it(text):
    assert outcome(ours_cidr, text) == outcome(k8s_parse_cidr, text)
    assert is_cidr(text) == (outcome(k8s_parse_cidr, text) != "refused")


@settings(max_examples=400, deadline=None)
@given(address_text)
def test_is_canonical_is_go_addr_string_equal_to_the_text(text):
    parsed = outcome(k8s_parse_ip, text)
    if parsed == "refused":
        with pytest.raises(CelRuntimeError):
            ip_is_canonical(text)
    else:
        assert ip_is_canonical(text) == (go_addr_string(parsed) == text)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**128 - 1) | st.lists(st.sampled_from([0, 0, 0, 1, 0xffff]), min_size=8, max_size=8).map(
    lambda ws: int("".join(f"{w:04x}" for w in ws), 16)))
def test_ipv6_prints_as_go_prints_it(value):
    packed = ipaddress.IPv6Address(value).packed
    if not is_4in6(packed):
        assert str(ipaddress.IPv6Address(value)) == go_addr_string(packed)


@pytest.mark.slow
@settings(max_examples=20000, deadline=None)
@given(address_text, cidr_text)
def test_many_addresses_and_cidrs_parse_as_go_parses_them(address, prefix):
    assert outcome(ours_ip, address) == outcome(k8s_parse_ip, address)
    assert outcome(ours_cidr, prefix) == outcome(k8s_parse_cidr, prefix)


@pytest.mark.parametrize("text, message", [
    ("01.2.3.4", 'IP Address "01.2.3.4" parse error during conversion from string: '
                 'ParseAddr("01.2.3.4"): IPv4 field has octet with leading zero'),
    ("1.2.3.256", 'IP Address "1.2.3.256" parse error during conversion from string: '
                  'ParseAddr("1.2.3.256"): IPv4 field has value >255'),
    ("1..2.3", 'IP Address "1..2.3" parse error during conversion from string: '
               'ParseAddr("1..2.3"): IPv4 field must have at least one digit (at ".2.3")'),
    ("1.2.3.4%eth0", 'IP Address "1.2.3.4%eth0" parse error during conversion from string: '
                     'ParseAddr("1.2.3.4%eth0"): unexpected character (at "%eth0")'),
    ("2001:db8:::68", 'IP Address "2001:db8:::68" parse error during conversion from string: '
                      'ParseAddr("2001:db8:::68"): each colon-separated field must have at least one digit '
                      '(at ":68")'),
    ("::1.2.3", 'IP Address "::1.2.3" parse error during conversion from string: '
                'ParseAddr("::1.2.3"): ParseAddr("1.2.3"): IPv4 address too short (at "1.2.3")'),
    ("fe80::1%", 'IP Address "fe80::1%" parse error during conversion from string: '
                 'ParseAddr("fe80::1%"): zone must be a non-empty string'),
    ("fe80::1%eth0", 'IP address "fe80::1%eth0" with zone value is not allowed'),
    ("::ffff:1.2.3.4", 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
    ("", 'IP Address "" parse error during conversion from string: ParseAddr(""): unable to parse IP'),
    ("a\tb", 'IP Address "a\\tb" parse error during conversion from string: ParseAddr("a\\tb"): unable to parse IP'),
])
def test_ip_errors_in_apiserver_words(text, message):
    with pytest.raises(CelRuntimeError) as info:
        ip(text)
    assert str(info.value) == message


LEAD = "network address parse error during conversion from string: "


@pytest.mark.parametrize("text, message", [
    ("192.168.0.0/", LEAD + LEAD + 'netip.ParsePrefix("192.168.0.0/"): bad bits after slash: ""'),
    ("1.2.3.4/+8", LEAD + LEAD + 'netip.ParsePrefix("1.2.3.4/+8"): bad bits after slash: "+8"'),
    ("1.2.3.4/08", LEAD + LEAD + 'netip.ParsePrefix("1.2.3.4/08"): bad bits after slash: "08"'),
    ("1.2.3.4/33", LEAD + LEAD + 'netip.ParsePrefix("1.2.3.4/33"): prefix length out of range'),
    ("1.2.3.4", LEAD + LEAD + 'netip.ParsePrefix("1.2.3.4"): no \'/\''),
    ("fe80::1%eth0/64", LEAD + LEAD + 'netip.ParsePrefix("fe80::1%eth0/64"): IPv6 zones cannot be present in a prefix'),
    ("1.2.3/8", LEAD + LEAD + 'netip.ParsePrefix("1.2.3/8"): ParseAddr("1.2.3"): IPv4 address too short'),
    ("::ffff:1.2.3.4/120", LEAD + 'IPv4-mapped IPv6 address "::ffff:1.2.3.4/120" is not allowed'),
])
def test_cidr_errors_in_apiserver_words(text, message):
    with pytest.raises(CelRuntimeError) as info:
        cidr(text)
    assert str(info.value) == message


def test_contains_ip_of_an_unparsable_string_is_no_such_overload():
    with pytest.raises(CelRuntimeError, match="^no such overload$"):
        contains_ip(cidr("10.0.0.0/8"), "10.0.0.01")


@pytest.mark.parametrize("text, canonical", [
    ("1:0:1:1:1:1:1:1", True), ("1::1:1:1:1:1:1", False), ("::", True), ("0:0::", False), ("1:0:0:1:0:0:0:1", False),
    ("1::1:0:0:0:1", False), ("1:0:0:1::1", True), ("00001::", False), ("ABCD::", False), ("abcd::", True),
    ("::102:304", True), ("::1.2.3.4", False),
])
def test_is_canonical_as_go_prints(text, canonical):
    assert ip_is_canonical(text) is canonical
