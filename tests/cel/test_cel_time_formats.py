"""Durations and timestamps exactly as Go parses them: dralint.cel.timefmt against references written
from Go's ``src/time/format.go`` (``ParseDuration``, ``leadingInt``, ``leadingFraction``, the generic
``parse`` with the RFC 3339 layout, ``getnum``, ``skip``, ``parseNanoseconds``) and
``src/time/format_rfc3339.go`` (the ``parseRFC3339`` fast path ``time.Parse`` tries first), plus
cel-go's range check in ``String.ConvertToType(TimestampType)``.

The references follow the Go statements on byte strings, uint64 wrap-around and float64 scaling
included, so that dralint's own scanners can be checked wherever the two could part.
"""
from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dralint.cel.timefmt import TimeFormatError, TimestampOverflow, parse_duration, parse_timestamp

U64 = 2**64
TWO63 = 1 << 63


class Refused(Exception):
    pass


# --- time.ParseDuration ----------------------------------------------------------------------

UNIT_MAP = {b"ns": 1, b"us": 1000, b"\xc2\xb5s": 1000, b"\xce\xbcs": 1000, b"ms": 10**6, b"s": 10**9,
            b"m": 60 * 10**9, b"h": 3600 * 10**9}


def leading_int(s: bytes) -> tuple[int, bytes]:
    x, i = 0, 0
    while i < len(s):
        c = s[i]
        if c < 0x30 or c > 0x39:
            break
        if x > TWO63 // 10:
            raise Refused("overflow")
        x = x * 10 + c - 0x30
        if x > TWO63:
            raise Refused("overflow")
        i += 1
    return x, s[i:]


def leading_fraction(s: bytes) -> tuple[int, float, bytes]:
    x, scale, overflow, i = 0, 1.0, False, 0
    while i < len(s):
        c = s[i]
        if c < 0x30 or c > 0x39:
            break
        i += 1
        if overflow:
            continue
        if x > (TWO63 - 1) // 10:
            overflow = True
            continue
        y = x * 10 + c - 0x30
        if y > TWO63:
            overflow = True
            continue
        x = y
        scale *= 10
    return x, scale, s[i:]


def go_parse_duration(text: str) -> int:
    """``time.ParseDuration`` in nanoseconds, as int64; :class:`Refused` where Go returns an error."""
    s = text.encode()
    d, neg = 0, False
    if s and s[0] in b"-+":
        neg = s[0] == ord("-")
        s = s[1:]
    if s == b"0":
        return 0
    if not s:
        raise Refused("empty")
    while s:
        if not (s[0] == ord(".") or 0x30 <= s[0] <= 0x39):
            raise Refused("invalid")
        pl = len(s)
        v, s = leading_int(s)
        pre = pl != len(s)
        post, f, scale = False, 0, 1.0
        if s and s[0] == ord("."):
            s = s[1:]
            pl = len(s)
            f, scale, s = leading_fraction(s)
            post = pl != len(s)
        if not pre and not post:
            raise Refused("no digits")
        i = 0
        while i < len(s):
            c = s[i]
            if c == ord(".") or 0x30 <= c <= 0x39:
                break
            i += 1
        if i == 0:
            raise Refused("missing unit")
        u, s = s[:i], s[i:]
        if u not in UNIT_MAP:
            raise Refused("unknown unit")
        unit = UNIT_MAP[u]
        if v > TWO63 // unit:
            raise Refused("overflow")
        v *= unit
        if f > 0:
            v = (v + int(float(f) * (float(unit) / scale))) % U64
            if v > TWO63:
                raise Refused("overflow")
        d = (d + v) % U64
        if d > TWO63:
            raise Refused("overflow")
    if neg:
        return -d
    if d > TWO63 - 1:
        raise Refused("overflow")
    return d


def ours_duration(text: str) -> int:
    try:
        return parse_duration(text).nanos
    except TimeFormatError:
        raise Refused("dralint") from None


