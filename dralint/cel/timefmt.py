"""Go-compatible parsing of durations (``time.ParseDuration``) and RFC 3339 timestamps."""
from __future__ import annotations

import datetime as _dt
import re

from .values import Duration, Timestamp

_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$")
# CEL timestamps range over years 0001..9999.
MIN_TS = -62135596800 * 10**9
MAX_TS = 253402300799 * 10**9 + 999999999
MAX_DURATION = 315576000000 * 10**9


class TimeFormatError(ValueError):
    pass


def parse_duration(s: str) -> Duration:
    """``time.ParseDuration`` semantics: ``1h30m``, ``-1.5s``, ``0``."""
    orig = s
    sign = 1
    if s[:1] in "+-" and s:
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return Duration(0)
    if not s:
        raise TimeFormatError(f'time: invalid duration "{orig}"')
    total = 0
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if not m or m.group(1) in ("", "."):
            raise TimeFormatError(f'time: invalid duration "{orig}"')
        num = m.group(1)
        whole, _, frac = num.partition(".")
        unit = _UNITS[m.group(2)]
        total += int(whole or "0") * unit
        if frac:
            total += int(frac) * unit // 10 ** len(frac)
        pos = m.end()
    if total > 2**63 - 1:
        raise TimeFormatError(f'time: invalid duration "{orig}"')
    return Duration(sign * total)


def parse_timestamp(s: str) -> Timestamp:
    """RFC 3339 as Go's ``time.Parse(time.RFC3339, s)`` accepts it, within CEL's range."""
    m = _RFC3339.match(s)
    if not m:
        raise TimeFormatError(f'parsing time "{s}" as "2006-01-02T15:04:05Z07:00": cannot parse')
    y, mo, d, h, mi, se = (int(m.group(i)) for i in range(1, 7))
    try:
        base = _dt.datetime(y, mo, d, h, mi, se, tzinfo=_dt.timezone.utc)
    except ValueError as exc:
        raise TimeFormatError(f'parsing time "{s}": {exc}') from None
    frac = m.group(7)
    nanos = int((frac[1:] + "000000000")[:9]) if frac else 0
    off = m.group(8)
    offset = 0
    if off not in ("Z", "z"):
        offset = (int(off[1:3]) * 3600 + int(off[4:6]) * 60) * (1 if off[0] == "+" else -1)
    epoch = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
    secs = int((base - epoch).total_seconds()) - offset
    total = secs * 10**9 + nanos
    if not MIN_TS <= total <= MAX_TS:
        raise TimeFormatError("timestamp out of range")
    return Timestamp(total)
