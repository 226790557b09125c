"""meta/v1 Time as the API server decodes it: Go's ``time.Parse(time.RFC3339, text)``.

Go's parser is a little laxer than RFC 3339 (a one-digit hour, a comma before the fraction,
offsets up to 24:60) and a little stricter (upper-case ``T`` and ``Z`` only, no leap second).
"""
from __future__ import annotations

import calendar
import re
from datetime import date, datetime

_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:[.,][0-9]+)?"
    r"(?:Z|[+-]([0-9]{2}):([0-9]{2}))")
EXAMPLE = "2006-01-02T15:04:05Z"


def is_go_rfc3339(value: object) -> bool:
    """Whether the decoder accepts ``value`` for a ``metav1.Time`` field."""
    if isinstance(value, datetime):
        # PyYAML resolved an unquoted timestamp; Kubernetes would parse the original text.
        value = value.isoformat()
    elif isinstance(value, date):
        return False  # a bare date has no time of day
    if not isinstance(value, str):
        return False
    match = _RFC3339.fullmatch(value)
    if not match:
        return False
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    if not 1 <= month <= 12 or not 1 <= day <= _days_in(year, month):
        return False
    if hour > 23 or minute > 59 or second > 59:
        return False
    offset_hour, offset_minute = match.group(7), match.group(8)
    # Go checks offsets with > rather than >= ("some people do write offsets of 24 hours").
    return offset_hour is None or (int(offset_hour) <= 24 and int(offset_minute) <= 60)


def _days_in(year: int, month: int) -> int:
    # calendar.isleap is plain arithmetic, so year 0 (valid in Go) works too.
    return 29 if month == 2 and calendar.isleap(year) else calendar.mdays[month]  # type: ignore[attr-defined]
