"""The time zone argument of CEL's timestamp accessors (``ts.getHours("America/New_York")``,
``ts.getDate("+05:30")``) as cel-go's ``timeZone`` reads it, and the calendar fields Go's ``time.Time``
reports in that zone.

cel-go takes a text with a colon as hours:minutes (``strconv.Atoi`` on each side, so "-0:30",
"+100:00" and "1:-30" are offsets too) and anything else as a ``time.LoadLocation`` name ("" and
"UTC" are UTC). Fields come from Unix seconds plus the zone's offset at that instant, so daylight
saving applies and years past 9999 or before 1 are computed rather than overflowing.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .strconv import quote
from .timefmt import civil_from_days, days_from_civil

_INT64 = 2**64
_SECOND = 10**9


class TimeZoneError(ValueError):
    """A zone argument Go refuses; the message is Go's."""


@dataclass(frozen=True)
class LocalTime:
    """A moment's calendar fields in one zone, as Go's ``time.Time`` accessors give them."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    weekday: int        # Sunday is 0
    year_day: int       # January 1st is 1


def local_time(unix: int, zone: str) -> LocalTime:
    """The fields of Unix second ``unix`` in ``zone`` (cel-go's ``timeZone`` then ``t.In(loc)``)."""
    local = unix + zone_offset(zone, unix)
    days, secs = divmod(local, 86400)
    year, month, day = civil_from_days(days)
    return LocalTime(year, month, day, secs // 3600, secs // 60 % 60, secs % 60,
                     (days + 4) % 7, days - days_from_civil(year, 1, 1) + 1)


def zone_offset(zone: str, unix: int) -> int:
    """Seconds east of UTC that ``zone`` has at Unix second ``unix``."""
    hours, colon, minutes = zone.partition(":")
    if colon:
        hr, mi = _atoi(hours), _atoi(minutes)
        offset = _int64(hr * 60 - mi if zone[:1] == "-" else hr * 60 + mi)
        # Go: int((time.Duration(offset) * time.Minute).Seconds()), int64 wrap-around and float64 included.
        nanos = _int64(offset * 60 * _SECOND)
        sec, nsec = _go_divmod(nanos, _SECOND)
        return int(float(sec) + float(nsec) / 1e9)
    if zone in ("", "UTC", "Local"):       # the API server runs in UTC, so Local is UTC there
        return 0
    if ".." in zone or zone[0] in "/\\":
        raise TimeZoneError("time: invalid location name")
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise TimeZoneError("unknown time zone " + zone) from None
    at = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(seconds=unix)
    try:
        local = at.astimezone(tz).utcoffset()
    except OverflowError:
        # The local date leaves Python's years 1..9999; the offset a day earlier is the same rule.
        local = (at - _dt.timedelta(days=1) if unix > 0 else at + _dt.timedelta(days=1)).astimezone(tz).utcoffset()
    return int(local.total_seconds()) if local is not None else 0


def _atoi(text: str) -> int:
    """``strconv.Atoi``: an optional sign and decimal digits within int64, with Go's error texts."""
    body = text[1:] if text[:1] in ("+", "-") else text
    digits = len(body) - len(body.lstrip("0123456789"))
    # ParseUint reports overflow as soon as the digits read so far pass uint64, before a bad character.
    significant = body[:digits].lstrip("0")
    if len(significant) > 20 or (significant and int(significant) >= _INT64):
        raise TimeZoneError(f"strconv.Atoi: parsing {quote(text)}: value out of range")
    if not body or digits < len(body):
        raise TimeZoneError(f"strconv.Atoi: parsing {quote(text)}: invalid syntax")
    value = -int(body) if text[:1] == "-" else int(body)
    if not -(2**63) <= value < 2**63:
        raise TimeZoneError(f"strconv.Atoi: parsing {quote(text)}: value out of range")
    return value


def _int64(n: int) -> int:
    return (n + 2**63) % _INT64 - 2**63


def _go_divmod(a: int, b: int) -> tuple[int, int]:
    """Go's truncating division and remainder."""
    q = abs(a) // b * (1 if a >= 0 else -1)
    return q, a - q * b
