"""Run-time CEL values that Python has no exact match for.

CEL ``int`` is Python ``int`` (never ``bool``: checks use ``type(v) is int``), ``uint`` is
:class:`Uint`, ``double`` is ``float``, ``string``/``bytes`` are ``str``/``bytes``, ``null`` is
``None``, lists are ``list``/``tuple`` and maps are ``dict``. Kubernetes Quantity is
:class:`dralint.kube.quantity.Quantity`; Semver, Optional, Duration, Timestamp and type values are here.
"""
from __future__ import annotations

import datetime as _dt
import ipaddress
from dataclasses import dataclass
from typing import Any

from .strconv import quote

INT_MIN = -(2**63)
INT_MAX = 2**63 - 1
UINT_MAX = 2**64 - 1


class Uint(int):
    """A CEL uint; arithmetic results must be re-wrapped (int subclass ops return int)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


class SemverError(ValueError):
    """blang/semver's parse errors, worded as that library words them."""


_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")
_DIGITS = frozenset("0123456789")


def _only(s: str, allowed: frozenset[str]) -> bool:
    return all(c in allowed for c in s)


def _parse_uint(s: str) -> int:
    """``strconv.ParseUint(s, 10, 64)`` of a text already known to hold only ASCII digits."""
    if not s:
        raise SemverError('strconv.ParseUint: parsing "": invalid syntax')
    # Length first: past 20 digits the value is out of range and int() would balk at a huge text.
    if len(s.lstrip("0")) > 20 or int(s) > UINT_MAX:
        raise SemverError(f"strconv.ParseUint: parsing {quote(s)}: value out of range")
    return int(s)


@dataclass(frozen=True, eq=False)
class Semver:
    """A semantic version (blang/semver v4 strict parsing; equality ignores build metadata)."""

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, s: str) -> "Semver":
        """Strict semver 2.0.0, with blang's error messages."""
        if not s:
            raise SemverError("Version string empty")
        parts = s.split(".", 2)
        if len(parts) != 3:
            raise SemverError("No Major.Minor.Patch elements found")
        nums: list[int] = []
        for label, part in (("major", parts[0]), ("minor", parts[1])):
            if not _only(part, _DIGITS):
                raise SemverError(f"Invalid character(s) found in {label} number {quote(part)}")
            if len(part) > 1 and part[0] == "0":
                raise SemverError(f"{label.capitalize()} number must not contain leading zeroes {quote(part)}")
            nums.append(_parse_uint(part))
        rest = parts[2]
        build: list[str] = []
        pre_parts: list[str] = []
        if "+" in rest:
            rest, meta = rest.split("+", 1)
            build = meta.split(".")
        if "-" in rest:
            rest, pre = rest.split("-", 1)
            pre_parts = pre.split(".")
        if not _only(rest, _DIGITS):
            raise SemverError(f"Invalid character(s) found in patch number {quote(rest)}")
        if len(rest) > 1 and rest[0] == "0":
            raise SemverError(f"Patch number must not contain leading zeroes {quote(rest)}")
        patch = _parse_uint(rest)
        pre_out: list[int | str] = []
        for p in pre_parts:
            if not p:
                raise SemverError("Prerelease is empty")
            if _only(p, _DIGITS):
                if len(p) > 1 and p[0] == "0":
                    raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {quote(p)}")
                pre_out.append(_parse_uint(p))
            elif _only(p, _ALNUM):
                pre_out.append(p)
            else:
                raise SemverError(f"Invalid character(s) found in prerelease {quote(p)}")
        for b in build:
            if not b:
                raise SemverError("Build meta data is empty")
            if not _only(b, _ALNUM):
                raise SemverError(f"Invalid character(s) found in build meta data {quote(b)}")
        return cls(nums[0], nums[1], patch, tuple(pre_out), tuple(build))

    @classmethod
    def parse_normalized(cls, s: str) -> "Semver":
        """The semver library's ``normalize=true``: drop a 'v', leading zeros, pad short forms."""
        if s.startswith("v"):
            s = s[1:]
        parts = s.split(".", 2)
        for i, p in enumerate(parts):
            if len(p) > 1:
                p = p.lstrip("0")
                if not p or p[0] not in _DIGITS:
                    p = "0" + p
                parts[i] = p
        if len(parts) < 3:
            if any(c in parts[-1] for c in "+-"):
                raise SemverError("short version cannot contain PreRelease/Build meta data")
            parts += ["0"] * (3 - len(parts))
        return cls.parse(".".join(parts))

    def compare(self, other: "Semver") -> int:
        """-1, 0 or 1 with semver precedence (build metadata ignored)."""
        a = (self.major, self.minor, self.patch)
        b = (other.major, other.minor, other.patch)
        if a != b:
            return -1 if a < b else 1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre) if (self.pre or other.pre) else 0
        for x, y in zip(self.pre, other.pre):
            if x == y:
                continue
            if isinstance(x, int) and isinstance(y, int):
                return -1 if x < y else 1
            if isinstance(x, int):
                return -1
            if isinstance(y, int):
                return 1
            return -1 if x < y else 1
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __str__(self) -> str:
        s = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            s += "-" + ".".join(str(p) for p in self.pre)
        if self.build:
            s += "+" + ".".join(self.build)
        return s


@dataclass(frozen=True)
class Duration:
    """A signed duration in nanoseconds (CEL ``google.protobuf.Duration``)."""

    nanos: int

    def __str__(self) -> str:
        secs, frac = divmod(abs(self.nanos), 10**9)
        sign = "-" if self.nanos < 0 else ""
        return f"{sign}{secs}s" if not frac else f"{sign}{secs}.{frac:09d}".rstrip("0") + "s"


@dataclass(frozen=True)
class Timestamp:
    """An instant as nanoseconds since the Unix epoch (CEL ``google.protobuf.Timestamp``)."""

    nanos: int

    def datetime(self, tz: _dt.tzinfo = _dt.timezone.utc) -> _dt.datetime:
        secs, _ = divmod(self.nanos, 10**9)
        return _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc).astimezone(tz) + _dt.timedelta(seconds=secs)

    def __str__(self) -> str:
        d = self.datetime()
        frac = self.nanos % 10**9
        base = d.strftime("%Y-%m-%dT%H:%M:%S")
        return base + (f".{frac:09d}".rstrip("0") if frac else "") + "Z"


@dataclass(frozen=True)
class Optional:
    """CEL ``optional_type(T)``: ``present`` False is ``optional.none()``."""

    present: bool
    value: Any = None


NONE = Optional(False)


@dataclass(frozen=True)
class TypeValue:
    """A CEL type used as a value (``type(1) == int``)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class URL:
    """Kubernetes ``kubernetes.URL``: the parts of a parsed absolute URL or absolute path."""

    text: str
    scheme: str
    host: str          # with port and IPv6 brackets, as Go's URL.Host
    escaped_path: str
    raw_query: str


@dataclass(frozen=True)
class IPAddr:
    """Kubernetes ``net.IP``."""

    addr: ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class CIDRValue:
    """Kubernetes ``net.CIDR``: an address plus prefix length (host bits may be set)."""

    addr: ipaddress.IPv4Address | ipaddress.IPv6Address
    prefix: int

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(f"{self.addr}/{self.prefix}", strict=False)


@dataclass(frozen=True)
class NamedFormat:
    """A Kubernetes format library validator (``format.dns1123Label()``...)."""

    name: str