def outcome(parse, text: str):
    try:
        return parse(text)
    except Refused:
        return "refused"


UNIT_TEXTS = ["ns", "us", "µs", "μs", "ms", "s", "m", "h", "", "x", "S", "sm", "µ", "hh", "mss"]
duration_part = st.builds(lambda w, p, f, u: w + p + f + u,
                          st.text("0123456789", max_size=21), st.sampled_from(["", ".", "."]),
                          st.text("0123456789", max_size=24), st.sampled_from(UNIT_TEXTS))
duration_text = (st.builds(lambda sign, parts: sign + "".join(parts), st.sampled_from(["", "+", "-", "--"]),
                           st.lists(duration_part, max_size=3))
                 | st.text("0123456789.+-nsuµμmhx ", max_size=10))


@settings(max_examples=400, deadline=None)
@given(duration_text)
@example("-9223372036854775808ns")
@example("9223372036854775808ns")
@example("9223372036854775807ns")
@example("9223372036854775808ns9223372036854775808ns")
@example("-9223372036854775808ns9223372036854775808ns")
@example("2562047h47m16.854775807s")
@example("2562047h47m16.854775808s")
@example("0.1234567890123456789012345678s")
@example("1.00000000000000000000000000000001h")
@example(".s")
@example("1.s")
@example(".5s")
@example("+")
@example("-")
@example("0")
@example("-0")
@example("00")
@example("1")
def test_every_text_parses_as_go_parse_duration_parses_it(text):
    assert outcome(ours_duration, text) == outcome(go_parse_duration, text)


@pytest.mark.slow
@settings(max_examples=20000, deadline=None)
@given(duration_text)
def test_many_durations_parse_as_go_parses_them(text):
    assert outcome(ours_duration, text) == outcome(go_parse_duration, text)


@pytest.mark.parametrize("text, nanos", [
    ("1h30m", 5400 * 10**9), ("-1.5s", -1500 * 10**6), ("1.s", 10**9), (".5s", 5 * 10**8), ("+5ns", 5),
    ("1µs", 1000), ("1μs", 1000), ("1us", 1000), ("0", 0), ("-0", 0), ("+0", 0), ("0s", 0),
    ("-9223372036854775808ns", -(2**63)), ("9223372036854775807ns", 2**63 - 1),
    # Go scales fractions through float64, which can land a nanosecond either side of the exact value.
    ("0.25447633702000h", 916114813271), ("0.36204652196305553h", 1303367479067), ("1.1h", 3960000000000),
    # uint64 addition wraps to zero at exactly 2**64.
    ("9223372036854775808ns9223372036854775808ns", 0),
    ("0.00000000000000000000000000000000000001s", 0),
])
def test_known_durations(text, nanos):
    assert parse_duration(text).nanos == nanos


@pytest.mark.parametrize("text, message", [
    ("", 'time: invalid duration ""'),
    ("+", 'time: invalid duration "+"'),
    (".s", 'time: invalid duration ".s"'),
    ("1", 'time: missing unit in duration "1"'),
    ("1x", 'time: unknown unit "x" in duration "1x"'),
    ("1µ", 'time: unknown unit "\\xc2\\xb5" in duration "1\\xc2\\xb5"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("1 s", 'time: unknown unit " s" in duration "1 s"'),
    ("--1s", 'time: invalid duration "--1s"'),
])
def test_what_go_refuses_as_a_duration_with_its_words(text, message):
    with pytest.raises(TimeFormatError) as info:
        parse_duration(text)
    assert str(info.value) == message


# --- time.Parse(time.RFC3339, s) and cel-go's range ---------------------------------------------

MIN_UNIX, MAX_UNIX = -62135596800, 253402300799
CUMULATIVE = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]


def is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if is_leap(year) else 28
    return CUMULATIVE[month] - CUMULATIVE[month - 1] if month < 12 else 31


