"""Kubernetes CEL libraries: quantity, semver, url, regex, lists, includes, ip, cidr, format."""
from __future__ import annotations

import ipaddress
import re
from fractions import Fraction
from typing import Any, Callable
from urllib.parse import parse_qsl, quote, urlsplit

from ..kube.quantity import Quantity, QuantityError
from ..kube.validation import (is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, is_qualified_name,
                               is_valid_label_value, name_is_dns1035_label, name_is_dns_label, name_is_dns_subdomain)
from .errors import CelRuntimeError
from .netip import NetipError, parse_addr, parse_prefix
from .strconv import quote as go_quote
from .regex import RegexError, compile_regex
from .runtime import compare, equal, err, no_overload
from .strings import string_index_of, string_last_index_of
from .values import INT_MAX, INT_MIN, URL, CIDRValue, IPAddr, NamedFormat, Optional, Semver, SemverError

MAX_INCLUDES = 48  # ResourceSliceMaxAttributeValuesPerDevice


# -- quantity --------------------------------------------------------------------------------
def quantity(s: Any) -> Quantity:
    if type(s) is not str:
        raise no_overload("quantity")
    try:
        return Quantity.parse_string(s)
    except QuantityError as exc:
        raise err(str(exc)) from None


def is_quantity(s: Any) -> bool:
    if type(s) is not str:
        raise no_overload("isQuantity")
    try:
        Quantity.parse_string(s)
        return True
    except QuantityError:
        return False


def _q(*vals: Any) -> None:
    for v in vals:
        if type(v) is not Quantity:
            raise no_overload()


def _q_or_int(v: Any) -> Fraction:
    if type(v) is Quantity:
        return v.value
    if type(v) is int:
        return Fraction(v)
    raise no_overload()


def q_add(a: Any, b: Any) -> Quantity:
    _q(a)
    return _qval(a.value + _q_or_int(b))


def q_sub(a: Any, b: Any) -> Quantity:
    _q(a)
    return _qval(a.value - _q_or_int(b))


def _qval(v: Fraction) -> Quantity:
    from ..kube.quantity import format_value

    return Quantity(v, format_value(v))


def q_sign(a: Any) -> int:
    _q(a)
    return (a.value > 0) - (a.value < 0)


def q_as_integer(a: Any) -> int:
    _q(a)
    v = a.value
    if v.denominator != 1 or not INT_MIN <= v.numerator <= INT_MAX:
        raise err("cannot convert value to integer")
    return v.numerator


def q_is_integer(a: Any) -> bool:
    _q(a)
    v = a.value
    return v.denominator == 1 and INT_MIN <= v.numerator <= INT_MAX


def q_float(a: Any) -> float:
    _q(a)
    try:
        return float(a.value)
    except OverflowError:
        return float("inf") if a.value > 0 else float("-inf")


# -- semver ----------------------------------------------------------------------------------
def semver(s: Any, normalize: Any = False) -> Semver:
    if type(s) is not str or type(normalize) is not bool:
        raise no_overload("semver")
    try:
        return Semver.parse_normalized(s) if normalize else Semver.parse(s)
    except SemverError as exc:
        raise err(str(exc)) from None


def is_semver(s: Any, normalize: Any = False) -> bool:
    try:
        semver(s, normalize)
        return True
    except CelRuntimeError:
        if type(s) is not str or type(normalize) is not bool:
            raise
        return False


def _part(name: str) -> Callable[[Any], int]:
    def get(v: Any) -> int:
        if type(v) is not Semver:
            raise no_overload(name)
        n = getattr(v, name)
        if n > INT_MAX:
            raise err("integer overflow")
        return n
    return get


def _ordered(a: Any, b: Any) -> int:
    if type(a) is Quantity and type(b) is Quantity:
        return a.compare(b)
    if type(a) is Semver and type(b) is Semver:
        return a.compare(b)
    raise no_overload()


def is_greater_than(a: Any, b: Any) -> bool:
    return _ordered(a, b) > 0


def is_less_than(a: Any, b: Any) -> bool:
    return _ordered(a, b) < 0


def compare_to(a: Any, b: Any) -> int:
    return _ordered(a, b)


# -- url -------------------------------------------------------------------------------------
def url(s: Any) -> URL:
    if type(s) is not str:
        raise no_overload("url")
    u = _parse_url(s)
    if u is None:
        raise err(f"URL parse error during conversion from string: parse \"{s}\": invalid URI for request")
    return u


