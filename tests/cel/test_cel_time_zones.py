"""The time zone argument of CEL's timestamp accessors exactly as cel-go reads it: dralint's
getHours/getDate/... against a reference written from cel-go's ``timeZone`` (common/types/timestamp.go:
a text with a colon is ``strconv.Atoi`` hours and minutes, anything else ``time.LoadLocation``) and
Go's ``time.Time`` field accessors, on generated offsets and instants.
"""
from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dralint.cel.errors import CelRuntimeError
from dralint.cel.lib_std import _ts_getter
from dralint.cel.timefmt import MAX_UNIX, MIN_UNIX
from dralint.cel.values import Timestamp

FIELDS = ["getFullYear", "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getHours",
          "getMinutes", "getSeconds", "getMilliseconds"]


class Refused(Exception):
    pass


def go_atoi(s: str) -> int:
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body or not body.isascii() or not body.isdigit():
        raise Refused("syntax")
    value = int(s)
    if not -(2**63) <= value < 2**63:
        raise Refused("range")
    return value


def go_fixed_offset(zone: str) -> int:
    """cel-go's ``timeZone`` for a text with a colon: the zone's seconds east of UTC (small offsets only)."""
    ind = zone.index(":")
    hr, mi = go_atoi(zone[:ind]), go_atoi(zone[ind + 1:])
    offset = hr * 60 - mi if zone[0] == "-" else hr * 60 + mi
    return offset * 60


def go_fields(unix: int, nanos: int, offset: int) -> list[int]:
    """Go's accessors on ``time.Unix(unix, nanos).In(FixedZone("", offset))``, via a proleptic calendar."""
    local = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=unix + offset)
    return [local.year, local.month - 1, local.day, local.day - 1, local.isoweekday() % 7,
            local.timetuple().tm_yday - 1, local.hour, local.minute, local.second, nanos // 10**6]


def ours(ts: Timestamp, zone: str) -> list[int]:
    try:
        return [_ts_getter(f)(ts, zone) for f in FIELDS]
    except CelRuntimeError:
        raise Refused("dralint") from None


offset_part = st.one_of(st.integers(-30, 30).map(str), st.sampled_from(["+05", "-0", "+0", "00", "", "+", "x", "5x",
                                                                        "99999999999999999999", "٣"]))
zone_text = st.builds(lambda h, m: f"{h}:{m}", offset_part, offset_part)
instant = st.integers(MIN_UNIX + 3 * 86400, MAX_UNIX - 3 * 86400)


@settings(max_examples=400, deadline=None)
@given(instant, st.integers(0, 10**9 - 1), zone_text)
@example(0, 0, "-0:30")
@example(0, 0, "1:-30")
@example(0, 0, "+24:00")
@example(0, 0, "-24:59")
def test_fixed_offsets_read_as_cel_go_reads_them(unix, nanos, zone):
    try:
        expected = go_fields(unix, nanos, go_fixed_offset(zone))
    except Refused:
        with pytest.raises(Refused):
            ours(Timestamp(unix * 10**9 + nanos), zone)
        return
    assert ours(Timestamp(unix * 10**9 + nanos), zone) == expected


@pytest.mark.parametrize("text, zone, field, value", [
    ("2024-07-01T12:00:00Z", "America/New_York", "getHours", 8),          # daylight saving time applies
    ("2024-01-01T12:00:00Z", "America/New_York", "getHours", 7),
    ("2024-03-31T01:30:00Z", "Europe/Berlin", "getHours", 3),
    ("2024-01-01T00:00:00Z", "", "getHours", 0),
    ("2024-01-01T00:00:00Z", "UTC", "getDate", 1),
    ("2024-01-01T00:00:00Z", "-0:30", "getFullYear", 2023),
    ("9999-12-31T23:00:00Z", "+05:00", "getFullYear", 10000),              # Go computes past year 9999
    ("9999-12-31T23:00:00Z", "Pacific/Kiritimati", "getFullYear", 10000),
    ("0001-01-01T00:00:00Z", "-01:00", "getFullYear", 0),
    ("2024-01-01T00:00:00Z", "+100:00", "getDayOfMonth", 4),
    ("2024-01-07T00:00:00Z", "UTC", "getDayOfWeek", 0),
    ("2024-12-31T00:00:00Z", "UTC", "getDayOfYear", 365),
])
def test_known_zone_fields(text, zone, field, value):
    from dralint.cel.timefmt import parse_timestamp

    assert _ts_getter(field)(parse_timestamp(text), zone) == value


@pytest.mark.parametrize("zone, message", [
    ("x:1", 'strconv.Atoi: parsing "x": invalid syntax'),
    ("1:", 'strconv.Atoi: parsing "": invalid syntax'),
    ("99999999999999999999:0", 'strconv.Atoi: parsing "99999999999999999999": value out of range'),
    ("999999999999999999999x:0", 'strconv.Atoi: parsing "999999999999999999999x": value out of range'),
    ("9223372036854775808:0", 'strconv.Atoi: parsing "9223372036854775808": value out of range'),
    ("Nope/Zone", "unknown time zone Nope/Zone"),
    ("../etc/passwd", "time: invalid location name"),
    ("/etc/localtime", "time: invalid location name"),
])
def test_zone_errors_in_go_words(zone, message):
    with pytest.raises(CelRuntimeError) as info:
        _ts_getter("getHours")(Timestamp(0), zone)
    assert str(info.value) == message