def days_since_0000(year: int, month: int, day: int) -> int:
    prior = year - 1
    leap_days = prior // 4 - prior // 100 + prior // 400 + 1       # year 0 is a leap year
    return 365 * year + leap_days + CUMULATIVE[month - 1] + (month > 2 and is_leap(year)) + day - 1


EPOCH_DAYS = days_since_0000(1970, 1, 1)


def unix(year, month, day, hour, minute, sec, offset) -> int:
    """Go's ``Date(...).addSec(-offset).Unix()`` for in-range fields."""
    return (days_since_0000(year, month, day) - EPOCH_DAYS) * 86400 + hour * 3600 + minute * 60 + sec - offset


def is_digit(s: bytes, i: int) -> bool:
    return i < len(s) and 0x30 <= s[i] <= 0x39


def parse_nanoseconds(value: bytes, nbytes: int) -> int:
    if nbytes > 10:
        value, nbytes = value[:10], 10
    return int(value[1:nbytes]) * 10 ** (10 - nbytes)


def fast_rfc3339(s: bytes) -> tuple[int, int] | None:
    """``parseRFC3339``: (unix seconds, nanoseconds), or None where it declines."""
    ok = True

    def parse_uint(b: bytes, lo: int, hi: int) -> int:
        nonlocal ok
        x = 0
        for c in b:
            if c < 0x30 or c > 0x39:
                ok = False
                return lo
            x = x * 10 + c - 0x30
        if x < lo or hi < x:
            ok = False
            return lo
        return x

    if len(s) < len("2006-01-02T15:04:05"):
        return None
    year = parse_uint(s[0:4], 0, 9999)
    month = parse_uint(s[5:7], 1, 12)
    day = parse_uint(s[8:10], 1, days_in(month, year))
    hour = parse_uint(s[11:13], 0, 23)
    minute = parse_uint(s[14:16], 0, 59)
    sec = parse_uint(s[17:19], 0, 59)
    if not ok or not (s[4:5] == b"-" and s[7:8] == b"-" and s[10:11] == b"T" and s[13:14] == b":"
                      and s[16:17] == b":"):
        return None
    s = s[19:]
    nsec = 0
    if len(s) >= 2 and s[0] == ord(".") and is_digit(s, 1):
        n = 2
        while n < len(s) and is_digit(s, n):
            n += 1
        nsec = parse_nanoseconds(s, n)
        s = s[n:]
    offset = 0
    if len(s) != 1 or s[0] != ord("Z"):
        if len(s) != len("-07:00"):
            return None
        hr = parse_uint(s[1:3], 0, 23)
        mm = parse_uint(s[4:6], 0, 59)
        if not ok or not (s[0:1] in (b"-", b"+") and s[3:4] == b":"):
            return None
        offset = (hr * 60 + mm) * 60 * (-1 if s[0:1] == b"-" else 1)
    return unix(year, month, day, hour, minute, sec, offset), nsec


def getnum(s: bytes, fixed: bool) -> tuple[int, bytes]:
    if not is_digit(s, 0):
        raise Refused("bad")
    if not is_digit(s, 1):
        if fixed:
            raise Refused("bad")
        return s[0] - 0x30, s[1:]
    return (s[0] - 0x30) * 10 + s[1] - 0x30, s[2:]


def skip(value: bytes, prefix: bytes) -> bytes:
    # The RFC 3339 layout's literals hold no spaces, so skip is a plain prefix match.
    for c in prefix:
        if not value or value[0] != c:
            raise Refused("bad")
        value = value[1:]
    return value


