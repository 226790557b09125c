"""Durations and timestamps parsed exactly as Go parses them: ``time.ParseDuration`` and
``time.Parse(time.RFC3339, s)`` (what cel-go's ``duration(string)`` / ``timestamp(string)`` call),
with Go's error texts.

Both scan UTF-8 bytes, as Go does, so error texts quote split runes the way Go's ``quote`` does.
"""
from __future__ import annotations

from .values import Duration, Timestamp

# cel-go's timestamp range: years 0001..9999 in UTC, checked on whole seconds.
MIN_UNIX = -62135596800
MAX_UNIX = 253402300799
MIN_TS = MIN_UNIX * 10**9
MAX_TS = MAX_UNIX * 10**9 + 999999999

_LAYOUT = "2006-01-02T15:04:05Z07:00"
_UNITS = {b"ns": 1, b"us": 10**3, "µs".encode(): 10**3, "μs".encode(): 10**3, b"ms": 10**6,
          b"s": 10**9, b"m": 60 * 10**9, b"h": 3600 * 10**9}
_TWO63 = 1 << 63
_DIGITS = b"0123456789"


class TimeFormatError(ValueError):
    """A text Go's time package refuses, or a timestamp outside CEL's range; the message is Go's."""


class TimestampOverflow(TimeFormatError):
    """A well-formed timestamp outside years 0001..9999 (cel-go: "timestamp overflow")."""


def _time_quote(b: bytes) -> str:
    """The time package's ``quote``: non-ASCII and control bytes as ``\\xNN``, quotes and backslashes escaped."""
    out = []
    for c in b:
        if c >= 0x80 or c < 0x20:
            out.append(f"\\x{c:02x}")
        elif c in b'"\\':
            out.append("\\" + chr(c))
        else:
            out.append(chr(c))
    return '"' + "".join(out) + '"'


# --- durations -------------------------------------------------------------------------------


def parse_duration(s: str) -> Duration:
    """``time.ParseDuration``: ``1h30m``, ``-1.5s``, ``.5us``, ``0``; a fraction is scaled through a float64
    and its digits past uint64 precision are dropped, both as Go does."""
    orig = s.encode()
    b = orig
    invalid = TimeFormatError("time: invalid duration " + _time_quote(orig))
    neg = False
    if b[:1] in (b"-", b"+"):
        neg = b[:1] == b"-"
        b = b[1:]
    if b == b"0":
        return Duration(0)
    if not b:
        raise invalid
    total = 0
    while b:
        if b[0] != ord(".") and b[0] not in _DIGITS:
            raise invalid
        whole, b = _digits(b)
        if whole and _uint(whole) is None:
            raise invalid
        frac = b""
        if b[:1] == b".":
            frac, b = _digits(b[1:])
        if not whole and not frac:
            raise invalid
        end = 0
        while end < len(b) and b[end] != ord(".") and b[end] not in _DIGITS:
            end += 1
        if end == 0:
            raise TimeFormatError("time: missing unit in duration " + _time_quote(orig))
        name, b = b[:end], b[end:]
        unit = _UNITS.get(name)
        if unit is None:
            raise TimeFormatError("time: unknown unit " + _time_quote(name) + " in duration " + _time_quote(orig))
        v = _uint(whole) or 0
        if v > _TWO63 // unit:
            raise invalid
        v *= unit
        f, scale = _fraction(frac)
        if f > 0:
            # Go scales the fraction in float64 and truncates, which can be off by one nanosecond.
            v += int(float(f) * (float(unit) / scale))
            if v > _TWO63:
                raise invalid
        # uint64 addition: exactly 2**64 wraps to zero in Go.
        total = (total + v) % 2**64
        if total > _TWO63:
            raise invalid
    if neg:
        return Duration(-total)
    if total > _TWO63 - 1:
        raise invalid
    return Duration(total)


def _digits(b: bytes) -> tuple[bytes, bytes]:
    i = 0
    while i < len(b) and b[i] in _DIGITS:
        i += 1
    return b[:i], b[i:]


def _uint(digits: bytes) -> int | None:
    """``leadingInt``'s value, or None where Go reports overflow (beyond 2**63)."""
    significant = digits.lstrip(b"0")
    if len(significant) > 19:      # past 2**63 anyway; spares int() a huge text
        return None
    value = int(significant) if significant else 0
    return value if value <= _TWO63 else None


def _fraction(digits: bytes) -> tuple[int, float]:
    """``leadingFraction``: digits accumulate until the next one would pass 2**63; the rest are ignored."""
    x, scale = 0, 1.0
    for c in digits:
        if x > (_TWO63 - 1) // 10:
            break
        y = x * 10 + c - ord("0")
        if y > _TWO63:
            break
        x, scale = y, scale * 10
    return x, scale


# --- timestamps ------------------------------------------------------------------------------


