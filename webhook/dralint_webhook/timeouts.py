"""How long a review may take: the API server's own timeout for the call, less the way back.

The API server calls a webhook with ``?timeout=<duration>`` (the configuration's
``timeoutSeconds``, written as a Go duration such as ``5s`` or ``1m0s``) and gives up on the call
when it runs out; a call given up on counts as failed, and under ``failurePolicy: Ignore`` the
object is admitted unjudged. So a review must be answered before that, with room for the answer to
travel: whatever is not judged by then is answered by the webhook itself (per ``onInternalError``,
the organisation rules' denial standing).
"""
from __future__ import annotations

import re
from urllib.parse import parse_qs

DEFAULT_SECONDS = 5.0
"""The webhook configuration's timeoutSeconds when the caller names none (manifests.TIMEOUT_SECONDS)."""

MAX_SECONDS = 30.0
"""The largest timeoutSeconds Kubernetes allows."""

ANSWER_SHARE = 0.2
"""Of the API server's timeout, the part kept for writing the answer and its trip back (1 s of 5 s)."""

ANSWER_MIN_SECONDS = 0.3

_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def go_duration(text: str) -> float | None:
    """Seconds of a Go duration (``5s``, ``1m0s``, ``1.5s``, ``500ms``); None when it is not one."""
    text = text.strip()
    if text in ("0", "+0", "-0"):
        return 0.0
    if not text or text[0] == "-":
        return None
    text = text.lstrip("+")
    total, pos = 0.0, 0
    while pos < len(text):
        match = _PART.match(text, pos)
        if match is None:
            return None
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    return total if pos else None


def call_timeout(query: str, default: float = DEFAULT_SECONDS) -> float:
    """The API server's timeout for this call, from the request's query string (``timeout=5s``)."""
    values = parse_qs(query, keep_blank_values=True).get("timeout")
    seconds = go_duration(values[-1]) if values else None
    if seconds is None or seconds <= 0:
        return default
    return min(seconds, MAX_SECONDS)


def review_deadline(started: float, query: str, default: float = DEFAULT_SECONDS) -> float:
    """When (``time.monotonic()``) the answer to a call that began at ``started`` must be on its way."""
    timeout = call_timeout(query, default)
    # Never less than half the timeout: a 1 s call still gets some judging.
    return started + max(timeout / 2, timeout - max(ANSWER_MIN_SECONDS, timeout * ANSWER_SHARE))