def generic_rfc3339(value: bytes) -> tuple[int, int]:
    """``parse(RFC3339, value, UTC, Local)``, chunk by chunk of "2006-01-02T15:04:05Z07:00"."""
    if len(value) < 4 or not is_digit(value, 0) or not value[0:4].isdigit():
        raise Refused("year")
    year, value = int(value[0:4]), value[4:]
    value = skip(value, b"-")
    month, value = getnum(value, True)
    if month <= 0 or 12 < month:
        raise Refused("month range")
    value = skip(value, b"-")
    day, value = getnum(value, True)
    value = skip(value, b"T")
    hour, value = getnum(value, False)
    if hour < 0 or 24 <= hour:
        raise Refused("hour range")
    value = skip(value, b":")
    minute, value = getnum(value, True)
    if minute < 0 or 60 <= minute:
        raise Refused("minute range")
    value = skip(value, b":")
    sec, value = getnum(value, True)
    if sec < 0 or 60 <= sec:
        raise Refused("second range")
    nsec = 0
    if len(value) >= 2 and value[0] in b".," and is_digit(value, 1):
        n = 2
        while n < len(value) and is_digit(value, n):
            n += 1
        nsec = parse_nanoseconds(value, n)
        value = value[n:]
    if len(value) >= 1 and value[0] == ord("Z"):
        value, offset = value[1:], 0
    else:
        if len(value) < 6 or value[3] != ord(":"):
            raise Refused("bad")
        sign, hh, mm, value = value[0:1], value[1:3], value[4:6], value[6:]
        hr, _ = getnum(hh, True)
        mi, _ = getnum(mm, True)
        if hr > 24 or mi > 60:
            raise Refused("zone range")
        if sign not in (b"+", b"-"):
            raise Refused("bad")
        offset = (hr * 60 + mi) * 60 * (-1 if sign == b"-" else 1)
    if value:
        raise Refused("extra text")
    if day < 1 or day > days_in(month, year):
        raise Refused("day range")
    return unix(year, month, day, hour, minute, sec, offset), nsec


def go_timestamp(text: str) -> int | str:
    """cel-go's ``timestamp(string)``: Go's ``time.Parse(time.RFC3339, text)``, then the range check."""
    raw = text.encode()
    parsed = fast_rfc3339(raw)
    if parsed is None:
        parsed = generic_rfc3339(raw)
    secs, nsec = parsed
    if secs < MIN_UNIX or secs > MAX_UNIX:
        return "overflow"
    return secs * 10**9 + nsec


def ours_timestamp(text: str) -> int | str:
    try:
        return parse_timestamp(text).nanos
    except TimestampOverflow:
        return "overflow"
    except TimeFormatError:
        raise Refused("dralint") from None


def _field(digits: str, width: int) -> st.SearchStrategy[str]:
    return st.one_of(st.integers(0, 10**width - 1).map(lambda n: f"{n:0{width}d}"),
                     st.text(digits, min_size=0, max_size=width + 1))


timestamp_text = st.one_of(
    st.builds(lambda y, m, d, t, h, mi, s, frac, zone: f"{y}-{m}-{d}{t}{h}:{mi}:{s}{frac}{zone}",
              st.sampled_from(["0000", "0001", "1970", "2000", "2024", "2100", "9999", "0", "12345", "+123"]),
              st.sampled_from(["01", "02", "12", "13", "00", "1", "1a"]),
              st.sampled_from(["01", "28", "29", "30", "31", "32", "00", "9"]),
              st.sampled_from(["T", "t", " ", "TT"]),
              st.sampled_from(["00", "23", "24", "9", "1", "012", ""]),
              st.sampled_from(["00", "59", "60", "5"]),
              st.sampled_from(["00", "59", "60", "61", "5"]),
              st.sampled_from(["", ".", ",", ".5", ",5", ".123456789", ".1234567891", ".000000000001", ".x", ".Z"]),
              st.sampled_from(["Z", "z", "", "+00:00", "-00:00", "+01:30", "-23:59", "+24:00", "+24:60", "-25:00",
                               "+00:61", "+0100", "+01:0", "*01:00", "+01:00Z", "ZZ", "+1:00:", "-12:3x", "UTC"])),
    st.builds(lambda parts: "".join(parts),
              st.lists(st.sampled_from(list("0123456789-:T.,Z+z ")), max_size=30)),
)


