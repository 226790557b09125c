"""Reporters: one module per output format, each ``render(result, stream, context)``.

A run imports the one it prints with (``reporter``): the others pull in XML, hashing and
package metadata that a text report never needs.
"""
from __future__ import annotations

from typing import Any, Protocol, TextIO

from .context import ReportContext

FORMATS = ("text", "json", "sarif", "github", "junit")

__all__ = ["FORMATS", "ReportContext", "Reporter", "formats", "reporter"]


class Reporter(Protocol):
    """A reporter module."""

    def render(self, result: Any, stream: TextIO, context: ReportContext) -> None: ...


def reporter(name: str) -> Reporter:
    """The reporter of format ``name`` (one of ``FORMATS``), imported now."""
    if name == "text":
        from . import text

        return text
    if name == "json":
        from . import json_report

        return json_report
    if name == "sarif":
        from . import sarif

        return sarif
    if name == "github":
        from . import github

        return github
    if name == "junit":
        from . import junit

        return junit
    raise KeyError(f"no reporter named {name!r}: one of {', '.join(FORMATS)}")


def formats() -> list[str]:
    """The names ``--format`` accepts."""
    return sorted(FORMATS)