def parse_timestamp(s: str) -> Timestamp:
    """``time.Parse(time.RFC3339, s)`` then cel-go's range check (:class:`TimestampOverflow`).

    Go's generic parser, which backs up its RFC 3339 fast path, also takes a one-digit hour,
    a comma before the fraction, any number of fraction digits (truncated to nanoseconds) and
    zone offsets up to 24:60; it wants an uppercase ``T`` and ``Z`` and refuses second 60.
    """
    secs, nanos = _rfc3339(s.encode())
    if not MIN_UNIX <= secs <= MAX_UNIX:
        raise TimestampOverflow("timestamp overflow")
    return Timestamp(secs * 10**9 + nanos)


class _Scan:
    """The text still to parse and Go's error texts for it."""

    def __init__(self, text: bytes) -> None:
        self.text = text
        self.rest = text

    def cannot(self, elem: bytes, layout_elem: str) -> TimeFormatError:
        return TimeFormatError(f"parsing time {_time_quote(self.text)} as {_time_quote(_LAYOUT.encode())}: "
                               f"cannot parse {_time_quote(elem)} as {_time_quote(layout_elem.encode())}")

    def out_of_range(self, what: str) -> TimeFormatError:
        return TimeFormatError(f"parsing time {_time_quote(self.text)}: {what} out of range")

    def literal(self, sep: str) -> None:
        if not self.rest.startswith(sep.encode()):
            raise self.cannot(self.rest, sep)
        self.rest = self.rest[len(sep):]

    def number(self, layout_elem: str, width: int, fixed: bool) -> int:
        """Go's ``getnum`` (width 2) or the 4-digit year; ``fixed`` wants every digit."""
        n = len(_digits(self.rest[:width])[0])
        if n == 0 or (fixed and n < width):
            raise self.cannot(self.rest, layout_elem)
        value, self.rest = int(self.rest[:n]), self.rest[n:]
        return value


def _rfc3339(text: bytes) -> tuple[int, int]:
    """(Unix seconds, nanoseconds) of an RFC 3339 text as Go reads it, before any range check."""
    sc = _Scan(text)
    year = sc.number("2006", 4, True)
    sc.literal("-")
    month = sc.number("01", 2, True)
    if not 1 <= month <= 12:
        raise sc.out_of_range("month")
    sc.literal("-")
    day = sc.number("02", 2, True)
    sc.literal("T")
    hour = sc.number("15", 2, False)
    if hour >= 24:
        raise sc.out_of_range("hour")
    sc.literal(":")
    minute = sc.number("04", 2, True)
    if minute >= 60:
        raise sc.out_of_range("minute")
    sc.literal(":")
    second = sc.number("05", 2, True)
    if second >= 60:
        raise sc.out_of_range("second")
    nanos = 0
    if len(sc.rest) >= 2 and sc.rest[:1] in (b".", b",") and sc.rest[1] in _DIGITS:
        frac, sc.rest = _digits(sc.rest[1:])
        nanos = int((frac[:9] + b"000000000")[:9])
    offset = _zone(sc)
    if sc.rest:
        raise TimeFormatError(f"parsing time {_time_quote(text)}: extra text: {_time_quote(sc.rest)}")
    if not 1 <= day <= _days_in(month, year):
        raise sc.out_of_range("day")
    days = days_from_civil(year, month, day)
    return days * 86400 + hour * 3600 + minute * 60 + second - offset, nanos


def _zone(sc: _Scan) -> int:
    """The zone offset in seconds east of UTC: ``Z`` or ``±hh:mm`` (hours up to 24, minutes up to 60)."""
    if sc.rest[:1] == b"Z":
        sc.rest = sc.rest[1:]
        return 0
    zone = sc.rest
    if len(zone) < 6 or zone[3] != ord(":"):
        raise sc.cannot(zone, "Z07:00")
    sc.rest = zone[6:]
    hh, mm = zone[1:3], zone[4:6]
    if not _is_num(hh):
        raise sc.cannot(zone, "Z07:00")
    # Go notes a range error first and reports it ahead of a bad minute field or sign.
    range_error = "time zone offset hour" if int(hh) > 24 else ""
    if _is_num(mm) and int(mm) > 60:
        range_error = "time zone offset minute"
    if range_error:
        raise sc.out_of_range(range_error)
    if not _is_num(mm) or zone[:1] not in (b"+", b"-"):
        raise sc.cannot(zone, "Z07:00")
    offset = (int(hh) * 60 + int(mm)) * 60
    return -offset if zone[:1] == b"-" else offset


def _is_num(two: bytes) -> bool:
    return len(two) == 2 and all(c in _DIGITS for c in two)


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar, year 0 included (Go allows 0000)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day counted from 1970-01-01; the inverse of :func:`days_from_civil`."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day