def _parse_url(s: str) -> URL | None:
    # Go's url.ParseRequestURI: an absolute URI or an absolute path, no fragment handling needed.
    if not s or any(ord(c) < 0x20 or c == "\x7f" or c == " " for c in s):
        return None
    try:
        parts = urlsplit(s)
    except ValueError:
        return None
    if parts.scheme:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.\-]*", parts.scheme):
            return None
    elif not s.startswith("/"):
        return None
    netloc = parts.netloc
    if "@" in netloc:
        netloc = netloc.rsplit("@", 1)[1]
    path = parts.path
    return URL(s, parts.scheme, netloc, quote(path, safe="/:@!$&'()*+,;=-._~%"), parts.query)


def is_url(s: Any) -> bool:
    if type(s) is not str:
        raise no_overload("isURL")
    return _parse_url(s) is not None


def _u(v: Any) -> URL:
    if type(v) is not URL:
        raise no_overload()
    return v


def url_hostname(v: Any) -> str:
    host = _u(v).host
    if host.startswith("["):
        return host[1:host.index("]")] if "]" in host else host[1:]
    return host.rsplit(":", 1)[0] if ":" in host else host


def url_port(v: Any) -> str:
    host = _u(v).host
    if host.startswith("["):
        rest = host[host.index("]") + 1:] if "]" in host else ""
        return rest[1:] if rest.startswith(":") else ""
    return host.rsplit(":", 1)[1] if ":" in host else ""