@settings(max_examples=500, deadline=None)
@given(timestamp_text)
@example("0000-12-31T23:00:00-01:00")
@example("0001-01-01T00:00:00+00:01")
@example("0001-01-01T00:00:00Z")
@example("9999-12-31T23:59:59.999999999Z")
@example("9999-12-31T23:59:59-00:01")
@example("2024-02-29T00:00:00Z")
@example("2023-02-29T00:00:00Z")
@example("1900-02-29T00:00:00Z")
@example("2000-01-01T00:00:60Z")
@example("2000-01-01t00:00:00z")
@example("2000-01-01T00:00:00,5Z")
@example("2000-01-01T1:00:00Z")
@example("2000-01-01T00:00:00+24:60")
@example("2000-01-01T00:00:00.1234567891Z")
def test_every_text_parses_as_go_time_parse_rfc3339_parses_it(text):
    assert outcome(ours_timestamp, text) == outcome(go_timestamp, text)


@pytest.mark.slow
@settings(max_examples=20000, deadline=None)
@given(timestamp_text)
def test_many_timestamps_parse_as_go_parses_them(text):
    assert outcome(ours_timestamp, text) == outcome(go_timestamp, text)


def test_the_reference_calendar_agrees_with_python_from_year_one():
    for day in (dt.date(1, 1, 1), dt.date(1600, 2, 29), dt.date(1970, 1, 1), dt.date(9999, 12, 31)):
        assert unix(day.year, day.month, day.day, 0, 0, 0, 0) == \
            int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc).timestamp())


@pytest.mark.parametrize("text, nanos", [
    ("1970-01-01T00:00:00Z", 0),
    ("1970-01-01T00:00:00,5Z", 5 * 10**8),
    ("1970-01-01T00:00:00.1234567899Z", 123456789),
    ("1970-01-01T1:00:00Z", 3600 * 10**9),
    ("1970-01-02T00:00:00+24:00", 0),
    ("1970-01-01T01:00:00+00:60", 0),
    ("0000-12-31T23:00:00-01:00", -62135596800 * 10**9),
    ("9999-12-31T23:59:59.999999999Z", 253402300799 * 10**9 + 999999999),
])
def test_known_timestamps(text, nanos):
    assert parse_timestamp(text).nanos == nanos


@pytest.mark.parametrize("text, message", [
    ("2000-01-01t00:00:00Z", 'parsing time "2000-01-01t00:00:00Z" as "2006-01-02T15:04:05Z07:00": '
                             'cannot parse "t00:00:00Z" as "T"'),
    ("2000-01-01T00:00:00z", 'parsing time "2000-01-01T00:00:00z" as "2006-01-02T15:04:05Z07:00": '
                             'cannot parse "z" as "Z07:00"'),
    ("2000-01-01T00:00:60Z", 'parsing time "2000-01-01T00:00:60Z": second out of range'),
    ("2023-02-29T00:00:00Z", 'parsing time "2023-02-29T00:00:00Z": day out of range'),
    ("2000-13-01T00:00:00Z", 'parsing time "2000-13-01T00:00:00Z": month out of range'),
    ("2000-01-01T00:00:00+25:00", 'parsing time "2000-01-01T00:00:00+25:00": time zone offset hour out of range'),
    ("2000-01-01T00:00:00ZZ", 'parsing time "2000-01-01T00:00:00ZZ": extra text: "Z"'),
    ("bad", 'parsing time "bad" as "2006-01-02T15:04:05Z07:00": cannot parse "bad" as "2006"'),
    ("0001-01-01T00:00:00+00:01", "timestamp overflow"),
])
def test_what_go_refuses_as_a_timestamp_with_its_words(text, message):
    with pytest.raises(TimeFormatError) as info:
        parse_timestamp(text)
    assert str(info.value) == message
