"""The review deadline follows the API server's ``?timeout=`` for the call."""
from __future__ import annotations

import pytest

from dralint_webhook.timeouts import DEFAULT_SECONDS, MAX_SECONDS, call_timeout, go_duration, review_deadline


@pytest.mark.parametrize("text, seconds", [
    ("5s", 5.0), ("2s", 2.0), ("1m0s", 60.0), ("1.5s", 1.5), ("500ms", 0.5), ("1h2m3s", 3723.0), ("0", 0.0),
    ("250us", 0.00025), ("+3s", 3.0), (".5s", 0.5),
])
def test_go_durations_are_read(text, seconds):
    assert go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "s", "-1s", "5x", "1s2", "abc", "1e3s"])
def test_what_is_no_go_duration_is_none(text):
    assert go_duration(text) is None


def test_the_call_timeout_comes_from_the_query_else_the_default():
    assert call_timeout("timeout=2s") == 2.0
    assert call_timeout("") == DEFAULT_SECONDS
    assert call_timeout("timeout=nonsense") == DEFAULT_SECONDS
    assert call_timeout("timeout=0s") == DEFAULT_SECONDS
    assert call_timeout("timeout=10m") == MAX_SECONDS


def test_the_deadline_leaves_room_for_the_answer():
    assert review_deadline(100.0, "timeout=5s") == pytest.approx(104.0)     # the webhook's own 5 s: 4 s to judge
    assert review_deadline(100.0, "timeout=2s") == pytest.approx(101.6)     # the controllers overlay's 2 s
    assert review_deadline(100.0, "timeout=1s") == pytest.approx(100.7)
    assert review_deadline(100.0, "timeout=30s") == pytest.approx(124.0)
    assert review_deadline(100.0, "timeout=200ms") == pytest.approx(100.1)  # never less than half of it