def url_query(v: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, val in parse_qsl(_u(v).raw_query, keep_blank_values=True):
        out.setdefault(k, []).append(val)
    return out


# -- regex -----------------------------------------------------------------------------------
def _rx(pattern: Any) -> Any:
    if type(pattern) is not str:
        raise no_overload()
    try:
        return compile_regex(pattern)
    except RegexError as exc:
        raise err(f"Illegal regex: {exc}") from None


def find(s: Any, pattern: Any) -> str:
    if type(s) is not str:
        raise no_overload("find")
    found = _rx(pattern).find(s)
    return "" if found is None else found


def find_all(s: Any, pattern: Any, limit: Any = -1) -> list[str]:
    if type(s) is not str or type(limit) is not int:
        raise no_overload("findAll")
    if limit == 0:
        return []
    return _rx(pattern).find_all(s, limit)


# -- Kubernetes lists ------------------------------------------------------------------------
def _list(v: Any) -> list | tuple:
    if type(v) not in (list, tuple):
        raise no_overload()
    return v


def is_sorted(v: Any) -> bool:
    items = _list(v)
    return all(compare(items[i], items[i + 1]) <= 0 for i in range(len(items) - 1))


def list_sum(v: Any) -> Any:
    from .runtime import add

    items = _list(v)
    if not items:
        return 0
    total = items[0]
    for x in items[1:]:
        total = add(total, x)
    return total


def list_min(v: Any) -> Any:
    items = _list(v)
    if not items:
        raise err("min called on empty list")
    best = items[0]
    for x in items[1:]:
        if compare(x, best) < 0:
            best = x
    return best


def list_max(v: Any) -> Any:
    items = _list(v)
    if not items:
        raise err("max called on empty list")
    best = items[0]
    for x in items[1:]:
        if compare(x, best) > 0:
            best = x
    return best


def index_of(target: Any, v: Any, offset: Any = None) -> int:
    if type(target) is str:
        return string_index_of(target, v, offset)
    items = _list(target)
    for i, x in enumerate(items):
        if equal(x, v):
            return i
    return -1


def last_index_of(target: Any, v: Any, offset: Any = None) -> int:
    if type(target) is str:
        return string_last_index_of(target, v, offset)
    items = _list(target)
    for i in range(len(items) - 1, -1, -1):
        if equal(items[i], v):
            return i
    return -1


def includes(target: Any, v: Any) -> bool:
    """DRA ``includes``: list membership within the first 48 values, else scalar equality."""
    if type(target) in (list, tuple):
        for x in target[:MAX_INCLUDES]:
            try:
                if equal(x, v):
                    return True
            except CelRuntimeError:
                continue
        return False
    try:
        return equal(target, v)
    except CelRuntimeError:
        return False


# -- ip / cidr ------------------------------------------------------------------------------
def _parse_ip(s: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """apiserver's ``parseIPAddr``: netip's reading, then no zone and no IPv4-mapped IPv6."""
    try:
        a, zone = parse_addr(s)
    except NetipError as exc:
        raise err(f"IP Address {go_quote(s)} parse error during conversion from string: {exc}") from None
    if zone:
        raise err(f"IP address {go_quote(s)} with zone value is not allowed")
    if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped is not None:
        raise err(f"IPv4-mapped IPv6 address {go_quote(s)} is not allowed")
    return a


def ip(s: Any) -> IPAddr:
    if type(s) is CIDRValue:
        return IPAddr(s.addr)
    if type(s) is not str:
        raise no_overload("ip")
    return IPAddr(_parse_ip(s))


def is_ip(s: Any) -> bool:
    if type(s) is not str:
        raise no_overload("isIP")
    try:
        _parse_ip(s)
        return True
    except CelRuntimeError:
        return False


def ip_is_canonical(s: Any) -> bool:
    if type(s) is not str:
        raise no_overload("ip.isCanonical")
    return str(_parse_ip(s)) == s


def _ip(v: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if type(v) is not IPAddr:
        raise no_overload()
    return v.addr


def ip_family(v: Any) -> int:
    return _ip(v).version


def _ip_pred(name: str) -> Callable[[Any], bool]:
    def pred(v: Any) -> bool:
        a = _ip(v)
        if name == "isUnspecified":
            return a.is_unspecified
        if name == "isLoopback":
            return a.is_loopback
        if name == "isLinkLocalMulticast":
            return a.is_multicast and (a in ipaddress.ip_network("224.0.0.0/24") if a.version == 4
                                       else (int(a) >> 112) & 0xFF0F == 0xFF02)
        if name == "isLinkLocalUnicast":
            return a.is_link_local and not a.is_multicast
        # Go's IsGlobalUnicast: not unspecified, loopback, multicast, link-local or broadcast.
        broadcast = a.version == 4 and int(a) == 0xFFFFFFFF
        return not (a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local or broadcast)
    return pred


def cidr(s: Any) -> CIDRValue:
    if type(s) is not str:
        raise no_overload("cidr")
    return _parse_cidr(s)


def _parse_cidr(s: str) -> CIDRValue:
    """``cidr(string)``: apiserver's ``parseCIDR`` wrapped by ``stringToCIDR``, which both prefix the error."""
    lead = "network address parse error during conversion from string: "
    try:
        a, bits = parse_prefix(s)
    except NetipError as exc:
        raise err(f"{lead}{lead}{exc}") from None
    if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped is not None:
        raise err(f"{lead}IPv4-mapped IPv6 address {go_quote(s)} is not allowed")
    return CIDRValue(a, bits)


def is_cidr(s: Any) -> bool:
    if type(s) is not str:
        raise no_overload("isCIDR")
    try:
        _parse_cidr(s)
        return True
    except CelRuntimeError:
        return False


def _cidr(v: Any) -> CIDRValue:
    if type(v) is not CIDRValue:
        raise no_overload()
    return v


def contains_ip(c: Any, v: Any) -> bool:
    net = _cidr(c).network
    if type(v) is str:
        # apiserver hands the failed string's error to a type switch that answers "no such overload".
        try:
            a = _parse_ip(v)
        except CelRuntimeError:
            raise no_overload() from None
    else:
        a = _ip(v)
    return a.version == net.version and a in net


def contains_cidr(c: Any, v: Any) -> bool:
    outer = _cidr(c).network
    inner = (_parse_cidr(v) if type(v) is str else _cidr(v)).network
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def cidr_masked(c: Any) -> CIDRValue:
    net = _cidr(c).network
    return CIDRValue(net.network_address, net.prefixlen)


def cidr_prefix_length(c: Any) -> int:
    return _cidr(c).prefix


# -- format ----------------------------------------------------------------------------------
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# strfmt.DateTimePattern; Go's "." outside a class matches any character but a line break.
_DATETIME_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")


def _validate(name: str, s: str) -> list[str]:
    """The messages of the named format for ``s`` (the Kubernetes library's ``ConstantFormats``)."""
    return _FORMATS[name](s)


def _is_date(s: str) -> bool:
    """kube-openapi's strfmt ``IsDate``: ``time.Parse("2006-01-02", s)`` (any year 0000-9999, the
    day checked against its month)."""
    if not _DATE.fullmatch(s):
        return False
    year, month, day = int(s[:4]), int(s[5:7]), int(s[8:10])
    return 1 <= month <= 12 and 1 <= day <= _days_in(month, year)


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _is_datetime(s: str) -> bool:
    """kube-openapi's strfmt ``IsDateTime``: the text lower-cased and cut at each "t", a date before
    the first cut and the time pattern after it (hours to 23, minutes and seconds to 59; the
    fraction's separator is any character, the zone ``z`` or an offset)."""
    if len(s) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _DATETIME_TIME.fullmatch(parts[1])
    return m is not None and m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


_FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": is_dns1123_label,
    "dns1123Subdomain": is_dns1123_subdomain,
    "dns1035Label": is_dns1035_label,
    "qualifiedName": is_qualified_name,
    "dns1123LabelPrefix": lambda s: name_is_dns_label(s, True),
    "dns1123SubdomainPrefix": lambda s: name_is_dns_subdomain(s, True),
    "dns1035LabelPrefix": lambda s: name_is_dns1035_label(s, True),
    "labelValue": is_valid_label_value,
    "uri": lambda s: [] if _parse_url(s) is not None else ["invalid URI"],
    "uuid": lambda s: [] if _UUID.match(s) else ["does not match the UUID format"],
    "byte": lambda s: [] if _BASE64.match(s) else ["invalid base64"],
    "date": lambda s: [] if _is_date(s) else ["invalid date"],
    "datetime": lambda s: [] if _is_datetime(s) else ["invalid datetime"],
}


def format_named(name: Any) -> Optional:
    from .decls import FORMAT_NAMES

    if type(name) is not str:
        raise no_overload("format.named")
    return Optional(True, NamedFormat(name)) if name in FORMAT_NAMES else Optional(False)


def format_validate(f: Any, s: Any) -> Optional:
    if type(f) is not NamedFormat or type(s) is not str:
        raise no_overload("validate")
    errs = _validate(f.name, s)
    return Optional(True, errs) if errs else Optional(False)


def _format_ctor(name: str) -> Callable[[], NamedFormat]:
    return lambda: NamedFormat(name)


def _accessor(attr: str) -> Callable[[Any], str]:
    return lambda v: getattr(_u(v), attr)


FUNCTIONS: dict[tuple[str, bool], Callable[..., Any]] = {
    ("quantity", False): quantity,
    ("isQuantity", False): is_quantity,
    ("sign", False): q_sign,
    ("add", True): q_add,
    ("sub", True): q_sub,
    ("asInteger", True): q_as_integer,
    ("isInteger", True): q_is_integer,
    ("asApproximateFloat", True): q_float,
    ("isGreaterThan", True): is_greater_than,
    ("isLessThan", True): is_less_than,
    ("compareTo", True): compare_to,
    ("semver", False): semver,
    ("isSemver", False): is_semver,
    ("major", True): _part("major"),
    ("minor", True): _part("minor"),
    ("patch", True): _part("patch"),
    ("url", False): url,
    ("isURL", False): is_url,
    ("getScheme", True): _accessor("scheme"),
    ("getHost", True): _accessor("host"),
    ("getHostname", True): url_hostname,
    ("getPort", True): url_port,
    ("getEscapedPath", True): _accessor("escaped_path"),
    ("getQuery", True): url_query,
    ("find", True): find,
    ("findAll", True): find_all,
    ("isSorted", True): is_sorted,
    ("sum", True): list_sum,
    ("min", True): list_min,
    ("max", True): list_max,
    ("indexOf", True): index_of,
    ("lastIndexOf", True): last_index_of,
    ("includes", True): includes,
    ("ip", False): ip,
    ("ip", True): ip,
    ("isIP", False): is_ip,
    ("ip.isCanonical", False): ip_is_canonical,
    ("family", True): ip_family,
    ("cidr", False): cidr,
    ("isCIDR", False): is_cidr,
    ("containsIP", True): contains_ip,
    ("containsCIDR", True): contains_cidr,
    ("masked", True): cidr_masked,
    ("prefixLength", True): cidr_prefix_length,
    ("format.named", False): format_named,
    ("validate", True): format_validate,
}
for _p in ("isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast"):
    FUNCTIONS[(_p, True)] = _ip_pred(_p)


def _register_formats() -> None:
    from .decls import FORMAT_NAMES

    for name in FORMAT_NAMES:
        FUNCTIONS[(f"format.{name}", False)] = _format_ctor(name)


_register_formats()

